//! Token counts with a real tokenizer: `o200k_base` (tiktoken-rs, its
//! vocabulary compiled into the binary, nothing downloaded), loaded once, on
//! first use.
//!
//! The text is encoded in pieces of at most [`PIECE_BYTES`], cut at line ends
//! (a longer line at a character boundary): BPE's cost grows faster than
//! linearly with the length of one unbroken word, and an output may be one
//! megabyte-long word. A cut inside a line can change the count by a token or
//! two, not more.

/// Longest piece encoded at once, in bytes.
const PIECE_BYTES: usize = 1024;

/// Tokens of `text` under `o200k_base`.
pub fn count_tokens(text: &str) -> usize {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let mut total = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.floor_char_boundary(PIECE_BYTES.min(rest.len()));
        if end < rest.len()
            && let Some(nl) = rest[..end].rfind('\n')
        {
            end = nl + 1;
        }
        if end == 0 {
            end = rest.ceil_char_boundary(1);
        }
        total += bpe.encode_ordinary(&rest[..end]).len();
        rest = &rest[end..];
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_like_the_tokenizer_and_bounds_long_words() {
        assert_eq!(count_tokens(""), 0);
        let text = "error[E0308]: mismatched types\n --> src/main.rs:3:5\n";
        assert_eq!(count_tokens(text), tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len());
        let word = "x".repeat(1 << 20);
        let started = std::time::Instant::now();
        let n = count_tokens(&word);
        assert!(n > 1000 && started.elapsed() < std::time::Duration::from_secs(5), "{n}");
    }
}
