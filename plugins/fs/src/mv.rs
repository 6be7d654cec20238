//! `move_file`: move or rename a file (or, with `recursive`, a directory)
//! inside the work dir, never over anything that exists.
//!
//! A file moves as a hard link at the destination, then the source unlinked:
//! creating the link fails when the destination exists, so the check and
//! the move are one step and nothing is ever overwritten (WASI 0.2's rename
//! replaces its target, and has no "no-replace" flag). When unlinking the
//! source fails, the new link is removed again. A directory moves by rename
//! once the destination is found absent (a rename never replaces a non-empty
//! directory). A directory holding a `.git` is never moved.

use std::fs;
use std::io;
use std::path::Path;

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::{Context, JsonSchema, Output, ToolError, codes};

use crate::fresh::Settings;
use crate::paths::resolve_for_write_with;

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Move or rename a file inside the work directory. Never overwrites: a `destination` \
that exists is refused (`already_exists`). Parent directories of the destination are created. A directory is \
moved only with `recursive: true` (and never one holding a .git). Pass the file's sha256 from read_file as \
`expected_sha256`: if it changed since, nothing moves (`stale_file`). Refuses symlinks (`is_symlink`), .git and the \
toolhost configuration (`forbidden_path`). Paths are relative to the work directory.";

/// Entries looked at, at most, when checking a directory for a `.git`.
const MAX_SCAN: usize = 100_000;

/// Arguments of `move_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file (or directory) to move: relative to the work directory, or absolute inside it.
    pub source: String,
    /// Where it goes; must not exist yet.
    pub destination: String,
    /// The source file's sha256 as read_file showed it: when it changed since, nothing moves.
    #[serde(default)]
    pub expected_sha256: String,
    /// Allow moving a directory with everything in it. Default false.
    #[serde(default)]
    pub recursive: bool,
}

/// Run `move_file`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    run_with(args, ctx, Settings::from_env())
}

/// [`run`] with the policy's `settings`.
pub fn run_with(args: Args, ctx: &Context, settings: Settings) -> Result<Output, ToolError> {
    let expected = crate::fresh::parse_hash("expected_sha256", &args.expected_sha256)?;
    let source = resolve_for_write_with(ctx, &args.source, settings.follow_links)?;
    let destination = resolve_for_write_with(ctx, &args.destination, settings.follow_links)?;
    let (from, to) = (ctx.show(&source), ctx.show(&destination));
    if source == ctx.work_dir()? {
        return Err(ToolError::invalid_args("source is the work directory itself, which cannot move"));
    }
    let meta = fs::symlink_metadata(&source).map_err(|e| ctx.io_error(&e, &source))?;
    if meta.file_type().is_symlink() {
        return Err(ToolError::new(
            codes::IS_SYMLINK,
            format!("{from} is a symlink; move_file moves real files"),
        ));
    }
    match fs::symlink_metadata(&destination) {
        Ok(_) => {
            return Err(ToolError::new(
                codes::ALREADY_EXISTS,
                format!("{to} already exists; move_file never overwrites: pick another destination"),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(ctx.io_error(&e, &destination)),
    }
    if destination.starts_with(&source) {
        return Err(ToolError::invalid_args(format!(
            "{to} is inside {from}: a directory cannot move into itself"
        )));
    }
    let mut metadata = json!({"source": ctx.display(&source), "destination": ctx.display(&destination)});
    if meta.is_dir() {
        if !args.recursive {
            return Err(ToolError::new(
                codes::IS_DIRECTORY,
                format!("{from} is a directory; pass recursive: true to move it with everything in it"),
            ));
        }
        if expected.is_some() {
            return Err(ToolError::invalid_args(format!(
                "expected_sha256 is a file's hash, and {from} is a directory: leave it out"
            )));
        }
        if let Some(git) = find_git(&source) {
            return Err(ToolError::forbidden_path(
                ctx.show(&git),
                "a directory holding a .git is never moved by the tools; use git or move it yourself",
            ));
        }
        make_parent(ctx, &destination)?;
        fs::rename(&source, &destination).map_err(|e| ctx.io_error(&e, &source))?;
        metadata["kind"] = json!("directory");
    } else if meta.is_file() {
        if expected.is_some() || settings.require_fresh {
            let current = fs::read(&source).map_err(|e| ctx.io_error(&e, &source))?;
            crate::fresh::check(&from, expected.as_deref(), &current, None, settings)?;
            metadata["sha256"] = json!(crate::sha256_hex(&current));
        }
        make_parent(ctx, &destination)?;
        move_file(&source, &destination).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => ToolError::new(
                codes::ALREADY_EXISTS,
                format!("{to} already exists; move_file never overwrites: pick another destination"),
            ),
            _ => ctx.io_error(&e, &source),
        })?;
        metadata["kind"] = json!("file");
    } else {
        return Err(ToolError::invalid_args(format!("{from} is not a regular file or a directory")));
    }
    Ok(Output::text(format!("Moved {from} to {to}.")).with_metadata(metadata))
}

/// Link `to` to the file `from` (failing when `to` exists), then unlink
/// `from`; when that fails, unlink `to` again.
fn move_file(from: &Path, to: &Path) -> io::Result<()> {
    fs::hard_link(from, to)?;
    if let Err(e) = fs::remove_file(from) {
        let _ = fs::remove_file(to);
        return Err(e);
    }
    Ok(())
}

/// Create the parent directories of `path`.
fn make_parent(ctx: &Context, path: &Path) -> Result<(), ToolError> {
    match path.parent() {
        Some(parent) => fs::create_dir_all(parent).map_err(|e| ctx.io_error(&e, parent)),
        None => Ok(()),
    }
}

/// A `.git` entry at any depth of the directory `dir` (symlinks not
/// followed), or `dir` itself when it holds more than [`MAX_SCAN`] entries
/// (too many to be sure).
fn find_git(dir: &Path) -> Option<std::path::PathBuf> {
    let mut pending = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(at) = pending.pop() {
        let Ok(entries) = fs::read_dir(&at) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_SCAN {
                return Some(dir.to_path_buf());
            }
            let path = entry.path();
            if entry.file_name().to_string_lossy().eq_ignore_ascii_case(".git") {
                return Some(path);
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(ctx: &Context, from: &str, to: &str, hash: &str, recursive: bool) -> Result<Output, ToolError> {
        let args =
            Args { source: from.into(), destination: to.into(), expected_sha256: hash.into(), recursive };
        run_with(args, ctx, Settings::default())
    }

    #[test]
    fn moves_a_file_creating_parents() {
        let (dir, ctx) = crate::test_work_dir();
        fs::write(dir.path().join("a.txt"), "a").unwrap();
        let out = mv(&ctx, "a.txt", "x/y/b.txt", &crate::sha256_hex(b"a"), false).unwrap();
        assert_eq!(out.content, "Moved a.txt to x/y/b.txt.");
        let meta = out.metadata.unwrap();
        assert_eq!((meta["kind"].as_str(), meta["destination"].as_str()), (Some("file"), Some("x/y/b.txt")));
        assert!(!dir.path().join("a.txt").exists());
        assert_eq!(fs::read_to_string(dir.path().join("x/y/b.txt")).unwrap(), "a");
    }

    #[test]
    fn never_overwrites() {
        let (dir, ctx) = crate::test_work_dir();
        fs::write(dir.path().join("a"), "a").unwrap();
        fs::write(dir.path().join("b"), "b").unwrap();
        fs::create_dir(dir.path().join("d")).unwrap();
        for to in ["b", "d"] {
            assert_eq!(mv(&ctx, "a", to, "", false).unwrap_err().code, codes::ALREADY_EXISTS, "{to}");
        }
        assert_eq!(
            (fs::read(dir.path().join("a")).unwrap(), fs::read(dir.path().join("b")).unwrap()),
            (b"a".to_vec(), b"b".to_vec())
        );
        // The link step itself refuses an existing destination.
        assert_eq!(
            move_file(&dir.path().join("a"), &dir.path().join("b")).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(fs::read(dir.path().join("a")).unwrap(), b"a");
    }

    #[test]
    fn a_stale_hash_moves_nothing() {
        let (dir, ctx) = crate::test_work_dir();
        fs::write(dir.path().join("a"), "now").unwrap();
        let err = mv(&ctx, "a", "b", &crate::sha256_hex(b"then"), false).unwrap_err();
        assert_eq!(err.code, codes::STALE_FILE);
        assert!(err.message.contains(&crate::sha256_hex(b"now")), "{}", err.message);
        assert!(dir.path().join("a").exists() && !dir.path().join("b").exists());
        assert_eq!(mv(&ctx, "a", "b", "12", false).unwrap_err().code, codes::INVALID_ARGS);
        let strict = Settings { require_fresh: true, follow_links: false };
        let args = Args {
            source: "a".into(),
            destination: "b".into(),
            expected_sha256: String::new(),
            recursive: false,
        };
        assert_eq!(run_with(args, &ctx, strict).unwrap_err().code, codes::STALE_FILE);
    }

    #[test]
    fn directories_need_recursive_and_no_git_inside() {
        let (dir, ctx) = crate::test_work_dir();
        fs::create_dir_all(dir.path().join("d/e")).unwrap();
        fs::write(dir.path().join("d/e/f"), "f").unwrap();
        assert_eq!(mv(&ctx, "d", "n", "", false).unwrap_err().code, codes::IS_DIRECTORY);
        assert_eq!(mv(&ctx, "d", "n", &crate::sha256_hex(b""), true).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(mv(&ctx, "d", "d/e/g", "", true).unwrap_err().code, codes::INVALID_ARGS);
        mv(&ctx, "d", "n", "", true).unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("n/e/f")).unwrap(), "f");
        fs::create_dir_all(dir.path().join("repo/sub/.git")).unwrap();
        let err = mv(&ctx, "repo", "elsewhere", "", true).unwrap_err();
        assert_eq!(err.code, codes::FORBIDDEN_PATH);
        assert!(err.message.starts_with("repo/sub/.git"), "{}", err.message);
        assert!(dir.path().join("repo/sub/.git").is_dir());
    }

    #[test]
    fn forbidden_links_and_escapes_are_refused() {
        let (dir, ctx) = crate::test_work_dir();
        fs::write(dir.path().join("a"), "a").unwrap();
        assert_eq!(mv(&ctx, "a", ".git/a", "", false).unwrap_err().code, codes::FORBIDDEN_PATH);
        assert_eq!(mv(&ctx, "a", "toolhost.toml", "", false).unwrap_err().code, codes::FORBIDDEN_PATH);
        assert_eq!(mv(&ctx, "a", "../a", "", false).unwrap_err().code, codes::PATH_ESCAPE);
        assert_eq!(mv(&ctx, "missing", "b", "", false).unwrap_err().code, codes::NOT_FOUND);
        assert_eq!(mv(&ctx, ".", "b", "", true).unwrap_err().code, codes::INVALID_ARGS);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("a", dir.path().join("link")).unwrap();
            assert_eq!(mv(&ctx, "link", "b", "", false).unwrap_err().code, codes::IS_SYMLINK);
        }
        assert!(dir.path().join("a").exists());
    }
}
