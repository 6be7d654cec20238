//! `read_file`: the lines of a text file, numbered like `cat -n`.

use std::fs::File;
use std::io::{BufRead, BufReader};

use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use toolhost_guest::{Context, JsonSchema, Output, ToolError, codes};

/// The tool description the model reads.
pub const DESCRIPTION: &str = "Read a text file. The first line gives the whole file's sha256, its line count and \
size (pass that sha256 as `expected_sha256` when you edit, write, move or remove the file; nothing is written if it \
changed since). Then its lines, each prefixed with its line number and a tab (like `cat -n`); the numbers are not \
part of the file. To re-read a window you already have, pass the sha256 you got as `known_sha256` with the same \
`offset` and `limit`: an unchanged file then gives a one-line `unchanged` note instead of the lines. Reads at most `limit` lines (default 2000) starting at line \
`offset` (1-based, default 1) and at most 256 KiB of output; when more remains, the output ends with a note giving \
the `offset` to continue from. Very long lines are cut. An image (PNG, JPEG, GIF or WebP, known by its content) is \
returned as an image, up to 5 MiB (`file_too_large` past that). Other binary files (a NUL byte in the first 8 KiB, \
or not valid UTF-8) are refused with `binary_file`; directories with `is_directory` (use list_dir). Paths are relative to the \
work directory; messages show a name with control or unusual characters double-quoted with backslash escapes.";

/// Default number of lines returned.
pub const DEFAULT_LIMIT: usize = 2000;
/// At most this many bytes of numbered lines are returned.
pub const MAX_OUTPUT: usize = 256 * 1024;
/// A NUL byte in this many leading bytes marks a file as binary.
const BINARY_PROBE: usize = 8 * 1024;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "toolhost_guest::schemars")]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to read: relative to the work directory, or absolute inside it.
    pub path: String,
    /// First line to return, 1-based. Default 1.
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub offset: usize,
    /// Maximum number of lines to return. Default 2000.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1))]
    pub limit: usize,
    /// The sha256 an earlier read of this window gave: when the file is unchanged, a one-line note replaces the lines.
    #[serde(default)]
    pub known_sha256: String,
}

fn one() -> usize {
    1
}

fn default_limit() -> usize {
    DEFAULT_LIMIT
}

/// Run `read_file`.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    if args.offset == 0 {
        return Err(ToolError::invalid_args("offset is 1-based: the first line is offset=1"));
    }
    if args.limit == 0 {
        return Err(ToolError::invalid_args("limit must be at least 1"));
    }
    let known = crate::fresh::parse_hash("known_sha256", &args.known_sha256)?;
    let path = ctx.resolve(&args.path)?;
    let shown = ctx.show(&path);
    let meta = std::fs::metadata(&path).map_err(|e| ctx.io_error(&e, &path))?;
    if meta.is_dir() {
        return Err(ToolError::new(
            codes::IS_DIRECTORY,
            format!("{shown} is a directory; use list_dir to see its entries"),
        ));
    }
    if !meta.is_file() {
        // A FIFO or device would block or never end.
        return Err(ToolError::invalid_args(format!("{shown} is not a regular file")));
    }
    let file = File::open(&path).map_err(|e| ctx.io_error(&e, &path))?;
    // A small file is read in one host call into a buffer of its own size;
    // a large one streams through 64 KiB.
    let capacity = usize::try_from(meta.len()).unwrap_or(usize::MAX).saturating_add(1).clamp(512, 64 * 1024);
    let mut reader = BufReader::with_capacity(capacity, file);

    let binary = |why: &str| {
        ToolError::new(
            codes::BINARY_FILE,
            format!("{shown} looks like a binary file ({why}); read_file only shows text"),
        )
    };
    // Probe before splitting into lines: a binary file may have no newline
    // for megabytes.
    let head = reader.fill_buf().map_err(|e| ctx.io_error(&e, &path))?;
    if let Some(mime) = crate::image::sniff(head) {
        return crate::image::read(reader, mime, meta.len(), &shown);
    }
    if head[..head.len().min(BINARY_PROBE)].contains(&0) {
        return Err(binary("it contains NUL bytes"));
    }
    let mut hasher = Sha256::new();
    let mut window = Window::new(args.offset, args.limit, meta.len());
    // The part of a line that a chunk ended in the middle of.
    let mut pending = Vec::new();
    loop {
        let chunk = reader.fill_buf().map_err(|e| ctx.io_error(&e, &path))?;
        if chunk.is_empty() {
            break;
        }
        hasher.update(chunk);
        if window.bytes < BINARY_PROBE && chunk[..chunk.len().min(BINARY_PROBE - window.bytes)].contains(&0) {
            return Err(binary("it contains NUL bytes"));
        }
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = rest.split_at(end + 1);
            let fed = if pending.is_empty() {
                window.push(line)
            } else {
                pending.extend_from_slice(line);
                let fed = window.push(&pending);
                pending.clear();
                fed
            };
            fed.map_err(|NotUtf8| binary("it is not valid UTF-8"))?;
            rest = tail;
        }
        pending.extend_from_slice(rest);
        let read = chunk.len();
        reader.consume(read);
    }
    if !pending.is_empty() {
        window.push(&pending).map_err(|NotUtf8| binary("it is not valid UTF-8"))?;
    }
    let Window { mut out, bytes, total_lines, first_shown, last_shown, capped, cut_line, .. } = window;

    if total_lines == 0 && args.offset == 1 {
        out.push_str("(empty file)\n");
    } else if args.offset > total_lines {
        return Err(ToolError::invalid_args(format!(
            "offset {} is past the end of {shown}, which has {total_lines} line{}",
            args.offset,
            if total_lines == 1 { "" } else { "s" }
        )));
    }
    if let Some(n) = cut_line {
        out.push_str(&format!(
            "[line {n} was cut: it is longer than the {} KiB output limit]\n",
            MAX_OUTPUT / 1024
        ));
    }
    if let (Some(first), Some(last)) = (first_shown, last_shown)
        && last < total_lines
    {
        let why = if capped { "the 256 KiB output limit was reached" } else { "the line limit was reached" };
        out.push_str(&format!(
            "[showing lines {first}-{last} of {total_lines} ({why}); use offset={} to continue]\n",
            last + 1
        ));
    }

    let sha256 = hex::encode(hasher.finalize());
    let header = format!(
        "[sha256 {sha256}, {}, {}]\n",
        crate::count(total_lines, "line", "lines"),
        crate::human_size(bytes as u64)
    );
    let unchanged = known.as_deref() == Some(sha256.as_str());
    let content = if unchanged {
        let window = match (first_shown, last_shown) {
            (Some(first), Some(last)) => format!("lines {first}-{last} are"),
            _ => "it is".to_string(),
        };
        format!(
            "[unchanged: {shown} still has sha256 {sha256}; {window} as you read them before (leave out \
             known_sha256 to get them again)]\n"
        )
    } else {
        header + &out
    };
    Ok(Output::text(content).with_metadata(json!({
        "path": ctx.display(&path),
        "sha256": sha256,
        "total_lines": total_lines,
        "bytes": bytes,
        "first_line": first_shown,
        "last_line": last_shown,
        "unchanged": unchanged,
    })))
}

/// A line that is not UTF-8: the file is binary.
struct NotUtf8;

/// The numbered lines of the window asked for, built as the file's lines
/// come in (every line is counted and checked, shown or not).
struct Window {
    offset: usize,
    last_wanted: usize,
    out: String,
    bytes: usize,
    total_lines: usize,
    first_shown: Option<usize>,
    last_shown: Option<usize>,
    /// Why the output stopped before `last_wanted` (output cap or a cut line).
    capped: bool,
    cut_line: Option<usize>,
}

impl Window {
    fn new(offset: usize, limit: usize, file_len: u64) -> Self {
        // Room for the whole file numbered, up to the output cap.
        let expected = usize::try_from(file_len).unwrap_or(MAX_OUTPUT).min(MAX_OUTPUT);
        Self {
            offset,
            last_wanted: offset.saturating_add(limit - 1),
            out: String::with_capacity(expected + expected / 4 + 64),
            bytes: 0,
            total_lines: 0,
            first_shown: None,
            last_shown: None,
            capped: false,
            cut_line: None,
        }
    }

    /// Take the next line of the file, its `\n` included.
    fn push(&mut self, line: &[u8]) -> Result<(), NotUtf8> {
        self.bytes += line.len();
        self.total_lines += 1;
        let n = self.total_lines;
        // '\n' never occurs inside a multi-byte sequence, so the file is
        // UTF-8 exactly when each of its lines is.
        let text = std::str::from_utf8(line).map_err(|_| NotUtf8)?;
        if n < self.offset || n > self.last_wanted || self.capped {
            return Ok(());
        }
        let mut text = text.strip_suffix('\n').unwrap_or(text);
        text = text.strip_suffix('\r').unwrap_or(text);
        if n == 1 {
            text = text.strip_prefix('\u{feff}').unwrap_or(text);
        }
        let prefix_len = n.checked_ilog10().unwrap_or(0) as usize + 1;
        let room = MAX_OUTPUT.saturating_sub(self.out.len() + prefix_len.max(6) + 2);
        let (kept, was_cut) = crate::truncate_at_char(text, room);
        if was_cut && self.first_shown.is_some() {
            // Not even this line fits whole: stop before it.
            self.capped = true;
            return Ok(());
        }
        push_line_number(&mut self.out, n);
        self.out.push_str(kept);
        self.out.push('\n');
        self.first_shown.get_or_insert(n);
        self.last_shown = Some(n);
        if was_cut {
            self.cut_line = Some(n);
            self.capped = true;
        }
        Ok(())
    }
}

/// Append `n` right-aligned in six columns and a tab, as `cat -n` does
/// (`format!("{n:>6}\t")`, without the formatting machinery: this runs
/// once per line shown).
fn push_line_number(out: &mut String, n: usize) {
    let mut digits = [b' '; 24];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b"0123456789"[rest % 10];
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let from = at.min(digits.len() - 6);
    // Spaces and ASCII digits only.
    out.push_str(std::str::from_utf8(&digits[from..]).unwrap_or_default());
    out.push('\t');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, Context) {
        crate::test_work_dir()
    }

    fn read(ctx: &Context, path: &str, offset: usize, limit: usize) -> Result<Output, ToolError> {
        read_known(ctx, path, offset, limit, "")
    }

    fn read_known(
        ctx: &Context,
        path: &str,
        offset: usize,
        limit: usize,
        known: &str,
    ) -> Result<Output, ToolError> {
        let out = run(Args { path: path.into(), offset, limit, known_sha256: known.into() }, ctx)?;
        Ok(without_header(out))
    }

    /// The output without its first line (the hash), which every test of the lines checks here.
    fn without_header(mut out: Output) -> Output {
        if let Some(meta) = &out.metadata
            && meta["unchanged"] == false
        {
            let (first, rest) = out.content.split_once('\n').unwrap();
            let expected = format!(
                "[sha256 {}, {}, {}]",
                meta["sha256"].as_str().unwrap(),
                crate::count(meta["total_lines"].as_u64().unwrap() as usize, "line", "lines"),
                crate::human_size(meta["bytes"].as_u64().unwrap())
            );
            assert_eq!(first, expected);
            out.content = rest.to_string();
        }
        out
    }

    #[test]
    fn the_first_line_gives_the_whole_files_hash() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let out = run(Args { path: "a.txt".into(), offset: 2, limit: 1, known_sha256: String::new() }, &ctx)
            .unwrap();
        let hash = crate::sha256_hex(b"one\ntwo\nthree\n");
        assert!(
            out.content.starts_with(&format!("[sha256 {hash}, 3 lines, 14 B]\n     2\ttwo\n")),
            "{}",
            out.content
        );
    }

    #[test]
    fn a_known_hash_of_an_unchanged_file_gives_one_line() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let hash = crate::sha256_hex(b"one\ntwo\nthree\n");
        let out = read_known(&ctx, "a.txt", 2, 2, &hash).unwrap();
        assert_eq!(
            out.content,
            format!(
                "[unchanged: a.txt still has sha256 {hash}; lines 2-3 are as you read them before (leave out \
                 known_sha256 to get them again)]\n"
            )
        );
        assert_eq!(out.metadata.unwrap()["unchanged"], true);
        // Changed: the lines again, with the new hash.
        fs::write(dir.path().join("a.txt"), "one\n2\nthree\n").unwrap();
        let out = read_known(&ctx, "a.txt", 2, 2, &hash).unwrap();
        assert_eq!(out.content, "     2\t2\n     3\tthree\n");
        assert_eq!(out.metadata.unwrap()["unchanged"], false);
        let err = read_known(&ctx, "a.txt", 1, 2, "abc").unwrap_err();
        assert_eq!(err.code, codes::INVALID_ARGS);
        assert!(err.message.starts_with("known_sha256 must be"), "{}", err.message);
    }

    #[test]
    fn line_numbers_are_padded_like_cat_n() {
        for n in [0, 1, 9, 10, 99_999, 100_000, 999_999, 1_000_000, 123_456_789, usize::MAX] {
            let mut out = String::new();
            push_line_number(&mut out, n);
            assert_eq!(out, format!("{n:>6}\t"), "{n}");
        }
    }

    #[test]
    fn lines_split_across_chunks_are_joined() {
        // Longer than the 64 KiB a read hands over at once: lines straddle
        // the chunks, and the hash covers every byte.
        let (dir, ctx) = setup();
        let text: String = (1..=9_000).map(|i| format!("line {i}\n")).collect();
        assert!(text.len() > 64 * 1024);
        fs::write(dir.path().join("f"), format!("{text}tail")).unwrap();
        let out = read(&ctx, "f", 1, 10_000).unwrap();
        let meta = out.metadata.unwrap();
        assert_eq!(meta["total_lines"], 9_001);
        assert_eq!(meta["sha256"], crate::sha256_hex(format!("{text}tail").as_bytes()));
        assert!(out.content.starts_with(&numbered(1..=9_000)), "lines whole across chunks");
        assert!(out.content.ends_with("  9001\ttail\n"), "{}", &out.content[out.content.len() - 40..]);
    }

    fn numbered(lines: std::ops::RangeInclusive<usize>) -> String {
        lines.map(|i| format!("{i:>6}\tline {i}\n")).collect()
    }

    #[test]
    fn numbers_lines_and_reports_metadata() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("a.txt"), "alpha\nbeta\r\n\ngamma").unwrap();
        let out = read(&ctx, "a.txt", 1, DEFAULT_LIMIT).unwrap();
        assert_eq!(out.content, "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma\n");
        let meta = out.metadata.unwrap();
        assert_eq!(meta["path"], "a.txt");
        assert_eq!(meta["total_lines"], 4);
        assert_eq!(meta["bytes"], 18);
        assert_eq!(meta["first_line"], 1);
        assert_eq!(meta["last_line"], 4);
        assert_eq!(meta["sha256"], crate::sha256_hex(b"alpha\nbeta\r\n\ngamma"));
    }

    #[test]
    fn offset_and_limit_select_lines_and_say_how_to_continue() {
        let (dir, ctx) = setup();
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        fs::write(dir.path().join("f"), &text).unwrap();
        let out = read(&ctx, "f", 3, 4).unwrap();
        assert!(out.content.starts_with(&numbered(3..=6)), "{}", out.content);
        assert!(out.content.contains("showing lines 3-6 of 10"), "{}", out.content);
        assert!(out.content.contains("offset=7"), "{}", out.content);
        let meta = out.metadata.unwrap();
        assert_eq!(meta["sha256"], crate::sha256_hex(text.as_bytes()), "hash of the whole file");
        assert_eq!((meta["first_line"].as_u64(), meta["last_line"].as_u64()), (Some(3), Some(6)));
        // The tail: no continuation note.
        assert_eq!(read(&ctx, "f", 8, 100).unwrap().content, numbered(8..=10));
    }

    #[test]
    fn offset_past_the_end_names_the_line_count() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("f"), "a\nb\nc\n").unwrap();
        let err = read(&ctx, "f", 4, 10).unwrap_err();
        assert_eq!(err.code, codes::INVALID_ARGS);
        assert!(err.message.contains("3 lines"), "{}", err.message);
        assert_eq!(read(&ctx, "f", 0, 10).unwrap_err().code, codes::INVALID_ARGS);
        assert_eq!(read(&ctx, "f", 1, 0).unwrap_err().code, codes::INVALID_ARGS);
    }

    #[test]
    fn empty_file() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("e"), "").unwrap();
        let out = read(&ctx, "e", 1, 10).unwrap();
        assert_eq!(out.content, "(empty file)\n");
        assert_eq!(out.metadata.unwrap()["total_lines"], 0);
        assert_eq!(read(&ctx, "e", 2, 10).unwrap_err().code, codes::INVALID_ARGS);
    }

    #[test]
    fn output_is_capped_at_256_kib() {
        let (dir, ctx) = setup();
        let line = "x".repeat(999);
        let text: String = (0..1000).map(|_| format!("{line}\n")).collect();
        fs::write(dir.path().join("big"), &text).unwrap();
        let out = read(&ctx, "big", 1, DEFAULT_LIMIT).unwrap();
        let meta = out.metadata.unwrap();
        let last = meta["last_line"].as_u64().unwrap();
        // Each numbered line is 6 + 1 + 999 + 1 bytes.
        assert_eq!(last, (MAX_OUTPUT / 1007) as u64);
        assert!(out.content.len() <= MAX_OUTPUT + 200);
        assert!(
            out.content.contains(&format!("use offset={} to continue", last + 1)),
            "{}",
            &out.content[out.content.len() - 200..]
        );
        assert!(out.content.contains("256 KiB output limit"));
    }

    #[test]
    fn a_single_huge_line_is_cut() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("min.js"), format!("{}\nnext\n", "y".repeat(300 * 1024))).unwrap();
        let out = read(&ctx, "min.js", 1, DEFAULT_LIMIT).unwrap();
        assert!(out.content.len() <= MAX_OUTPUT + 300);
        assert!(out.content.contains("line 1 was cut"), "{}", &out.content[out.content.len() - 200..]);
        assert!(out.content.contains("use offset=2 to continue"));
    }

    #[test]
    fn bom_is_not_shown() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("b"), "\u{feff}first\nsecond\n").unwrap();
        assert_eq!(read(&ctx, "b", 1, 10).unwrap().content, "     1\tfirst\n     2\tsecond\n");
    }

    #[test]
    fn binary_files_are_refused() {
        let (dir, ctx) = setup();
        fs::write(dir.path().join("nul"), b"abc\0def\n").unwrap();
        fs::write(dir.path().join("latin1"), b"caf\xe9\n").unwrap();
        let mut late_nul = vec![b'a'; 9000];
        late_nul.push(0);
        fs::write(dir.path().join("late"), &late_nul).unwrap();
        for name in ["nul", "latin1"] {
            let err = read(&ctx, name, 1, 10).unwrap_err();
            assert_eq!(err.code, codes::BINARY_FILE, "{name}");
            assert!(err.message.contains(name), "{}", err.message);
        }
        // A NUL past the first 8 KiB is valid UTF-8 text.
        assert!(read(&ctx, "late", 1, 10).is_ok());
    }

    #[test]
    fn images_by_content_not_name() {
        let (dir, ctx) = setup();
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x04\0\0\0\x02\x08\x06\0\0\0".to_vec();
        png.extend_from_slice(&[0; 64]);
        fs::write(dir.path().join("picture.txt"), &png).unwrap();
        fs::write(dir.path().join("notes.png"), "just text\n").unwrap();
        let out = read(&ctx, "picture.txt", 1, 10).unwrap();
        assert!(out.content.contains("image/png image, 93 bytes, 4x2"), "{}", out.content);
        let meta = out.metadata.unwrap();
        assert_eq!(meta["sha256"], hex::encode(Sha256::digest(&png)));
        assert!(meta[crate::image::IMAGE]["data"].is_string());
        assert!(read(&ctx, "notes.png", 1, 10).unwrap().content.contains("just text"));
        let mut big = png.clone();
        big.resize(crate::image::MAX_IMAGE_BYTES as usize + 1, 0);
        fs::write(dir.path().join("big.png"), &big).unwrap();
        let err = read(&ctx, "big.png", 1, 10).unwrap_err();
        assert_eq!(err.code, codes::FILE_TOO_LARGE);
        assert!(err.message.contains("5242880"), "{}", err.message);
    }

    #[test]
    fn missing_directory_and_escape() {
        let (dir, ctx) = setup();
        fs::create_dir(dir.path().join("d")).unwrap();
        let err = read(&ctx, "nope.txt", 1, 10).unwrap_err();
        assert_eq!(err.code, codes::NOT_FOUND);
        assert_eq!(err.message, "nope.txt does not exist");
        assert_eq!(read(&ctx, "d", 1, 10).unwrap_err().code, codes::IS_DIRECTORY);
        assert_eq!(read(&ctx, "../x", 1, 10).unwrap_err().code, codes::PATH_ESCAPE);
    }

    #[test]
    fn messages_quote_unusual_names() {
        let (dir, ctx) = setup();
        fs::create_dir(dir.path().join("d\x1b[2J")).unwrap();
        fs::write(dir.path().join("b\nin"), b"\0").unwrap();
        fs::write(dir.path().join("t\u{202e}xt"), "a\n").unwrap();
        let err = read(&ctx, "d\x1b[2J", 1, 10).unwrap_err();
        assert_eq!(err.message, "\"d\\x1b[2J\" is a directory; use list_dir to see its entries");
        let err = read(&ctx, "b\nin", 1, 10).unwrap_err();
        assert!(err.message.starts_with("\"b\\nin\" looks like a binary file"), "{}", err.message);
        let err = read(&ctx, "t\u{202e}xt", 5, 10).unwrap_err();
        assert!(err.message.contains("end of \"t\\u{202e}xt\", which"), "{}", err.message);
        let out = read(&ctx, "t\u{202e}xt", 1, 10).unwrap();
        assert_eq!(out.metadata.unwrap()["path"], "t\u{202e}xt", "metadata keeps the exact name");
    }

    #[cfg(unix)]
    #[test]
    fn fifos_are_refused_not_read() {
        let (dir, ctx) = setup();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo here
        }
        let err = read(&ctx, "pipe", 1, 10).unwrap_err();
        assert_eq!(err.code, codes::INVALID_ARGS);
        assert!(err.message.contains("not a regular file"), "{}", err.message);
    }

    #[test]
    fn unknown_arguments_are_refused() {
        let err = serde_json::from_str::<Args>(r#"{"path": "a", "lines": 3}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
        let args: Args = serde_json::from_str(r#"{"path": "a"}"#).unwrap();
        assert!(args.known_sha256.is_empty());
        assert_eq!((args.offset, args.limit), (1, DEFAULT_LIMIT));
    }
}
