//! Output budgets: the head + tail clamp of what the model reads, and the
//! store that keeps every full output by call id.
//!
//! The store put happens before the clamp, so a cut never loses anything: the
//! omitted middle can be read back by call id.

use std::sync::{Arc, Mutex};

use lru::LruCache;

use crate::native::READ_OUTPUT;

/// Share of the clamp budget given to the head; the tail gets the rest,
/// since errors and summaries tend to come last.
const HEAD_SHARE: f64 = 0.4;

/// What was cut from the middle of an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Omitted {
    /// Whole lines left out.
    pub lines: usize,
    /// Bytes left out.
    pub bytes: usize,
}

/// Cut `text` to at most about `max_bytes`: a head and a tail, both ending
/// and starting at line boundaries, with a marker naming what was left out
/// and the call id the full text is kept under.
pub fn clamp(text: &str, max_bytes: usize, call_id: &str) -> (String, Option<Omitted>) {
    if text.len() <= max_bytes {
        return (text.to_string(), None);
    }
    let head_budget = (max_bytes as f64 * HEAD_SHARE) as usize;
    let tail_budget = max_bytes - head_budget;

    let mut head_end = floor_char_boundary(text, head_budget);
    if let Some(nl) = text[..head_end].rfind('\n') {
        head_end = nl + 1;
    }
    let mut tail_start = ceil_char_boundary(text, text.len() - tail_budget).max(head_end);
    if let Some(nl) = text[tail_start..].find('\n')
        && tail_start + nl + 1 < text.len()
    {
        tail_start += nl + 1;
    }
    let middle = &text[head_end..tail_start];
    let omitted = Omitted { lines: middle.matches('\n').count(), bytes: middle.len() };
    let first_omitted = text[..head_end].matches('\n').count() + 1;
    let marker = format!(
        "\n[... {} lines ({} bytes) omitted from the middle. To see them, call {READ_OUTPUT} with \
         {{\"call_id\": \"{call_id}\", \"offset\": {first_omitted}}} or with a \"pattern\" ...]\n",
        omitted.lines, omitted.bytes
    );
    let mut out = String::with_capacity(head_end + marker.len() + text.len() - tail_start);
    out.push_str(&text[..head_end]);
    out.push_str(&marker);
    out.push_str(&text[tail_start..]);
    (out, Some(omitted))
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Full outputs by call id, least recently used dropped first once the total
/// passes a byte budget. A miss is normal (evicted or never stored).
pub struct OutputStore {
    inner: Mutex<Inner>,
    max_bytes: usize,
}

struct Inner {
    entries: LruCache<String, Arc<str>>,
    bytes: usize,
}

impl OutputStore {
    /// A store holding at most `max_bytes` of output in total.
    pub fn new(max_bytes: usize) -> Self {
        Self { inner: Mutex::new(Inner { entries: LruCache::unbounded(), bytes: 0 }), max_bytes }
    }

    /// Keep `output` under `call_id` (replacing an earlier one). An output
    /// larger than the whole budget is not kept.
    pub fn put(&self, call_id: &str, output: Arc<str>) {
        if output.len() > self.max_bytes {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.bytes += output.len();
        if let Some(old) = inner.entries.put(call_id.to_string(), output) {
            inner.bytes -= old.len();
        }
        while inner.bytes > self.max_bytes {
            match inner.entries.pop_lru() {
                Some((_, old)) => inner.bytes -= old.len(),
                None => break,
            }
        }
    }

    /// The full output of `call_id`, if still kept.
    pub fn get(&self, call_id: &str) -> Option<Arc<str>> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.entries.get(call_id).cloned()
    }

    /// Bytes currently kept.
    pub fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_untouched() {
        assert_eq!(clamp("a\nb\n", 100, "c1"), ("a\nb\n".to_string(), None));
    }

    #[test]
    fn long_output_keeps_head_and_tail_at_line_boundaries() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (out, omitted) = clamp(&text, 1000, "c7");
        let omitted = omitted.unwrap();
        assert!(out.starts_with("line 0\nline 1\n"));
        assert!(out.ends_with("line 999\n"));
        assert!(
            out.contains("omitted from the middle. To see them, call read_output with {\"call_id\": \"c7\"")
        );
        // Every kept line is whole, and kept + omitted = all.
        let kept: Vec<&str> = out.lines().filter(|l| l.starts_with("line ")).collect();
        assert!(kept.iter().all(|l| l[5..].parse::<u32>().is_ok()), "a line was cut");
        assert_eq!(kept.len() + omitted.lines, 1000);
        assert!(out.len() < 1200);
    }

    #[test]
    fn one_giant_line_is_cut_on_char_boundaries() {
        let text = "é".repeat(5000);
        let (out, omitted) = clamp(&text, 101, "c");
        assert!(omitted.unwrap().bytes > 9000);
        assert!(out.starts_with('é') && out.ends_with('é'));
    }

    #[test]
    fn store_evicts_least_recently_used_by_bytes() {
        let store = OutputStore::new(10);
        store.put("a", "aaaa".into());
        store.put("b", "bbbb".into());
        assert!(store.get("a").is_some()); // a is now the most recent
        store.put("c", "cccc".into());
        assert!(store.get("b").is_none());
        assert_eq!(store.get("a").as_deref(), Some("aaaa"));
        assert_eq!(store.bytes(), 8);
        store.put("huge", "x".repeat(11).into());
        assert!(store.get("huge").is_none());
    }
}
