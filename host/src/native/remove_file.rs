//! `remove_file` and `restore_file`: a removal that can be undone.
//!
//! Native tools, not guest ones: the removed file's bytes must be kept outside
//! the work dir, in the host's data dir, which no guest can reach (and a narrow
//! "save this artifact" import would let any component fill the host's disk).
//! They hold what they need as values — the work dir, the protected paths, the
//! [`Artifacts`] store, the policy's `require-fresh` — and reach the work dir
//! only through [`WorkFile`]: confined with cap-std, the final name never
//! followed, protected paths judged on the real path. Both are destructive (never
//! retried) and reach the permissions with their `path` like `write_file`.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::artifacts::{Artifacts, Record, parse_id};
use super::workfile::{Entry, WorkFile};
use super::{NativeCall, NativeOutput, NativeTool};
use crate::error::{CallError, codes};
use crate::load::spec::ToolSpec;
use confine::Protected;

/// What both tools work on.
#[derive(Clone)]
pub(crate) struct FileStore {
    pub(crate) work_dir: PathBuf,
    pub(crate) protected: Option<Arc<Protected>>,
    /// `None`: the host knows no data dir, so nothing can be kept (and nothing removed).
    pub(crate) artifacts: Option<Artifacts>,
    /// The policy's `require-fresh`: `expected_sha256` is mandatory.
    pub(crate) require_fresh: bool,
}

impl FileStore {
    fn artifacts(&self) -> Result<&Artifacts, CallError> {
        self.artifacts.as_ref().ok_or_else(|| {
            CallError::new(
                codes::HOST_ERROR,
                "this host has no data dir to keep removed files in; nothing was removed",
            )
        })
    }
}

/// `remove_file`.
pub(crate) struct RemoveFile(pub(crate) FileStore);

/// `restore_file`.
pub(crate) struct RestoreFile(pub(crate) FileStore);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RemoveArgs {
    /// The regular file to remove: relative to the work directory.
    path: String,
    /// Its sha256 as read_file showed it: when the file changed since, nothing is removed.
    expected_sha256: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RestoreArgs {
    /// The artifact id remove_file returned.
    artifact: String,
    /// Where to put it back (default: where it was); never over an existing file.
    path: Option<String>,
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes))
}

impl RemoveFile {
    fn remove(&self, args: Value) -> Result<NativeOutput, CallError> {
        let args: RemoveArgs = super::parse_args(args)?;
        let expected = args
            .expected_sha256
            .as_deref()
            .map(|h| parse_id("expected_sha256", h).map_err(|m| CallError::new(codes::INVALID_ARGS, m)))
            .transpose()?;
        let store = &self.0;
        let artifacts = store.artifacts()?;
        let file = WorkFile::open(&store.work_dir, &args.path, store.protected.as_deref(), false)?;
        let shown = file.rel.display().to_string();
        let Entry::File { mode } = file.entry()? else {
            return Err(CallError::new(codes::NOT_FOUND, format!("{shown} does not exist")));
        };
        let bytes = file.read(artifacts.max_bytes())?;
        let now = sha256(&bytes);
        match expected {
            None if store.require_fresh => {
                return Err(CallError::new(
                    codes::STALE_FILE,
                    format!(
                        "{shown} exists and this host requires expected_sha256 to remove it: read it first"
                    ),
                ));
            }
            Some(expected) if expected != now => {
                return Err(CallError::new(
                    codes::STALE_FILE,
                    format!(
                        "{shown} changed since it was read: expected_sha256 {}…, its sha256 is now {now} ({} bytes); \
                         nothing was removed. Read it again and retry with the new sha256.",
                        &expected[..12],
                        bytes.len()
                    ),
                ));
            }
            _ => {}
        }
        let record = Record { path: shown.clone(), mode, bytes: bytes.len() as u64 };
        let saved =
            artifacts.save(&bytes, &record).map_err(|e| CallError::new(codes::HOST_ERROR, e.to_string()))?;
        file.remove()?;
        let mut content = format!(
            "Removed {shown} ({} bytes). Its bytes are kept as artifact {}: restore_file with that artifact brings it back.",
            bytes.len(),
            saved.id
        );
        if !saved.evicted.is_empty() {
            content.push_str(&format!(
                " The artifact store was full: {} older artifact(s) were evicted ({}).",
                saved.evicted.len(),
                saved.evicted.join(", ")
            ));
        }
        Ok(NativeOutput {
            content,
            metadata: Some(json!({
                "path": shown,
                "artifact": saved.id,
                "sha256": now,
                "bytes": bytes.len(),
                "evicted": saved.evicted,
            })),
        })
    }
}

impl RestoreFile {
    fn restore(&self, args: Value) -> Result<NativeOutput, CallError> {
        let args: RestoreArgs = super::parse_args(args)?;
        self.run(&args.artifact, args.path.as_deref())
    }

    /// Restore the artifact `artifact` at `path` (default: where it was).
    pub(crate) fn run(&self, artifact: &str, path: Option<&str>) -> Result<NativeOutput, CallError> {
        let id = parse_id("artifact", artifact).map_err(|m| CallError::new(codes::INVALID_ARGS, m))?;
        let store = &self.0;
        let Some((bytes, record)) =
            store.artifacts()?.load(&id).map_err(|e| CallError::new(codes::HOST_ERROR, e.to_string()))?
        else {
            return Err(CallError::new(
                codes::ARTIFACT_NOT_FOUND,
                format!("no artifact {id} is kept (never saved, or evicted since)"),
            ));
        };
        let path = path.map(str::to_string).unwrap_or(record.path);
        let file = WorkFile::open(&store.work_dir, &path, store.protected.as_deref(), true)?;
        let shown = file.rel.display().to_string();
        file.create_new(&bytes, record.mode)?;
        Ok(NativeOutput {
            content: format!("Restored {shown} ({} bytes) from artifact {id}.", bytes.len()),
            metadata: Some(json!({"path": shown, "artifact": id, "bytes": bytes.len(), "sha256": id})),
        })
    }
}

impl NativeTool for RemoveFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "remove_file".into(),
            description: "Remove a regular file of the work directory, recoverably: its complete bytes are kept \
                first as an artifact outside the work dir, and the result names its id (`metadata.artifact`) for \
                restore_file. Pass the sha256 read_file showed as `expected_sha256`: if the file changed since, \
                nothing is removed (`stale_file`). Refuses directories (`is_directory`), symlinks (`is_symlink`) \
                and protected paths. The store keeps a bounded number of artifacts; the oldest are evicted, and \
                the result says so."
                .into(),
            parameters: super::args_schema::<RemoveArgs>(),
            read_only: false,
            destructive: true,
            timeout_ms: None,
        }
    }

    fn call<'a>(
        &'a self,
        args: Value,
        _call: NativeCall<'a>,
    ) -> BoxFuture<'a, Result<NativeOutput, CallError>> {
        Box::pin(async move { self.remove(args) })
    }
}

impl NativeTool for RestoreFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "restore_file".into(),
            description: "Bring back a file remove_file removed: give its `artifact` id, and optionally `path` \
                (default: where it was). Never overwrites: an existing file there is refused (`already_exists`). \
                An unknown or evicted id is `artifact_not_found`."
                .into(),
            parameters: super::args_schema::<RestoreArgs>(),
            read_only: false,
            destructive: true,
            timeout_ms: None,
        }
    }

    fn call<'a>(
        &'a self,
        args: Value,
        _call: NativeCall<'a>,
    ) -> BoxFuture<'a, Result<NativeOutput, CallError>> {
        Box::pin(async move { self.restore(args) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(work: &std::path::Path, data: &std::path::Path, count: usize) -> FileStore {
        FileStore {
            work_dir: work.canonicalize().unwrap(),
            protected: Some(Arc::new(Protected::new(work.canonicalize().unwrap()))),
            artifacts: Some(Artifacts::with_bounds(data, count, 1 << 20)),
            require_fresh: false,
        }
    }

    #[test]
    fn remove_then_restore_and_never_overwrite() {
        let (work, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(work.path().join("a.txt"), "hello").unwrap();
        let s = store(work.path(), data.path(), 10);
        let out = RemoveFile(s.clone()).remove(json!({"path": "a.txt"})).unwrap();
        let meta = out.metadata.unwrap();
        let id = meta["artifact"].as_str().unwrap().to_string();
        assert_eq!(id, sha256(b"hello"));
        assert!(out.content.contains(&id), "{}", out.content);
        assert!(!work.path().join("a.txt").exists());
        RestoreFile(s.clone()).restore(json!({"artifact": id})).unwrap();
        assert_eq!(std::fs::read_to_string(work.path().join("a.txt")).unwrap(), "hello");
        let err = RestoreFile(s.clone()).restore(json!({"artifact": id})).unwrap_err();
        assert_eq!(err.code, codes::ALREADY_EXISTS);
        RestoreFile(s.clone()).restore(json!({"artifact": id, "path": "sub/b.txt"})).unwrap();
        assert_eq!(std::fs::read_to_string(work.path().join("sub/b.txt")).unwrap(), "hello");
        let err = RestoreFile(s).restore(json!({"artifact": "0".repeat(64)})).unwrap_err();
        assert_eq!(err.code, codes::ARTIFACT_NOT_FOUND);
    }

    #[test]
    fn stale_hashes_links_dirs_and_escapes_remove_nothing() {
        let (work, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("a"), "now").unwrap();
        std::fs::write(outside.path().join("victim"), "precious").unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim"), work.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), work.path().join("out")).unwrap();
        std::fs::create_dir_all(work.path().join("d/.git")).unwrap();
        std::fs::write(work.path().join("d/.git/config"), "x").unwrap();
        std::os::unix::fs::symlink("d/.git", work.path().join("g")).unwrap();
        let mut s = store(work.path(), data.path(), 10);
        let remove = |s: &FileStore, args: Value| RemoveFile(s.clone()).remove(args).unwrap_err().code;
        assert_eq!(remove(&s, json!({"path": "a", "expected_sha256": sha256(b"then")})), codes::STALE_FILE);
        assert_eq!(remove(&s, json!({"path": "a", "expected_sha256": "abc"})), codes::INVALID_ARGS);
        assert_eq!(remove(&s, json!({"path": "link"})), codes::IS_SYMLINK);
        assert_eq!(remove(&s, json!({"path": "out/victim"})), codes::PATH_ESCAPE);
        assert_eq!(remove(&s, json!({"path": "../a"})), codes::PATH_ESCAPE);
        assert_eq!(remove(&s, json!({"path": "d"})), codes::IS_DIRECTORY);
        assert_eq!(remove(&s, json!({"path": "g/config"})), codes::PERMISSION_DENIED);
        assert_eq!(remove(&s, json!({"path": "missing"})), codes::NOT_FOUND);
        s.require_fresh = true;
        assert_eq!(remove(&s, json!({"path": "a"})), codes::STALE_FILE);
        assert_eq!(std::fs::read_to_string(work.path().join("a")).unwrap(), "now");
        assert_eq!(std::fs::read_to_string(outside.path().join("victim")).unwrap(), "precious");
        assert!(work.path().join("d/.git/config").exists());
        RemoveFile(s.clone()).remove(json!({"path": "a", "expected_sha256": sha256(b"now")})).unwrap();
        s.artifacts = None;
        std::fs::write(work.path().join("b"), "b").unwrap();
        assert_eq!(remove(&s, json!({"path": "b"})), codes::HOST_ERROR);
        assert!(work.path().join("b").exists());
    }

    #[test]
    fn evictions_are_said_in_the_result() {
        let (work, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let s = store(work.path(), data.path(), 1);
        for name in ["a", "b"] {
            std::fs::write(work.path().join(name), name).unwrap();
        }
        RemoveFile(s.clone()).remove(json!({"path": "a"})).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let out = RemoveFile(s.clone()).remove(json!({"path": "b"})).unwrap();
        assert!(out.content.contains("1 older artifact(s) were evicted"), "{}", out.content);
        assert_eq!(out.metadata.unwrap()["evicted"], json!([sha256(b"a")]));
        let err = RestoreFile(s).restore(json!({"artifact": sha256(b"a")})).unwrap_err();
        assert_eq!(err.code, codes::ARTIFACT_NOT_FOUND);
    }
}
