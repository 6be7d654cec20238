//! `git status --porcelain=v2 -z` and `git diff --numstat -z`, parsed: pure
//! functions over the bytes git printed, so they are tested natively.

use std::collections::BTreeMap;

/// One repository state as `git status --porcelain=v2 -z --branch` tells it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// `# branch.oid`: the commit HEAD names, `None` on an unborn branch.
    pub head: Option<String>,
    /// Every entry that is not clean, by path (relative to the repository's
    /// top): the record without its path (type, `XY`, modes, the HEAD and
    /// index object ids), so a `git add` changes it too.
    pub entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// The entry's two-letter code as `git status --short` shows it (`" M"`,
/// `"A "`, `"??"`), from a record [`parse`] kept.
pub fn short_code(record: &[u8]) -> String {
    match record.first() {
        Some(b'?') => "??".into(),
        Some(b'!') => "!!".into(),
        _ => record.get(2..4).map(|xy| String::from_utf8_lossy(xy).replace('.', " ")).unwrap_or_default(),
    }
}

/// Whether the entry has a file in the work tree (untracked, or a tracked
/// file not deleted there).
pub fn in_work_tree(record: &[u8]) -> bool {
    match record.first() {
        Some(b'?') => true,
        // The work tree's mode: all zeros when the file is not there.
        Some(b'1' | b'2') => record.split(|b| *b == b' ').nth(5).is_some_and(|m| m != b"000000"),
        Some(b'u') => record.split(|b| *b == b' ').nth(6).is_some_and(|m| m != b"000000"),
        _ => false,
    }
}

/// Parse porcelain v2 output (`-z`, with `--branch` headers), or `None`
/// when it is not that format (git printed something else, or was cut).
pub fn parse(bytes: &[u8]) -> Option<Status> {
    let mut status = Status::default();
    let mut fields = bytes.split(|b| *b == 0);
    while let Some(record) = fields.next() {
        if record.is_empty() {
            continue;
        }
        // How many space-separated fields come before the path.
        let before_path = match record[0] {
            b'#' => {
                if let Some(oid) = record.strip_prefix(b"# branch.oid ") {
                    let oid = std::str::from_utf8(oid).ok()?;
                    status.head = (oid != "(initial)").then(|| oid.to_string());
                }
                continue;
            }
            b'1' => 8,
            b'2' => 9,
            b'u' => 10,
            b'?' | b'!' => 1,
            _ => return None,
        };
        let mut parts = record.splitn(before_path + 1, |b| *b == b' ');
        let head_len: usize = parts.by_ref().take(before_path).map(|p| p.len() + 1).sum();
        let path = parts.next().filter(|p| !p.is_empty())?;
        let mut kept = record[..head_len].to_vec();
        if record[0] == b'2' {
            // A rename's original path follows as the next NUL-ended field.
            kept.extend_from_slice(fields.next().filter(|orig| !orig.is_empty())?);
        }
        status.entries.insert(path.to_vec(), kept);
    }
    Some(status)
}

/// Lines added and removed per path, from `git diff --numstat -z` (no rename
/// detection); a binary file has no counts.
pub fn parse_numstat(bytes: &[u8]) -> BTreeMap<Vec<u8>, Option<(u64, u64)>> {
    let mut out = BTreeMap::new();
    for record in bytes.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let mut parts = record.splitn(3, |b| *b == b'\t');
        let (Some(added), Some(removed), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let number = |b: &[u8]| std::str::from_utf8(b).ok().and_then(|s| s.parse::<u64>().ok());
        out.insert(path.to_vec(), number(added).zip(number(removed)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OID: &str = "78981922613b2afb6025042ff6bd878ac1994e85";

    #[test]
    fn parses_every_record_type() {
        let out = format!(
            "# branch.oid {OID}\0# branch.head main\0\
             1 .M N... 100644 100644 100644 {OID} {OID} sub/a b.rs\0\
             2 R. N... 100644 100644 100644 {OID} {OID} R100 new name\0old name\0\
             u UU N... 100644 100644 100644 100644 {OID} {OID} {OID} conflict.txt\0\
             ? un tracked\0"
        );
        let status = parse(out.as_bytes()).unwrap();
        assert_eq!(status.head.as_deref(), Some(OID));
        let paths: Vec<&[u8]> = status.entries.keys().map(Vec::as_slice).collect();
        assert_eq!(paths, [&b"conflict.txt"[..], b"new name", b"sub/a b.rs", b"un tracked"]);
        let modified = &status.entries[&b"sub/a b.rs"[..]];
        assert!(modified.starts_with(b"1 .M ") && modified.ends_with(format!("{OID} ").as_bytes()));
        assert!(status.entries[&b"new name"[..]].ends_with(b"old name"));
        assert_eq!(short_code(modified), " M");
        assert_eq!(short_code(&status.entries[&b"un tracked"[..]]), "??");
        assert_eq!(short_code(&status.entries[&b"conflict.txt"[..]]), "UU");
        assert!(in_work_tree(modified) && in_work_tree(&status.entries[&b"un tracked"[..]]));
        assert!(!in_work_tree(b"1 .D N... 100644 100644 000000 x x "));
        assert!(in_work_tree(b"u UU N... 100644 100644 100644 100644 x y z "));
        assert!(!in_work_tree(b"1 D. N... 100644 000000 000000 x x "));
    }

    #[test]
    fn an_unborn_branch_has_no_head_and_a_clean_tree_no_entries() {
        let status = parse(b"# branch.oid (initial)\0# branch.head main\0").unwrap();
        assert_eq!(status, Status::default());
        assert_eq!(parse(b"").unwrap(), Status::default());
    }

    #[test]
    fn anything_else_is_not_status() {
        for bad in
            [&b"fatal: not a git repository\n"[..], b"1 .M N...\0", b"? \0", b"2 R. a b c d e f g h p\0"]
        {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn numstat_counts_and_binaries() {
        let stats = parse_numstat(b"3\t1\tsrc/a.rs\0-\t-\timage.png\0garbage\0");
        assert_eq!(stats[&b"src/a.rs"[..]], Some((3, 1)));
        assert_eq!(stats[&b"image.png"[..]], None);
        assert_eq!(stats.len(), 2);
    }
}
