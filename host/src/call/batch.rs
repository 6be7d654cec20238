//! Batches: the calls of one model turn. Consecutive concurrency-safe
//! (read-only) calls run in parallel, once each has been admitted in call order
//! (its pre-tool-use hooks and any question asked); every other call runs alone,
//! in order, after everything before it has finished. Results come back in the order
//! of the calls, whoever finished first.
//!
//! An unknown tool counts as not concurrency-safe: it is refused at once
//! anyway, and guessing "harmless" about a tool we don't know is the wrong
//! default.

use futures_util::future::join_all;

use crate::call::executor::{ToolCall, ToolResult};
use crate::call::host::Host;

impl Host {
    /// Run `calls` as one model turn: consecutive read-only calls in parallel, every
    /// other call alone and in order; the results in call order.
    pub async fn execute_batch(&self, calls: Vec<ToolCall>) -> Vec<ToolResult> {
        let safe: Vec<bool> = calls.iter().map(|c| self.is_concurrency_safe(c)).collect();
        let mut results = Vec::with_capacity(calls.len());
        let mut calls = calls.into_iter();
        for (_, len, parallel) in plan(&safe) {
            let run: Vec<ToolCall> = calls.by_ref().take(len).collect();
            if parallel {
                // Admitted one at a time, in call order (pre-tool-use hooks, questions),
                // before any of them starts; then run together.
                let mut admitted = Vec::with_capacity(run.len());
                for call in run {
                    admitted.push(self.admit(call).await);
                }
                let ran = join_all(admitted.into_iter().map(|a| async move {
                    match a {
                        Ok(a) => self.run_admitted(a).await,
                        Err(refused) => refused,
                    }
                }));
                results.extend(ran.await);
            } else {
                // Alone, in order (a "parallel" run of one pays for nothing).
                for call in run {
                    results.push(self.execute(call).await);
                }
            }
        }
        results
    }

    /// Whether `call` may run beside other calls: its tool is known and
    /// declares itself read-only.
    pub fn is_concurrency_safe(&self, call: &ToolCall) -> bool {
        self.registry().get(&call.name).is_some_and(|t| t.spec().read_only)
    }
}

/// Split a batch into runs, given which calls are concurrency-safe:
/// `(start index, length, parallel)`. Maximal stretches of safe calls form
/// one run (parallel when longer than one); every other call is a run alone.
pub(crate) fn plan(safe: &[bool]) -> Vec<(usize, usize, bool)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < safe.len() {
        let len = if safe[i] { safe[i..].iter().take_while(|s| **s).count() } else { 1 };
        runs.push((i, len, len > 1));
        i += len;
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::plan;

    #[test]
    fn consecutive_safe_calls_group_and_the_rest_run_alone() {
        // read, grep, edit, read, glob, bash
        let safe = [true, true, false, true, true, false];
        assert_eq!(plan(&safe), vec![(0, 2, true), (2, 1, false), (3, 2, true), (5, 1, false)]);
        assert_eq!(plan(&[true]), vec![(0, 1, false)]);
        assert_eq!(plan(&[false, false]), vec![(0, 1, false), (1, 1, false)]);
        assert_eq!(plan(&[]), vec![]);
    }
}
