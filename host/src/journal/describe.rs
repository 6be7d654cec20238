//! What a `begin` record says of a call's arguments: their digest, a bounded
//! preview, and the paths they name. Pure functions; the preview is redacted by
//! the caller before it gets here.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Bytes of the arguments a record keeps as its preview.
pub(crate) const PREVIEW_BYTES: usize = 256;
/// Paths a record keeps, and bytes of each.
pub(crate) const MAX_PATHS: usize = 16;
pub(crate) const PATH_BYTES: usize = 1024;

/// Argument names that hold a path (and any name ending in `path`).
const PATH_KEYS: &[&str] =
    &["path", "paths", "file", "files", "dir", "cwd", "from", "to", "source", "destination", "target"];

/// sha256 of `args` as compact JSON, in hex.
pub(crate) fn digest(args_json: &str) -> String {
    hex::encode(Sha256::digest(args_json.as_bytes()))
}

/// At most [`PREVIEW_BYTES`] of `text`, cut on a char boundary, with `…` when cut.
pub(crate) fn preview(text: &str) -> String {
    if text.len() <= PREVIEW_BYTES {
        return text.to_string();
    }
    let end = text.floor_char_boundary(PREVIEW_BYTES);
    format!("{}…", &text[..end])
}

/// The paths `args` names: the strings (or arrays of strings) under the top-level
/// keys of [`PATH_KEYS`] or ending in `path`, at most [`MAX_PATHS`] of
/// [`PATH_BYTES`] each.
pub(crate) fn paths(args: &Value) -> Vec<String> {
    let Value::Object(map) = args else { return Vec::new() };
    let mut out = Vec::new();
    for (key, value) in map {
        if !(PATH_KEYS.contains(&key.as_str()) || key.ends_with("path")) {
            continue;
        }
        let strings: Vec<&str> = match value {
            Value::String(s) => vec![s],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        for s in strings {
            if out.len() == MAX_PATHS {
                return out;
            }
            let end = s.floor_char_boundary(PATH_BYTES.min(s.len()));
            out.push(s[..end].to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_come_from_path_like_keys_bounded() {
        let args = json!({"path": "a.txt", "content": "x", "old_path": "b", "paths": ["c", 3, "d"], "to": 5});
        // In key order (serde_json sorts them).
        assert_eq!(paths(&args), vec!["b", "a.txt", "c", "d"]);
        let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
        assert_eq!(paths(&json!({ "paths": many })).len(), MAX_PATHS);
        let long = "é".repeat(PATH_BYTES);
        let got = paths(&json!({ "path": long }));
        assert!(got[0].len() <= PATH_BYTES && got[0].chars().all(|c| c == 'é'));
        assert!(paths(&json!("path")).is_empty());
    }

    #[test]
    fn the_preview_is_bounded_on_a_char_boundary() {
        assert_eq!(preview("{}"), "{}");
        let long = "ü".repeat(PREVIEW_BYTES);
        let cut = preview(&long);
        assert!(cut.len() <= PREVIEW_BYTES + '…'.len_utf8());
        assert!(cut.ends_with('…'));
        assert_eq!(digest("{}").len(), 64);
    }
}
