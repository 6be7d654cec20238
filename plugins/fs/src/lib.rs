//! The builtin filesystem tools of toolhost: `read_file`, `write_file`,
//! `edit_file`, `move_file`, `list_dir`, `find_files`, `grep_files`, `disk_usage` and
//! `tree`.
//!
//! Every path the model passes is resolved inside the work directory with
//! [`Context::resolve`]; the WASI sandbox (a preopen of the work dir) is the
//! real boundary, the lexical check only names the problem. Paths shown to
//! the model are relative to the work dir, and every name or path that text
//! shows goes through [`toolhost_guest::quote_name`] ([`Context::show`]): a
//! name with a control or unusual character is double-quoted with backslash
//! escapes, so a hostile file name cannot forge entries or lines, nor reach
//! a terminal. Metadata keeps the exact name (JSON escapes it).
//!
//! A walk never fails for one bad entry ([`walk`]): a name that is not UTF-8
//! reaches the guest either as a read error on that entry (counted, left
//! out) or decoded lossily with U+FFFD (shown quoted as `\u{fffd}`; opening
//! it then fails, which is counted too).
//!
//! Changes to existing files take the sha256 a read gave (`expected_sha256`,
//! see [`fresh`]), and never go through a symlink unless the policy says so.
//!
//! Every error code is one of the shared [`toolhost_guest::codes`] (`edit_file`'s
//! `old_string_not_found`, `old_string_not_unique` and `no_op_edit` too).
//!
//! [`Context::show`]: toolhost_guest::Context::show

use sha2::{Digest, Sha256};
use toolhost_guest::{Tool, tool};

pub mod du;
pub mod edit;
pub mod filters;
pub mod find;
pub mod fresh;
pub mod grep;
pub mod ignores;
pub mod image;
pub mod list;
pub mod matching;
pub mod mv;
pub mod new_file;
pub mod paths;
pub mod read;
pub mod readdir;
pub mod search;
pub mod tree;
pub mod walk;
pub mod write;

/// The tools of this component, in the order the host lists them.
pub fn tools() -> Vec<Tool> {
    vec![
        tool("read_file", read::DESCRIPTION, read::run).read_only(),
        tool("write_file", write::DESCRIPTION, write::run).destructive(),
        // Replaces text in place: not additive, so destructive (MCP's sense).
        tool("edit_file", edit::DESCRIPTION, edit::run).destructive(),
        tool("move_file", mv::DESCRIPTION, mv::run).destructive(),
        tool("list_dir", list::DESCRIPTION, list::run).read_only(),
        tool("find_files", find::DESCRIPTION, find::run).read_only(),
        tool("grep_files", grep::DESCRIPTION, grep::run).read_only(),
        tool("disk_usage", du::DESCRIPTION, du::run).read_only(),
        tool("tree", tree::DESCRIPTION, tree::run).read_only(),
    ]
}

toolhost_guest::export_tools!(tools);

/// The default `path` argument: the work directory.
pub(crate) fn dot() -> String {
    ".".to_string()
}

/// `value` when it is in `1..=max`, else `invalid_args` naming the argument.
pub(crate) fn in_range(name: &str, value: usize, max: usize) -> Result<usize, toolhost_guest::ToolError> {
    if (1..=max).contains(&value) {
        Ok(value)
    } else {
        Err(toolhost_guest::ToolError::invalid_args(format!(
            "{name} must be between 1 and {max}, not {value}"
        )))
    }
}

/// The directory `path` names, resolved in the work dir, and how it is
/// shown: `not_found`, `path_escape` or `not_a_directory` otherwise.
pub(crate) fn resolve_dir(
    ctx: &toolhost_guest::Context,
    path: &str,
) -> Result<(std::path::PathBuf, String), toolhost_guest::ToolError> {
    resolve_dir_saying(ctx, path, |shown, _| format!("{shown} is not a directory"))
}

/// [`resolve_dir`], saying what `why` makes of the path as shown and what it is
/// when it is not a directory.
pub(crate) fn resolve_dir_saying(
    ctx: &toolhost_guest::Context,
    path: &str,
    why: impl FnOnce(&str, &std::fs::Metadata) -> String,
) -> Result<(std::path::PathBuf, String), toolhost_guest::ToolError> {
    let root = ctx.resolve(path)?;
    let shown = ctx.show(&root);
    let meta = std::fs::metadata(&root).map_err(|e| ctx.io_error(&e, &root))?;
    if !meta.is_dir() {
        return Err(toolhost_guest::ToolError::new(
            toolhost_guest::codes::NOT_A_DIRECTORY,
            why(&shown, &meta),
        ));
    }
    Ok((root, shown))
}

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `n` bytes for a human: `512 B`, `1.5 KiB`, `3.2 MiB`.
pub(crate) fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    // Precision is irrelevant here: this is only for display.
    #[allow(clippy::cast_precision_loss)]
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `n` and the noun for it: `1 entry`, `2 entries`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Cut `line` to at most `max` bytes at a character boundary; true when it
/// was cut.
pub(crate) fn truncate_at_char(line: &str, max: usize) -> (&str, bool) {
    if line.len() <= max {
        return (line, false);
    }
    (&line[..line.floor_char_boundary(max)], true)
}

/// A fresh work dir and a context for a call in it (the modules' unit tests).
#[cfg(test)]
pub(crate) fn test_work_dir() -> (tempfile::TempDir, toolhost_guest::Context) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = toolhost_guest::Context::new("t", Some(dir.path().to_path_buf()));
    (dir, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_for_humans() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MiB");
    }

    #[test]
    fn counts_with_nouns() {
        assert_eq!(count(1, "entry", "entries"), "1 entry");
        assert_eq!(
            (count(0, "file", "files"), count(2, "file", "files")),
            ("0 files".into(), "2 files".into())
        );
    }

    #[test]
    fn truncates_on_char_boundary() {
        assert_eq!(truncate_at_char("héllo", 2), ("h", true));
        assert_eq!(truncate_at_char("héllo", 3), ("hé", true));
        assert_eq!(truncate_at_char("abc", 3), ("abc", false));
    }

    #[test]
    fn sha256_is_hex() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn nine_tools() {
        assert_eq!(tools().len(), 9);
    }

    /// Every property has one plain `type` (the host coerces by it) and a
    /// description (the model reads it); unknown fields are refused.
    #[test]
    fn schemas_type_and_describe_every_property() {
        use toolhost_guest::schemars::schema_for;
        let schemas = [
            ("read_file", schema_for!(read::Args)),
            ("write_file", schema_for!(write::Args)),
            ("edit_file", schema_for!(edit::Args)),
            ("move_file", schema_for!(mv::Args)),
            ("list_dir", schema_for!(list::Args)),
            ("find_files", schema_for!(find::Args)),
            ("grep_files", schema_for!(grep::Args)),
            ("disk_usage", schema_for!(du::Args)),
            ("tree", schema_for!(tree::Args)),
        ];
        for (tool, schema) in schemas {
            let schema = schema.to_value();
            toolhost_guest::check_schema(tool, &schema).unwrap();
            assert!(!schema["properties"].as_object().unwrap().is_empty(), "{tool}");
        }
    }
}
