//! `grep_files` and `find_files` run by the host (`toolhost:plugin/search`):
//! a parallel search of the work dir, confined like the guest's own view of
//! it, whose results the tool formats. The request and result types are
//! [`toolhost_search`]'s.
//!
//! In a native build (unit tests) the same search runs in the process,
//! against the context's work dir.

pub use toolhost_search::{
    EntryKind, FileLines, FindRequest, FindResult, GrepRequest, GrepResult, Line, LineKind, SearchError,
    WalkCounts,
};

use crate::context::Context;
use crate::error::{ToolError, codes};

/// Run one grep (`req.path` as [`Context::resolve`] gave it).
pub fn grep(ctx: &Context, req: &GrepRequest) -> Result<GrepResult, ToolError> {
    let work_dir = ctx.work_dir()?;
    #[cfg(target_arch = "wasm32")]
    {
        let _ = work_dir;
        wasm::grep(req).map_err(tool_error)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        toolhost_search::grep(work_dir, req, &toolhost_search::Stop::default()).map_err(tool_error)
    }
}

/// Run one find (`req.path` as [`Context::resolve`] gave it).
pub fn find(ctx: &Context, req: &FindRequest) -> Result<FindResult, ToolError> {
    let work_dir = ctx.work_dir()?;
    #[cfg(target_arch = "wasm32")]
    {
        let _ = work_dir;
        wasm::find(req).map_err(tool_error)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        toolhost_search::find(work_dir, req, &toolhost_search::Stop::default()).map_err(tool_error)
    }
}

/// The code the model can act on for a search that did not run.
fn tool_error(e: SearchError) -> ToolError {
    let code = match &e {
        SearchError::InvalidArgs(_) => codes::INVALID_ARGS,
        SearchError::NotFound(_) => codes::NOT_FOUND,
        SearchError::Denied(_) => codes::ACCESS_DENIED,
        SearchError::Io(_) => codes::IO_ERROR,
        SearchError::Stopped => codes::TIMEOUT,
    };
    ToolError::new(code, e.to_string())
}

/// The import, with its types converted to and from [`toolhost_search`]'s.
#[cfg(target_arch = "wasm32")]
mod wasm {
    use super::*;
    use crate::bindings::toolhost::plugin::search as wit;

    pub(super) fn grep(req: &GrepRequest) -> Result<GrepResult, SearchError> {
        let found = wit::grep(&wit::GrepRequest {
            path: req.path.clone(),
            pattern: req.pattern.clone(),
            literal: req.literal,
            case_insensitive: req.case_insensitive,
            glob: req.glob.clone(),
            include_ignored: req.include_ignored,
            max_results: req.max_results,
            before: req.before,
            after: req.after,
        })
        .map_err(error)?;
        let line = |l: wit::Line| Line {
            number: l.number,
            kind: match l.kind {
                wit::LineKind::Matched => LineKind::Match,
                wit::LineKind::Context => LineKind::Context,
                wit::LineKind::Separator => LineKind::Break,
            },
            text: l.text,
        };
        Ok(GrepResult {
            files: found
                .files
                .into_iter()
                .map(|f| FileLines { path: f.path, lines: f.lines.into_iter().map(line).collect() })
                .collect(),
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

    pub(super) fn find(req: &FindRequest) -> Result<FindResult, SearchError> {
        let found = wit::find(&wit::FindRequest {
            path: req.path.clone(),
            pattern: req.pattern.clone(),
            kind: req.kind.map(|k| match k {
                EntryKind::File => wit::EntryKind::File,
                EntryKind::Dir => wit::EntryKind::Dir,
                EntryKind::Symlink => wit::EntryKind::Symlink,
            }),
            modified_since: req.modified_since,
            max_depth: req.max_depth,
            include_ignored: req.include_ignored,
            max_results: req.max_results,
        })
        .map_err(error)?;
        Ok(FindResult { paths: found.paths, total: found.total, walk: walk_counts(found.walk) })
    }

    fn walk_counts(c: wit::WalkCounts) -> WalkCounts {
        WalkCounts {
            skipped_dirs: c.skipped_dirs,
            ignored: c.ignored,
            unreadable_dirs: c.unreadable_dirs,
            unreadable_entries: c.unreadable_entries,
        }
    }

    fn error(e: wit::SearchError) -> SearchError {
        match e {
            wit::SearchError::InvalidArgs(m) => SearchError::InvalidArgs(m),
            wit::SearchError::NotFound(m) => SearchError::NotFound(m),
            wit::SearchError::Denied(m) => SearchError::Denied(m),
            wit::SearchError::Io(m) => SearchError::Io(m),
        }
    }
}
