//! What `toolhost add` shows and writes about an entry already in the policy file:
//! the entry `plugins.NAME` as it stands, a line diff of old against new when `add`
//! replaces it, and a component's `source` relative to the policy file's directory.

use std::path::{Component, Path, PathBuf};

/// The entry `plugins.NAME` of the policy file at `path` as TOML text (`None`: no
/// such file or entry, or a file that does not parse).
pub(crate) fn entry_text(path: &Path, name: &str) -> Option<String> {
    let text = toolhost::hostfs::read_text(path, toolhost::policy::MAX_POLICY_BYTES).ok()??;
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    let entry = doc.get("plugins")?.as_table_like()?.get(name)?.clone();
    let mut plugins = toml_edit::Table::new();
    plugins.set_implicit(true);
    plugins.insert(name, entry);
    let mut alone = toml_edit::DocumentMut::new();
    alone.insert("plugins", toml_edit::Item::Table(plugins));
    Some(alone.to_string())
}

/// `old` against `new`, line by line: `  ` kept, `- ` removed, `+ ` added (a longest
/// common subsequence; entries are a few dozen lines).
pub(crate) fn line_diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out += &format!("  {}\n", a[i]);
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out += &format!("- {}\n", a[i]);
            i += 1;
        } else {
            out += &format!("+ {}\n", b[j]);
            j += 1;
        }
    }
    out
}

/// `file` relative to `dir` (both canonical), with `..` steps when it lies outside
/// `dir` but they share a directory below `/`; `None` when they share only the root.
pub(crate) fn relative_to(dir: &Path, file: &Path) -> Option<PathBuf> {
    let (d, f): (Vec<Component>, Vec<Component>) = (dir.components().collect(), file.components().collect());
    let common = d.iter().zip(&f).take_while(|(x, y)| x == y).count();
    let below_root = f.iter().take(common).any(|c| matches!(c, Component::Normal(_)));
    if !below_root {
        return None;
    }
    let mut rel = PathBuf::new();
    for _ in common..d.len() {
        rel.push("..");
    }
    for part in &f[common..] {
        rel.push(part.as_os_str());
    }
    Some(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_keeps_what_is_shared_and_marks_the_rest() {
        let old = "[plugins.a]\nsource = \"a.wasm\"\nsha256 = \"11\"\nenv = []\n";
        let new = "[plugins.a]\nsource = \"a.wasm\"\nsha256 = \"22\"\nenv = [\"LANG\"]\n";
        assert_eq!(
            line_diff(old, new),
            "  [plugins.a]\n  source = \"a.wasm\"\n- sha256 = \"11\"\n- env = []\n+ sha256 = \"22\"\n+ env = [\"LANG\"]\n"
        );
        assert_eq!(line_diff("x\n", "x\n"), "  x\n");
    }

    #[test]
    fn sources_are_relative_below_a_shared_dir() {
        let rel = |d: &str, f: &str| relative_to(Path::new(d), Path::new(f));
        assert_eq!(rel("/home/me/proj", "/home/me/proj/tools/t.wasm"), Some("tools/t.wasm".into()));
        assert_eq!(rel("/home/me/proj", "/home/me/shared/t.wasm"), Some("../shared/t.wasm".into()));
        assert_eq!(rel("/home/me/proj", "/opt/t.wasm"), None);
    }
}
