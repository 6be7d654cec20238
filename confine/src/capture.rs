//! One output stream of a child, kept within a byte budget: the head and the tail,
//! with a marker line between them naming how much was cut. A flood is cut, never
//! buffered whole.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};

/// What one stream said (see `captured` in the WIT).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Captured {
    /// Head and tail, with a marker between when cut.
    pub data: Vec<u8>,
    /// Bytes written in all.
    pub total_bytes: u64,
    /// Bytes cut from the middle.
    pub cut_bytes: u64,
}

impl Captured {
    /// The bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }
}

/// Head and tail of a stream, at most `cap` bytes in all.
#[derive(Debug)]
pub(crate) struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl HeadTail {
    pub(crate) fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self { head: Vec::new(), tail: VecDeque::new(), head_cap, tail_cap: cap - head_cap, total: 0 }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let take = bytes.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    pub(crate) fn finish(self) -> Captured {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let cut = self.total - kept;
        let mut data = self.head;
        if cut > 0 {
            data.extend_from_slice(format!("\n[… {cut} bytes cut from the middle …]\n").as_bytes());
        }
        data.extend(self.tail);
        Captured { data, total_bytes: self.total, cut_bytes: cut }
    }
}

/// Read `stream` to its end into a [`HeadTail`] of `cap` bytes.
pub(crate) async fn read_capped(mut stream: impl AsyncRead + Unpin, cap: usize) -> Captured {
    let mut kept = HeadTail::new(cap);
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => kept.push(&buf[..n]),
        }
    }
    kept.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_streams_are_kept_whole() {
        let mut h = HeadTail::new(10);
        h.push(b"abc");
        h.push(b"de");
        let c = h.finish();
        assert_eq!((c.data.as_slice(), c.total_bytes, c.cut_bytes), (&b"abcde"[..], 5, 0));
    }

    #[test]
    fn floods_keep_head_and_tail_and_say_how_much_was_cut() {
        let mut h = HeadTail::new(10);
        for chunk in [&b"0123"[..], b"456789", b"abcdefghij", b"KLMNO"] {
            h.push(chunk);
        }
        let c = h.finish();
        assert_eq!(c.total_bytes, 25);
        assert_eq!(c.cut_bytes, 15);
        let text = String::from_utf8(c.data).unwrap();
        assert!(text.starts_with("01234\n[… 15 bytes cut"), "{text}");
        assert!(text.ends_with("…]\nKLMNO"), "{text}");
    }
}
