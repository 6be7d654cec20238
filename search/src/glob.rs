//! The glob rule of `find_files` and `grep_files`: a pattern without `/`
//! matches the file name at any depth, one with `/` matches the path relative
//! to the searched directory (`*` within one directory, `**` across them).

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

/// A compiled glob with the tools' rule.
#[derive(Debug, Clone)]
pub struct Glob {
    matcher: GlobMatcher,
    name_only: bool,
}

impl Glob {
    /// Compile `pattern`; the error names it (empty, absolute, or the parser's
    /// message), or its length when longer than [`crate::MAX_PATTERN`].
    pub fn new(pattern: &str) -> Result<Self, String> {
        crate::check_pattern_len("glob pattern", pattern)?;
        let trimmed = pattern.trim();
        let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
        if trimmed.is_empty() {
            return Err("the glob pattern is empty".into());
        }
        if trimmed.starts_with('/') {
            return Err(format!(
                "glob `{pattern}` is absolute; patterns match paths relative to the searched directory"
            ));
        }
        let glob = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("invalid glob `{pattern}`: {e}"))?;
        Ok(Self { matcher: glob.compile_matcher(), name_only: !trimmed.contains('/') })
    }

    /// Does the entry at `rel` (relative to the searched directory) match?
    pub fn is_match(&self, rel: &Path) -> bool {
        if self.name_only {
            rel.file_name().is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(rel)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        let name = Glob::new("*.rs").unwrap();
        assert!(name.is_match(Path::new("a/b/c.rs")) && !name.is_match(Path::new("c.rs/x")));
        let path = Glob::new("./src/*.rs").unwrap();
        assert!(path.is_match(Path::new("src/a.rs")) && !path.is_match(Path::new("src/d/a.rs")));
        assert!(Glob::new("").unwrap_err().contains("empty"));
        assert!(Glob::new("/etc/*").unwrap_err().contains("absolute"));
        assert!(Glob::new("[a-").unwrap_err().contains("invalid glob"));
        let long = "*".repeat(crate::MAX_PATTERN + 1);
        let err = Glob::new(&long).unwrap_err();
        assert!(err.contains("65537 bytes") && err.contains("65536") && err.len() < 200, "{err}");
        assert!(Glob::new(&"a".repeat(crate::MAX_PATTERN)).is_ok());
    }
}
