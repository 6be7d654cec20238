//! Tool names of a server: `mcp__SERVER__TOOL`, made of the host's tool-name
//! characters (`[a-z0-9_]`, starting with a letter) and bounded to
//! [`MAX_NAME_BYTES`]. A name that had to be cut ends in a short hash of the
//! server's own name, so two long names stay two.

use sha2::{Digest, Sha256};

use crate::load::spec::MAX_NAME_BYTES;

/// What every server tool's name starts with.
pub(crate) const PREFIX: &str = "mcp__";

/// Hex digits of the hash a cut name ends in.
const HASH_DIGITS: usize = 8;

/// `text` lower-cased, every character but ASCII letters and digits made `_`.
fn sanitize(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect()
}

/// The part of a tool name that stands for the server `name` (`my-fs` → `my_fs`).
pub(crate) fn server_part(name: &str) -> String {
    sanitize(name)
}

/// What the names of `server`'s tools start with: `mcp__SERVER__`.
pub(crate) fn tool_prefix(server: &str) -> String {
    format!("{PREFIX}{}__", server_part(server))
}

/// The host's name for the tool `tool` of the server `server`: `mcp__SERVER__TOOL`,
/// sanitized, and cut to [`MAX_NAME_BYTES`] with a hash of `tool` when longer.
pub(crate) fn tool_name(server: &str, tool: &str) -> String {
    let sanitized = sanitize(tool);
    let name = format!("{}{sanitized}", tool_prefix(server));
    // Only case may change without a hash: `readFile` is `readfile`.
    let changed = tool.is_empty() || sanitized != tool.to_ascii_lowercase();
    if name.len() <= MAX_NAME_BYTES && !changed {
        return name;
    }
    let hash = hex::encode(Sha256::digest(tool.as_bytes()));
    let mut cut = name;
    cut.truncate(MAX_NAME_BYTES - HASH_DIGITS - 1);
    cut.push('_');
    cut.push_str(&hash[..HASH_DIGITS]);
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::spec::valid_name;

    #[test]
    fn plain_names_are_kept() {
        assert_eq!(tool_name("memory", "create_entities"), "mcp__memory__create_entities");
        assert_eq!(tool_name("my-fs", "read_file"), "mcp__my_fs__read_file");
        // Upper case is lowered: same tool, the host's alphabet.
        assert_eq!(tool_name("Fs", "readFile"), "mcp__fs__readfile");
    }

    #[test]
    fn odd_and_long_names_become_valid_and_distinct() {
        let odd = ["a.b", "a b", "a-b", "ä", "", "x".repeat(200).as_str(), &format!("{}1", "y".repeat(100))]
            .map(|t| tool_name("srv", t));
        for name in &odd {
            assert!(valid_name(name), "{name}");
            assert!(name.starts_with("mcp__srv__"), "{name}");
        }
        let mut unique = odd.to_vec();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), odd.len(), "{odd:?}");
        assert_ne!(tool_name("s", "a.b"), tool_name("s", "a_b"));
        assert_eq!(tool_name("s", "a_b"), "mcp__s__a_b");
    }
}
