//! `.gitignore` and `.ignore` files for the guest walk (`list_dir`, `tree`):
//! the rules are [`toolhost_search::rules`]' (the host's search applies the
//! same), read here through the WASI view by path. The ignore files of the
//! walked root's ancestors up to the work directory apply too ([`above`]), and
//! under them all the repository's own `.git/info/exclude` at the work
//! directory ([`EXCLUDE_FILE`]); an ignored directory is not entered, so
//! nothing inside it can be re-included. Each file is read up to
//! [`MAX_IGNORE_FILE`] bytes.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolhost_search::rules::with_files;
pub use toolhost_search::rules::{EXCLUDE_FILE, IGNORE_FILES, MAX_IGNORE_FILE, Rules, is_ignored};

/// The rules in force in `dir`: `parent`'s, plus those of the ignore files
/// `dir` holds (`present`: the names of its regular files among
/// [`IGNORE_FILES`]). A file that cannot be read adds nothing.
pub fn enter(dir: &Path, parent: Option<Arc<Rules>>, present: &[&str]) -> Option<Arc<Rules>> {
    let files: Vec<(PathBuf, Vec<u8>)> = IGNORE_FILES
        .iter()
        .filter(|n| present.contains(n))
        .filter_map(|name| read(&dir.join(name)).map(|bytes| (dir.join(name), bytes)))
        .collect();
    with_files(dir, parent, &files)
}

/// The first [`MAX_IGNORE_FILE`] bytes of the ignore file `path`, or `None`.
fn read(path: &Path) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    File::open(path).ok()?.take(MAX_IGNORE_FILE).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The rules of `top`'s `.git/info/exclude`, when `.git` is a real directory
/// there and the file a regular one (never through a symlink).
fn exclude(top: &Path) -> Option<Arc<Rules>> {
    let git = top.join(".git");
    let path = top.join(EXCLUDE_FILE);
    let real = |p: &Path, dir: bool| {
        std::fs::symlink_metadata(p).is_ok_and(|m| if dir { m.is_dir() } else { m.is_file() })
    };
    if !real(&git, true) || !real(&git.join("info"), true) || !real(&path, false) {
        return None;
    }
    with_files(top, None, &[(path.clone(), read(&path)?)])
}

/// The rules the ignore files of `root`'s ancestors, from `top` (the work
/// directory) down to `root`'s parent, put in force in `root`, over those of
/// `top`'s `.git/info/exclude`; `None` when `root` is not below `top`.
pub fn above(top: &Path, root: &Path) -> Option<Arc<Rules>> {
    let rel = root.strip_prefix(top).ok()?;
    let (mut rules, mut dir) = (exclude(top), top.to_path_buf());
    for part in rel.components() {
        let present: Vec<&str> = IGNORE_FILES
            .into_iter()
            .filter(|n| std::fs::symlink_metadata(dir.join(n)).is_ok_and(|m| m.is_file()))
            .collect();
        rules = enter(&dir, rules, &present);
        dir.push(part);
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(dir: &Path, gitignore: &str, ignore: Option<&str>) -> Option<Arc<Rules>> {
        std::fs::write(dir.join(".gitignore"), gitignore).unwrap();
        let mut present = vec![".gitignore"];
        if let Some(text) = ignore {
            std::fs::write(dir.join(".ignore"), text).unwrap();
            present.push(".ignore");
        }
        enter(dir, None, &present)
    }

    #[test]
    fn gitignore_semantics() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let rules = rules(r, "# comment\n*.log\n!keep.log\n/build\nout/\n[bad\n", None);
        let ignored = |p: &str, is_dir| is_ignored(rules.as_deref(), &r.join(p), is_dir);
        assert!(ignored("x.log", false) && ignored("a/b/y.log", false));
        assert!(!ignored("keep.log", false), "re-included");
        assert!(ignored("build", true) && !ignored("a/build", true), "anchored");
        assert!(ignored("out", true) && !ignored("out", false), "directories only");
        assert!(!ignored("src.rs", false) && !ignored("# comment", false));
    }

    #[test]
    fn nested_rules_apply_below_and_override() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let top = rules(r, "*.tmp\n", None);
        std::fs::create_dir(r.join("sub")).unwrap();
        std::fs::write(r.join("sub/.gitignore"), "!wanted.tmp\n*.rs\n").unwrap();
        let sub = enter(&r.join("sub"), top.clone(), &[".gitignore"]);
        assert!(is_ignored(sub.as_deref(), &r.join("sub/x.tmp"), false));
        assert!(!is_ignored(sub.as_deref(), &r.join("sub/wanted.tmp"), false));
        assert!(is_ignored(sub.as_deref(), &r.join("sub/a.rs"), false));
        assert!(!is_ignored(top.as_deref(), &r.join("a.rs"), false), "not above its dir");
    }

    #[test]
    fn dot_ignore_wins_and_unreadable_files_add_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let rules = rules(r, "*.md\n", Some("!README.md\n"));
        assert!(!is_ignored(rules.as_deref(), &r.join("README.md"), false));
        assert!(is_ignored(rules.as_deref(), &r.join("other.md"), false));
        assert!(enter(&r.join("missing"), None, &[".gitignore"]).is_none());
        assert!(enter(r, None, &[]).is_none());
    }

    #[test]
    fn ancestors_rules_apply_below_them() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("a/b")).unwrap();
        std::fs::write(r.join(".gitignore"), "*.log\n").unwrap();
        std::fs::write(r.join("a/.ignore"), "*.tmp\n").unwrap();
        let rules = above(r, &r.join("a/b"));
        assert!(is_ignored(rules.as_deref(), &r.join("a/b/x.log"), false));
        assert!(is_ignored(rules.as_deref(), &r.join("a/b/x.tmp"), false));
        assert!(above(r, r).is_none(), "the root's own files are read by the walk");
        assert!(above(&r.join("a"), r).is_none(), "not below the work dir");
    }

    #[test]
    fn the_repositorys_exclude_file_applies_under_the_ignore_files() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join(".git/info")).unwrap();
        std::fs::write(top.join(".git/info/exclude"), "*.local\nscratch/\n").unwrap();
        std::fs::create_dir(top.join("sub")).unwrap();
        std::fs::write(top.join("sub/.gitignore"), "!keep.local\n").unwrap();
        let rules = above(top, &top.join("sub"));
        assert!(is_ignored(rules.as_deref(), &top.join("sub/a.local"), false));
        assert!(is_ignored(rules.as_deref(), &top.join("scratch"), true));
        let sub = enter(&top.join("sub"), rules, &[".gitignore"]);
        assert!(
            !is_ignored(sub.as_deref(), &top.join("sub/keep.local"), false),
            "a .gitignore decides over it"
        );
        // At the top itself too, and never through a symlinked .git.
        assert!(is_ignored(above(top, top).as_deref(), &top.join("x.local"), false));
        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(top.join(".git"), other.path().join(".git")).unwrap();
        assert!(above(other.path(), other.path()).is_none());
    }
}
