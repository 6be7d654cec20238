//! Host side of `toolhost:plugin/search`: `grep_files` and `find_files` run by
//! the host ([`toolhost_search`]) against the call's work dir, on a blocking
//! thread with a few workers of its own. Only a call that holds the work dir
//! may search it (`denied` otherwise; and a component that imports the
//! interface loads only when it is granted the work dir). The search stops at
//! the call's deadline, and as soon as the call is dropped (its deadline or
//! its cancellation, seen by the sandbox): the future's guard raises the
//! flag the workers check between files.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use toolhost_search as engine;
use wasmtime::component::{HasData, Linker};

use super::capability::{Capability, Need};
use super::{CallInfo, CallStore, FsAccess, StoreParts};
use crate::bindings::toolhost::plugin::search as wit;

/// Granted only to a plugin granted the work dir (it reads it).
pub(crate) const CAPABILITY: Capability = Capability {
    name: "search",
    interfaces: &["toolhost:plugin/search"],
    needs: Some(Need {
        key: "filesystem",
        example: "\"read\"",
        flag: "a policy entry",
        refusal: "this plugin is granted no filesystem, and the search reads the work dir (grant it with {how})",
    }),
};

/// What the search import works on: the call's filesystem and deadline.
pub(crate) struct SearchView<'a> {
    /// The call's filesystem.
    pub fs: &'a FsAccess,
    /// The call (its deadline).
    pub call: &'a CallInfo,
}

struct HasSearch;

impl HasData for HasSearch {
    type Data<'a> = SearchView<'a>;
}

/// Link `toolhost:plugin/search` over each store's filesystem and call.
pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wit::add_to_linker::<T, HasSearch>(linker, |store| {
        let StoreParts { access, .. } = store.parts();
        SearchView { fs: &access.fs, call: &access.call }
    })
}

/// Raises the stop flag when dropped: a search whose call is gone stops.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl SearchView<'_> {
    /// Run `search` on a blocking thread against the call's work dir. A search
    /// stopped at the deadline never answers: the sandbox ends the call with
    /// `timeout` (or `cancelled`) at that moment.
    async fn run<R: Send + 'static>(
        &self,
        search: impl FnOnce(&std::path::Path, &engine::Stop) -> Result<R, engine::SearchError> + Send + 'static,
    ) -> Result<R, wit::SearchError> {
        let Some(work_dir) = self.fs.work_dir.clone() else {
            return Err(wit::SearchError::Denied("this call has no work directory to search".into()));
        };
        let flag = Arc::new(AtomicBool::new(false));
        let _guard = StopOnDrop(flag.clone());
        let stop = engine::Stop::new(flag, Some(self.call.deadline));
        let joined = tokio::task::spawn_blocking(move || search(&work_dir, &stop)).await;
        match joined {
            Ok(Ok(found)) => Ok(found),
            Ok(Err(engine::SearchError::Stopped)) => std::future::pending().await,
            Ok(Err(e)) => Err(error(e)),
            Err(e) => Err(wit::SearchError::Io(format!("the search failed: {e}"))),
        }
    }
}

impl wit::Host for SearchView<'_> {
    async fn grep(&mut self, req: wit::GrepRequest) -> Result<wit::GrepResult, wit::SearchError> {
        let req = engine::GrepRequest {
            path: req.path,
            pattern: req.pattern,
            literal: req.literal,
            case_insensitive: req.case_insensitive,
            glob: req.glob,
            include_ignored: req.include_ignored,
            max_results: req.max_results,
            before: req.before,
            after: req.after,
        };
        let found = self.run(move |work, stop| engine::grep(work, &req, stop)).await?;
        Ok(wit::GrepResult {
            files: found.files.into_iter().map(file_lines).collect(),
            matches: found.matches,
            context_lines: found.context_lines,
            files_searched: found.files_searched,
            files_matched: found.files_matched,
            binary: found.binary,
            large: found.large,
            unreadable: found.unreadable,
            walk: walk_counts(found.walk),
        })
    }

    async fn find(&mut self, req: wit::FindRequest) -> Result<wit::FindResult, wit::SearchError> {
        let req = engine::FindRequest {
            path: req.path,
            pattern: req.pattern,
            kind: req.kind.map(|k| match k {
                wit::EntryKind::File => engine::EntryKind::File,
                wit::EntryKind::Dir => engine::EntryKind::Dir,
                wit::EntryKind::Symlink => engine::EntryKind::Symlink,
            }),
            modified_since: req.modified_since,
            max_depth: req.max_depth,
            include_ignored: req.include_ignored,
            max_results: req.max_results,
        };
        let found = self.run(move |work, stop| engine::find(work, &req, stop)).await?;
        Ok(wit::FindResult { paths: found.paths, total: found.total, walk: walk_counts(found.walk) })
    }
}

fn file_lines(file: engine::FileLines) -> wit::FileLines {
    let line = |l: engine::Line| wit::Line {
        number: l.number,
        kind: match l.kind {
            engine::LineKind::Match => wit::LineKind::Matched,
            engine::LineKind::Context => wit::LineKind::Context,
            engine::LineKind::Break => wit::LineKind::Separator,
        },
        text: l.text,
    };
    wit::FileLines { path: file.path, lines: file.lines.into_iter().map(line).collect() }
}

fn walk_counts(c: engine::WalkCounts) -> wit::WalkCounts {
    wit::WalkCounts {
        skipped_dirs: c.skipped_dirs,
        ignored: c.ignored,
        unreadable_dirs: c.unreadable_dirs,
        unreadable_entries: c.unreadable_entries,
    }
}

fn error(e: engine::SearchError) -> wit::SearchError {
    match e {
        engine::SearchError::InvalidArgs(m) => wit::SearchError::InvalidArgs(m),
        engine::SearchError::NotFound(m) => wit::SearchError::NotFound(m),
        engine::SearchError::Denied(m) => wit::SearchError::Denied(m),
        engine::SearchError::Io(m) => wit::SearchError::Io(m),
        engine::SearchError::Stopped => wit::SearchError::Io(engine::SearchError::Stopped.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wit::Host as _;

    fn call() -> CallInfo {
        CallInfo {
            plugin: "builtin:fs".into(),
            call_id: "c".into(),
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(60),
        }
    }

    fn grep_request(path: &str) -> wit::GrepRequest {
        wit::GrepRequest {
            path: path.into(),
            pattern: "needle".into(),
            literal: false,
            case_insensitive: false,
            glob: None,
            include_ignored: false,
            max_results: 10,
            before: 0,
            after: 0,
        }
    }

    #[tokio::test]
    async fn a_call_without_the_work_dir_searches_nothing() {
        let (fs, call) = (FsAccess::default(), call());
        let mut view = SearchView { fs: &fs, call: &call };
        let err = view.grep(grep_request("/")).await.unwrap_err();
        assert!(matches!(&err, wit::SearchError::Denied(m) if m.contains("no work directory")), "{err:?}");
        let find = wit::FindRequest {
            path: "/".into(),
            pattern: "*".into(),
            kind: None,
            modified_since: None,
            max_depth: 5,
            include_ignored: false,
            max_results: 10,
        };
        assert!(matches!(view.find(find).await, Err(wit::SearchError::Denied(_))));
    }

    #[tokio::test]
    async fn a_call_searches_its_own_work_dir_only() {
        let (work, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(work.path().join("a"), "needle\n").unwrap();
        std::fs::write(other.path().join("b"), "needle\n").unwrap();
        let fs = FsAccess { work_dir: Some(work.path().to_path_buf()), ..FsAccess::default() };
        let call = call();
        let mut view = SearchView { fs: &fs, call: &call };
        let found = view.grep(grep_request(&work.path().to_string_lossy())).await.unwrap();
        assert_eq!((found.matches, found.files[0].path.as_str()), (1, "a"));
        let err = view.grep(grep_request(&other.path().to_string_lossy())).await.unwrap_err();
        assert!(matches!(err, wit::SearchError::Denied(_)), "{err:?}");
    }
}
