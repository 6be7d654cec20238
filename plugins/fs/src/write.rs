//! `write_file`: create or replace a file, atomically; and the atomic write
//! itself, shared with `edit_file`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::{Context, JsonSchema, Output, ToolError, codes};

use crate::fresh::Settings;
use crate::new_file::NewFile;
use crate::paths::resolve_for_write_with;

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Create a file or replace its whole content. Parent directories are created as \
needed. The write is atomic (a temporary file renamed over the target) and an existing file keeps its permission \
bits. To replace an existing file, pass its sha256 from read_file as `expected_sha256`: if the file changed since, \
nothing is written (`stale_file`, with the current hash). Refuses symlinks (`is_symlink`: name the real file) unless \
the policy follows links, directories (`is_directory`), anything inside .git and the toolhost configuration \
(`forbidden_path`). Prefer edit_file to change part of an existing file. Paths are relative to the work directory; \
messages show a name with control or unusual characters double-quoted with backslash escapes.";

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to write: relative to the work directory, or absolute inside it.
    pub path: String,
    /// The complete new content of the file, written exactly as given.
    pub content: String,
    /// The sha256 of the existing file as read_file showed it: when it changed since, nothing is written.
    #[serde(default)]
    pub expected_sha256: String,
}

/// Run `write_file`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    run_with(args, ctx, Settings::from_env())
}

/// [`run`] with the policy's `settings`.
pub fn run_with(args: Args, ctx: &Context, settings: Settings) -> Result<Output, ToolError> {
    let expected = crate::fresh::parse_hash("expected_sha256", &args.expected_sha256)?;
    let path = resolve_for_write_with(ctx, &args.path, settings.follow_links)?;
    let shown = ctx.show(&path);
    if args.path.ends_with('/') {
        return Err(ToolError::new(
            codes::IS_DIRECTORY,
            format!("{} names a directory; give a file path", args.path),
        ));
    }
    if expected.is_some() || settings.require_fresh {
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {
                let current = fs::read(&path).map_err(|e| ctx.io_error(&e, &path))?;
                crate::fresh::check(
                    &shown,
                    expected.as_deref(),
                    &current,
                    Some(args.content.as_bytes()),
                    settings,
                )?;
            }
            // A directory or special file is refused by the write itself.
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(ctx.io_error(&e, &path)),
        }
    }
    let previous = write_atomic(ctx, &path, args.content.as_bytes())?;
    let bytes = args.content.len();
    let content = match previous {
        None => format!("Created {shown} ({bytes} bytes)."),
        Some(old) => format!("Overwrote {shown} ({bytes} bytes, was {old} bytes)."),
    };
    Ok(Output::text(content).with_metadata(json!({
        "path": ctx.display(&path),
        "bytes": bytes,
        "sha256": crate::sha256_hex(args.content.as_bytes()),
        "created": previous.is_none(),
    })))
}

/// Write `bytes` to `path` atomically: into a temporary file next to it
/// (`.NAME.toolhost-tmp-CALLID`), flushed, given the old file's permission
/// bits when it existed, then renamed over `path`. Creates the parent
/// directories. Returns the old file's size, or `None` when it was created.
/// The temporary file never survives, whatever fails.
///
/// WASI 0.2 has no `chmod`: the permission bits are copied by the host
/// (`toolhost_guest::fs::copy_permissions`), confined to the work dir.
pub fn write_atomic(ctx: &Context, path: &Path, bytes: &[u8]) -> Result<Option<u64>, ToolError> {
    let shown = ctx.show(path);
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(ToolError::new(codes::IS_DIRECTORY, format!("{shown} is a directory")));
    };
    let old = match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::new(
                codes::IS_DIRECTORY,
                format!("{shown} is a directory; give a file path"),
            ));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(ToolError::invalid_args(format!("{shown} is not a regular file")));
        }
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(ctx.io_error(&e, path)),
    };
    fs::create_dir_all(parent).map_err(|e| ctx.io_error(&e, parent))?;

    let (mut file, temp) =
        create_temp(parent, &name.to_string_lossy(), ctx.call_id()).map_err(|e| ctx.io_error(&e, parent))?;
    let result = (|| {
        file.write_all(bytes)?;
        ignore_unsupported(file.sync_all())?;
        drop(file);
        if old.is_some() {
            toolhost_guest::fs::copy_permissions(path, &temp.0)?;
        }
        fs::rename(&temp.0, path)?;
        // The rename is durable once the directory is (best effort: not every
        // filesystem lets a directory be synced).
        if let Ok(dir) = fs::File::open(parent) {
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    match result {
        Ok(()) => {
            temp.disarm();
            Ok(old.map(|m| m.len()))
        }
        Err(e) => Err(ctx.io_error(&e, path)),
    }
}

/// A temporary file that is removed when dropped, unless disarmed.
struct TempGuard(PathBuf);

impl TempGuard {
    fn disarm(self) {
        std::mem::forget(self);
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Create a new temporary file in `dir` for the file `name`.
fn create_temp(dir: &Path, name: &str, call_id: &str) -> io::Result<(NewFile, TempGuard)> {
    let id: String =
        call_id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').take(40).collect();
    let (stem, _) = crate::truncate_at_char(name, 100);
    let mut last = None;
    for attempt in 0..16 {
        let suffix = if attempt == 0 { String::new() } else { format!("-{attempt}") };
        let temp = dir.join(format!(".{stem}.toolhost-tmp-{id}{suffix}"));
        match NewFile::create_new(&temp) {
            Ok(file) => return Ok((file, TempGuard(temp))),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("could not create a temporary file")))
}

fn ignore_unsupported(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::Unsupported => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Context) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context::new("call-7", Some(dir.path().to_path_buf()));
        (dir, ctx)
    }

    fn write(ctx: &Context, path: &str, content: &str) -> Result<Output, ToolError> {
        let args = Args { path: path.into(), content: content.into(), expected_sha256: String::new() };
        run_with(args, ctx, FOLLOW)
    }

    const FOLLOW: Settings = Settings { require_fresh: false, follow_links: true };

    fn write_fresh(
        ctx: &Context,
        content: &str,
        hash: &str,
        settings: Settings,
    ) -> Result<Output, ToolError> {
        let args = Args { path: "f.txt".into(), content: content.into(), expected_sha256: hash.into() };
        run_with(args, ctx, settings)
    }

    #[test]
    fn a_stale_hash_writes_nothing() {
        let (dir, ctx) = setup();
        let f = dir.path().join("f.txt");
        fs::write(&f, "one\ntwo\n").unwrap();
        let fresh = crate::sha256_hex(b"one\ntwo\n");
        let err = write_fresh(&ctx, "x\n", &crate::sha256_hex(b"older"), Settings::default()).unwrap_err();
        assert_eq!(err.code, codes::STALE_FILE);
        assert!(
            err.message.contains(&fresh) && err.message.contains("add 1 and remove 2"),
            "{}",
            err.message
        );
        assert_eq!(fs::read_to_string(&f).unwrap(), "one\ntwo\n");
        write_fresh(&ctx, "x\n", &fresh.to_uppercase(), Settings::default()).unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "x\n");
        let err = write_fresh(&ctx, "y", "1234", Settings::default()).unwrap_err();
        assert_eq!(err.code, codes::INVALID_ARGS);
        assert!(err.message.starts_with("expected_sha256 must be"), "{}", err.message);
    }

    #[test]
    fn require_fresh_needs_the_hash_for_existing_files_only() {
        let (dir, ctx) = setup();
        let strict = Settings { require_fresh: true, follow_links: false };
        write_fresh(&ctx, "new", "", strict).unwrap();
        let err = write_fresh(&ctx, "again", "", strict).unwrap_err();
        assert_eq!(err.code, codes::STALE_FILE);
        assert!(err.message.contains("read it first"), "{}", err.message);
        assert_eq!(fs::read_to_string(dir.path().join("f.txt")).unwrap(), "new");
        write_fresh(&ctx, "again", &crate::sha256_hex(b"new"), strict).unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("f.txt")).unwrap(), "again");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_refused_by_default() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("real.txt"), "old").unwrap();
        std::os::unix::fs::symlink("real.txt", dir.path().join("f.txt")).unwrap();
        let err = write_fresh(&ctx, "new", "", Settings::default()).unwrap_err();
        assert_eq!(err.code, codes::IS_SYMLINK);
        assert_eq!(fs::read_to_string(dir.path().join("real.txt")).unwrap(), "old");
    }

    /// The write after the check renames over the path: a symlink swapped in
    /// after the check is replaced, never written through.
    #[cfg(unix)]
    #[test]
    fn a_symlink_swapped_in_after_the_check_is_replaced_not_followed() {
        let (dir, ctx) = setup();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let target = dir.path().join("f.txt");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        write_atomic(&ctx, &target, b"new").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(fs::symlink_metadata(&target).unwrap().is_file());
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }

    fn dir_names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn creates_with_parents_then_overwrites() {
        let (dir, ctx) = setup();
        let out = write(&ctx, "a/b/c.txt", "hello\n").unwrap();
        assert_eq!(out.content, "Created a/b/c.txt (6 bytes).");
        let meta = out.metadata.unwrap();
        assert_eq!(meta["created"], true);
        assert_eq!(meta["bytes"], 6);
        assert_eq!(meta["path"], "a/b/c.txt");
        assert_eq!(meta["sha256"], crate::sha256_hex(b"hello\n"));
        assert_eq!(fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(), "hello\n");

        let out = write(&ctx, "a/b/c.txt", "bye").unwrap();
        assert_eq!(out.content, "Overwrote a/b/c.txt (3 bytes, was 6 bytes).");
        assert_eq!(out.metadata.unwrap()["created"], false);
        assert_eq!(fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(), "bye");
        // No temporary file is left behind.
        assert_eq!(dir_names(&dir.path().join("a/b")), ["c.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn keeps_permission_bits() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, ctx) = setup();
        let script = dir.path().join("run.sh");
        fs::write(&script, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o751)).unwrap();
        write(&ctx, "run.sh", "#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(fs::metadata(&script).unwrap().permissions().mode() & 0o7777, 0o751);
        assert_eq!(fs::read_to_string(&script).unwrap(), "#!/bin/sh\necho hi\n");
    }

    #[cfg(unix)]
    #[test]
    fn writes_through_a_symlink_when_the_policy_follows_links() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("real.txt"), "old").unwrap();
        std::os::unix::fs::symlink("real.txt", dir.path().join("link.txt")).unwrap();
        let out = write(&ctx, "link.txt", "new").unwrap();
        assert_eq!(out.metadata.unwrap()["path"], "real.txt");
        assert!(fs::symlink_metadata(dir.path().join("link.txt")).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(dir.path().join("real.txt")).unwrap(), "new");
    }

    #[cfg(unix)]
    #[test]
    fn messages_quote_the_file_found_through_a_symlink() {
        let (dir, ctx) = setup();
        std::os::unix::fs::symlink("real\x1b]0;pwned\x07.txt", dir.path().join("link.txt")).unwrap();
        let out = write(&ctx, "link.txt", "x").unwrap();
        assert_eq!(out.content, "Created \"real\\x1b]0;pwned\\x07.txt\" (1 bytes).");
        assert_eq!(out.metadata.unwrap()["path"], "real\x1b]0;pwned\x07.txt");
        fs::create_dir(dir.path().join("d\r")).unwrap();
        let err = write(&ctx, "d\r", "x").unwrap_err();
        assert_eq!(err.message, "\"d\\r\" is a directory; give a file path");
    }

    #[test]
    fn refuses_directories() {
        let (dir, ctx) = setup();
        fs::create_dir(dir.path().join("d")).unwrap();
        assert_eq!(write(&ctx, "d", "x").unwrap_err().code, codes::IS_DIRECTORY);
        assert_eq!(write(&ctx, ".", "x").unwrap_err().code, codes::IS_DIRECTORY);
        assert_eq!(write(&ctx, "new/", "x").unwrap_err().code, codes::IS_DIRECTORY);
        assert_eq!(dir_names(dir.path()), ["d"]);
        assert_eq!(dir_names(&dir.path().join("d")), Vec::<String>::new());
    }

    #[test]
    fn refuses_forbidden_and_escaping_paths() {
        let (dir, ctx) = setup();
        for p in [".git/config", "toolhost.toml", ".toolhost/x.toml"] {
            assert_eq!(write(&ctx, p, "x").unwrap_err().code, codes::FORBIDDEN_PATH, "{p}");
        }
        assert_eq!(write(&ctx, "../x", "x").unwrap_err().code, codes::PATH_ESCAPE);
        assert!(dir_names(dir.path()).is_empty(), "nothing was created");
    }

    #[test]
    fn a_file_in_the_parent_chain_is_an_error() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("f"), "").unwrap();
        let err = write(&ctx, "f/x.txt", "x").unwrap_err();
        assert_eq!(err.code, codes::IO_ERROR);
        assert!(err.message.starts_with('f'), "{}", err.message);
    }

    #[test]
    fn temp_names_avoid_collisions() {
        let (dir, _ctx) = setup();
        let (_f1, g1) = create_temp(dir.path(), "x.txt", "id/../../9").unwrap();
        let (_f2, g2) = create_temp(dir.path(), "x.txt", "id/../../9").unwrap();
        assert_eq!(g1.0, dir.path().join(".x.txt.toolhost-tmp-id9"));
        assert_eq!(g2.0, dir.path().join(".x.txt.toolhost-tmp-id9-1"));
        drop((g1, g2));
        assert!(dir_names(dir.path()).is_empty(), "guards remove their files");
    }
}
