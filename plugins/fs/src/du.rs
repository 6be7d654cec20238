//! `disk_usage`: how much each entry of a directory holds, largest first.

use std::fs;

use serde::Deserialize;
use serde_json::json;
use toolhost_guest::{Context, JsonSchema, Output, ToolError, quote_name};

use crate::walk::{Kind, Walk};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Show how much space each entry of a directory takes, largest first: a file's size, \
or for a subdirectory the total of everything below it (every directory is entered, .git, node_modules and target \
included). Sizes are apparent sizes (the files' lengths, not blocks on disk); symlinks are not followed and count as \
0 bytes, and directories themselves count as 0. Each line gives a human-readable size, the exact bytes and the name \
(`/` after a directory, `@` after a symlink); a last `TOTAL` line sums all entries and counts the files and \
directories below. At most `max_entries` entries are listed (default 50); the output says how many more there are. \
The walk stops after 1,000,000 entries and says so (the sizes are then lower bounds). Paths are relative to the \
work directory; names with control or unusual characters are shown double-quoted with backslash escapes, and \
entries that cannot be read are counted.";

/// Default `max_entries`.
pub const DEFAULT_MAX_ENTRIES: usize = 50;
/// Largest `max_entries`.
pub const MAX_ENTRIES: usize = 1000;
/// Entries walked at most, below the directory, before the sums stop.
pub const MAX_WALK: usize = 1_000_000;

/// Arguments of `disk_usage`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The directory whose entries to measure, relative to the work directory. Default ".", the work directory.
    #[serde(default = "crate::dot")]
    pub path: String,
    /// How many entries to list, largest first, 1 to 1000. Default 50.
    #[serde(default = "default_max_entries")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_entries: usize,
}

fn default_max_entries() -> usize {
    DEFAULT_MAX_ENTRIES
}

/// One direct entry of the directory and the bytes it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    /// The entry's name as shown (quoted when unusual), with `/` after a
    /// directory and `@` after a symlink.
    pub name: String,
    /// Apparent bytes: the file's length, or the sum of the files below.
    pub bytes: u64,
}

/// What one walk found.
#[derive(Debug, Default)]
struct Tally {
    entries: Vec<Usage>,
    files: usize,
    dirs: usize,
    /// Files whose size could not be read (counted as 0 bytes).
    unmeasured: usize,
    /// The walk stopped at [`MAX_WALK`].
    stopped: bool,
}

/// Run `disk_usage`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    crate::in_range("max_entries", args.max_entries, MAX_ENTRIES)?;
    let (root, shown) = crate::resolve_dir_saying(ctx, &args.path, |shown, meta| {
        format!(
            "{shown} is a file of {} ({} bytes); disk_usage measures the entries of a directory",
            crate::human_size(meta.len()),
            meta.len()
        )
    })?;
    let mut walk = Walk::everything(&root, usize::MAX).map_err(|e| ctx.io_error(&e, &root))?;
    let mut tally = measure(&mut walk, MAX_WALK);
    tally.entries.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    let total: u64 = tally.entries.iter().map(|u| u.bytes).sum();

    let mut out = format!("{}/\n", shown.trim_end_matches('/'));
    for usage in tally.entries.iter().take(args.max_entries) {
        out.push_str(&row(usage.bytes, &usage.name));
    }
    if tally.entries.is_empty() {
        out.push_str("  (empty directory)\n");
    }
    out.push_str(&row(
        total,
        &format!(
            "TOTAL ({} file{}, {} director{})",
            tally.files,
            if tally.files == 1 { "" } else { "s" },
            tally.dirs,
            if tally.dirs == 1 { "y" } else { "ies" }
        ),
    ));
    let omitted = tally.entries.len().saturating_sub(args.max_entries);
    if omitted > 0 {
        let rest: u64 = tally.entries[args.max_entries..].iter().map(|u| u.bytes).sum();
        out.push_str(&format!(
            "[{omitted} more entries not shown, {} together (limit {}); raise max_entries to see them]\n",
            crate::human_size(rest),
            args.max_entries
        ));
    }
    if tally.stopped {
        out.push_str(&format!(
            "[stopped after {MAX_WALK} entries: the sizes are lower bounds; measure a subdirectory for exact ones]\n"
        ));
    }
    if tally.unmeasured > 0 {
        out.push_str(&format!(
            "[{} could not be read: counted as 0 bytes]\n",
            crate::count(tally.unmeasured, "file", "files")
        ));
    }
    if let Some(note) = walk.note() {
        out.push_str(&note);
        out.push('\n');
    }
    Ok(Output::text(out).with_metadata(json!({
        "path": ctx.display(&root),
        "total_bytes": total,
        "entries": tally.entries.len(),
        "omitted": omitted,
        "files": tally.files,
        "dirs": tally.dirs,
        "stopped": tally.stopped,
        "unreadable_dirs": walk.unreadable(),
        "unreadable_entries": walk.unreadable_entries(),
        "unmeasured_files": tally.unmeasured,
    })))
}

/// Sum the walk's entries under the root's direct entries (the walk is
/// depth-first, so everything deeper belongs to the last entry at depth 1),
/// stopping after `limit` entries.
fn measure(walk: &mut Walk, limit: usize) -> Tally {
    let mut tally = Tally::default();
    for (seen, entry) in walk.enumerate() {
        if seen == limit {
            tally.stopped = true;
            break;
        }
        let bytes = match entry.kind {
            Kind::File => {
                tally.files += 1;
                fs::symlink_metadata(&entry.path).map(|m| m.len()).unwrap_or_else(|_| {
                    tally.unmeasured += 1;
                    0
                })
            }
            Kind::Dir => {
                tally.dirs += 1;
                0
            }
            Kind::Symlink | Kind::Other => 0,
        };
        if entry.depth == 1 {
            let suffix = match entry.kind {
                Kind::Dir => "/",
                Kind::Symlink => "@",
                Kind::File | Kind::Other => "",
            };
            tally.entries.push(Usage { name: format!("{}{suffix}", quote_name(&entry.name())), bytes });
        } else if let Some(last) = tally.entries.last_mut() {
            last.bytes += bytes;
        }
    }
    tally
}

/// One aligned output line: human-readable size, exact bytes, name.
fn row(bytes: u64, name: &str) -> String {
    format!("{:>10}  {bytes:>14}  {name}\n", crate::human_size(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use toolhost_guest::codes;

    fn setup() -> (tempfile::TempDir, Context) {
        crate::test_work_dir()
    }

    fn du(ctx: &Context, path: &str, max_entries: usize) -> Result<Output, ToolError> {
        run(Args { path: path.into(), max_entries }, ctx)
    }

    fn write(root: &Path, rel: &str, bytes: usize) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, vec![b'x'; bytes]).unwrap();
    }

    #[test]
    fn sums_directories_largest_first() {
        let (dir, ctx) = setup();
        let r = dir.path();
        write(r, "target/debug/big.bin", 3000);
        write(r, "target/debug/deps/more.bin", 2000);
        write(r, "src/lib.rs", 100);
        write(r, "src/bin/main.rs", 50);
        write(r, "Cargo.toml", 10);
        write(r, ".git/HEAD", 21);
        fs::create_dir(r.join("empty")).unwrap();
        let out = du(&ctx, ".", 50).unwrap();
        assert_eq!(
            out.content,
            "./\n\
             \x20  4.9 KiB            5000  target/\n\
             \x20    150 B             150  src/\n\
             \x20     21 B              21  .git/\n\
             \x20     10 B              10  Cargo.toml\n\
             \x20      0 B               0  empty/\n\
             \x20  5.1 KiB            5181  TOTAL (6 files, 7 directories)\n"
        );
        let meta = out.metadata.unwrap();
        assert_eq!(
            (
                meta["total_bytes"].as_u64(),
                meta["entries"].as_u64(),
                meta["files"].as_u64(),
                meta["dirs"].as_u64()
            ),
            (Some(5181), Some(5), Some(6), Some(7))
        );
        assert_eq!(meta["stopped"], false);
        let sub = du(&ctx, "src", 50).unwrap().content;
        assert!(sub.starts_with("src/\n"), "{sub}");
        assert!(sub.contains("  100  lib.rs\n") && sub.contains("  50  bin/\n"), "{sub}");
    }

    #[test]
    fn caps_the_listed_entries() {
        let (dir, ctx) = setup();
        for i in 0..5 {
            write(dir.path(), &format!("f{i}"), 10 * (i + 1));
        }
        let out = du(&ctx, ".", 2).unwrap();
        let listed: Vec<&str> = out.content.lines().skip(1).take(3).collect();
        assert!(listed[0].ends_with("  f4") && listed[1].ends_with("  f3"), "{}", out.content);
        assert!(listed[2].contains("150  TOTAL (5 files, 0 directories)"), "{}", out.content);
        assert!(
            out.content.contains("[3 more entries not shown, 60 B together (limit 2)"),
            "{}",
            out.content
        );
        assert_eq!(out.metadata.unwrap()["omitted"], 3);
    }

    #[test]
    fn the_walk_is_bounded() {
        let (dir, _ctx) = setup();
        write(dir.path(), "a/1", 1);
        write(dir.path(), "a/2", 1);
        write(dir.path(), "b", 1);
        let mut walk = Walk::everything(dir.path(), usize::MAX).unwrap();
        let tally = measure(&mut walk, 2);
        assert!(tally.stopped);
        assert_eq!(tally.entries, [Usage { name: "a/".into(), bytes: 1 }]);
        let mut walk = Walk::everything(dir.path(), usize::MAX).unwrap();
        assert!(!measure(&mut walk, 5).stopped);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_count_as_zero_and_are_not_followed() {
        let (dir, ctx) = setup();
        write(dir.path(), "real/data", 500);
        std::os::unix::fs::symlink("real", dir.path().join("alias")).unwrap();
        std::os::unix::fs::symlink("data", dir.path().join("real/link")).unwrap();
        let out = du(&ctx, ".", 50).unwrap();
        assert!(out.content.contains("  500  real/\n"), "{}", out.content);
        assert!(out.content.contains("  0  alias@\n"), "{}", out.content);
        assert!(out.content.contains("  500  TOTAL (1 file, 1 directory)\n"), "{}", out.content);
    }

    #[cfg(unix)]
    #[test]
    fn unusual_names_are_quoted() {
        use std::os::unix::ffi::OsStrExt;
        let (dir, ctx) = setup();
        let r = dir.path();
        write(r, "big\n  9.8 KiB       10000  fake", 20);
        write(r, "d\x1b[31m/in", 10);
        fs::write(r.join(std::ffi::OsStr::from_bytes(b"bad\xff")), "xyz").unwrap();
        let out = du(&ctx, ".", 50).unwrap();
        assert_eq!(
            out.content,
            "./\n\
             \x20     20 B              20  \"big\\n  9.8 KiB       10000  fake\"\n\
             \x20     10 B              10  \"d\\x1b[31m\"/\n\
             \x20      3 B               3  \"bad\\u{fffd}\"\n\
             \x20     33 B              33  TOTAL (3 files, 1 directory)\n"
        );
        let sub = du(&ctx, "d\x1b[31m", 50).unwrap();
        assert!(sub.content.starts_with("\"d\\x1b[31m\"/\n"), "{}", sub.content);
    }

    #[test]
    fn files_that_do_not_open_count_as_zero_and_are_counted() {
        let (dir, _ctx) = setup();
        write(dir.path(), "a/real", 5);
        // An entry the walk yields but that does not open (a name decoded
        // lossily in the sandbox): stand in with a file removed mid-walk.
        let mut walk = Walk::everything(dir.path(), usize::MAX).unwrap();
        let first = walk.next().unwrap();
        fs::remove_file(dir.path().join("a/real")).unwrap();
        let tally = measure(&mut walk, 10);
        assert_eq!(first.name(), "a");
        assert_eq!((tally.files, tally.unmeasured), (1, 1));
    }

    #[test]
    fn errors() {
        let (dir, ctx) = setup();
        write(dir.path(), "f", 2048);
        let err = du(&ctx, "f", 50).unwrap_err();
        assert_eq!(err.code, codes::NOT_A_DIRECTORY);
        assert!(err.message.contains("2.0 KiB (2048 bytes)"), "{}", err.message);
        assert_eq!(du(&ctx, "nope", 50).unwrap_err().code, codes::NOT_FOUND);
        assert_eq!(du(&ctx, "..", 50).unwrap_err().code, codes::PATH_ESCAPE);
        assert_eq!(du(&ctx, "../x", 50).unwrap_err().code, codes::PATH_ESCAPE);
        for bad in [0, MAX_ENTRIES + 1] {
            assert_eq!(du(&ctx, ".", bad).unwrap_err().code, codes::INVALID_ARGS);
        }
    }

    #[test]
    fn empty_directory_and_defaults() {
        let (_dir, ctx) = setup();
        assert_eq!(
            du(&ctx, ".", 50).unwrap().content,
            "./\n  (empty directory)\n       0 B               0  TOTAL (0 files, 0 directories)\n"
        );
        let args: Args = serde_json::from_str("{}").unwrap();
        assert_eq!((args.path.as_str(), args.max_entries), (".", DEFAULT_MAX_ENTRIES));
    }
}
