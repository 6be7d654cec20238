//! What a search keeps while the walk runs, bounded whatever the tree holds:
//! for a grep, only the files (in walk order) whose matches can still be among
//! the first `max` shown; for a find, only the `max` smallest paths.

use std::collections::{BTreeMap, BinaryHeap};

use crate::scan::FileScan;

/// One file with matches: how it is shown, and what was found in it.
#[derive(Debug)]
pub(crate) struct Hits {
    /// Its path relative to the work dir.
    pub path: String,
    /// Its lines.
    pub scan: FileScan,
}

/// The files whose matches can be among the first `max` in walk order.
#[derive(Debug)]
pub(crate) struct FirstMatches {
    max: u64,
    files: BTreeMap<Vec<u32>, Hits>,
    /// Matches held (each file's counted up to `max`).
    held: u64,
}

impl FirstMatches {
    pub(crate) fn new(max: u64) -> Self {
        Self { max, files: BTreeMap::new(), held: 0 }
    }

    /// Keep the file at walk position `key` when its matches may be shown, and
    /// drop the files after it that no longer can be.
    pub(crate) fn offer(&mut self, key: Vec<u32>, hits: Hits) {
        if self.held >= self.max && self.files.last_key_value().is_some_and(|(last, _)| *last < key) {
            return;
        }
        self.held += hits.scan.matches.min(self.max);
        self.files.insert(key, hits);
        while let Some((_, last)) = self.files.last_key_value() {
            let n = last.scan.matches.min(self.max);
            if self.held - n < self.max {
                break;
            }
            self.files.pop_last();
            self.held -= n;
        }
    }

    /// Fold `other`'s files into these.
    pub(crate) fn merge(&mut self, other: FirstMatches) {
        for (key, hits) in other.files {
            self.offer(key, hits);
        }
    }

    /// The files kept, in walk order.
    pub(crate) fn into_files(self) -> impl Iterator<Item = Hits> {
        self.files.into_values()
    }
}

/// The `max` smallest paths offered, and how many were.
#[derive(Debug)]
pub(crate) struct FirstPaths {
    max: usize,
    heap: BinaryHeap<String>,
    pub(crate) total: u64,
}

impl FirstPaths {
    pub(crate) fn new(max: usize) -> Self {
        Self { max, heap: BinaryHeap::new(), total: 0 }
    }

    pub(crate) fn offer(&mut self, path: String) {
        self.total += 1;
        self.keep(path);
    }

    fn keep(&mut self, path: String) {
        if self.heap.len() < self.max {
            self.heap.push(path);
        } else if self.heap.peek().is_some_and(|largest| path < *largest) {
            self.heap.pop();
            self.heap.push(path);
        }
    }

    pub(crate) fn merge(&mut self, other: FirstPaths) {
        self.total += other.total;
        for path in other.heap {
            self.keep(path);
        }
    }

    /// The paths kept, sorted.
    pub(crate) fn into_sorted(self) -> Vec<String> {
        self.heap.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(matches: u64) -> Hits {
        Hits { path: String::new(), scan: FileScan { matches, lines: Vec::new() } }
    }

    #[test]
    fn only_files_that_can_be_shown_are_kept() {
        let mut first = FirstMatches::new(5);
        first.offer(vec![3], hits(2));
        first.offer(vec![9], hits(1));
        first.offer(vec![1], hits(4));
        // [1]: 4, [3]: 2 reach 5: [9] can no longer be shown.
        assert_eq!(first.files.keys().cloned().collect::<Vec<_>>(), [vec![1], vec![3]]);
        first.offer(vec![5], hits(100));
        assert_eq!(first.files.len(), 2, "after the first 5: dropped at once");
        first.offer(vec![0, 2], hits(7));
        assert_eq!(first.files.keys().cloned().collect::<Vec<_>>(), [vec![0, 2]]);
    }

    #[test]
    fn the_smallest_paths_are_kept_and_all_counted() {
        let mut a = FirstPaths::new(2);
        for p in ["d", "b", "c"] {
            a.offer(p.into());
        }
        let mut b = FirstPaths::new(2);
        b.offer("a".into());
        a.merge(b);
        assert_eq!((a.total, a.into_sorted()), (4, vec!["a".to_string(), "b".to_string()]));
    }
}
