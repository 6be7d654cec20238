//! Test-only tools that do to the filesystem exactly what they are told, with no
//! lexical checks of their own: every refusal must come from the host. Each returns
//! `{"ok": …}` or `{"error": KIND, "message": …}` as its output, so the tests can see
//! the precise error the guest got.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolhost_guest::prelude::*;

/// One filesystem operation.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Op {
    /// write, append, truncate, mkdir, rmdir, unlink, rename, symlink, hardlink,
    /// set_times, dir_write, read, list, open_many, stat.
    op: String,
    /// The path (relative to the work dir, used as given). Not named like a path
    /// argument, so the permissions don't look at it: the sandbox alone must refuse.
    at: String,
    /// The second path (rename/hardlink target, symlink text, dir_write file name).
    other: Option<String>,
    /// What to write.
    content: Option<String>,
    /// How many handles open_many holds.
    count: Option<u32>,
}

fn at(ctx: &Context, path: &str) -> Result<PathBuf, ToolError> {
    Ok(ctx.work_dir()?.join(Path::new(path)))
}

fn io(e: std::io::Error) -> Value {
    json!({"error": format!("{:?}", e.kind()), "message": e.to_string()})
}

fn run_op(op: &Op, ctx: &Context) -> Result<Value, ToolError> {
    let path = at(ctx, &op.at)?;
    let to = || op.other.clone().unwrap_or_default();
    let content = op.content.clone().unwrap_or_default();
    let result: std::io::Result<Value> = match op.op.as_str() {
        "write" => std::fs::write(&path, &content).map(|()| json!({"ok": "written"})),
        "append" => std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(content.as_bytes()))
            .map(|()| json!({"ok": "appended"})),
        "truncate" => std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map(|_| json!({"ok": "truncated"})),
        "mkdir" => std::fs::create_dir_all(&path).map(|()| json!({"ok": "made"})),
        "rmdir" => std::fs::remove_dir_all(&path).map(|()| json!({"ok": "removed"})),
        "unlink" => std::fs::remove_file(&path).map(|()| json!({"ok": "removed"})),
        "rename" => std::fs::rename(&path, at(ctx, &to())?).map(|()| json!({"ok": "renamed"})),
        "symlink" => {
            return Ok(match root(ctx).map(|r| r.symlink_at(&to(), &op.at)) {
                Some(Ok(())) => json!({"ok": "linked"}),
                Some(Err(code)) => json!({"error": format!("{code:?}")}),
                None => json!({"error": "no preopen"}),
            });
        }
        "hardlink" => std::fs::hard_link(&path, at(ctx, &to())?).map(|()| json!({"ok": "linked"})),
        "set_times" => std::fs::File::open(&path)
            .and_then(|f| f.set_modified(std::time::SystemTime::UNIX_EPOCH))
            .map(|()| json!({"ok": "touched"})),
        "dir_write" => return Ok(dir_write(op, ctx)),
        "read" => std::fs::File::open(&path)
            .and_then(|f| {
                let mut buf: Vec<u8> = Vec::new();
                f.take(1 << 16).read_to_end(&mut buf).map(|_| buf)
            })
            .map(|buf: Vec<u8>| json!({"ok": String::from_utf8_lossy(&buf)})),
        "list" => std::fs::read_dir(&path).map(|entries| {
            let mut names: Vec<Value> = Vec::new();
            let mut errors = 0;
            for entry in entries {
                match entry {
                    Ok(e) => names.push(json!(e.file_name().to_string_lossy())),
                    Err(_) => errors += 1,
                }
            }
            json!({"ok": names, "errors": errors})
        }),
        "open_many" => {
            let mut held = Vec::new();
            let mut error = Value::Null;
            for _ in 0..op.count.unwrap_or(100) {
                match std::fs::File::open(&path) {
                    Ok(f) => held.push(f),
                    Err(e) => {
                        error = io(e);
                        break;
                    }
                }
            }
            Ok(json!({"ok": held.len(), "stopped": error}))
        }
        "stat" => std::fs::symlink_metadata(&path).map(|m| json!({"ok": format!("{:?}", m.file_type())})),
        other => return Err(ToolError::invalid_args(format!("unknown op {other}"))),
    };
    Ok(result.unwrap_or_else(io))
}

/// The work dir's preopen as a raw descriptor.
fn root(ctx: &Context) -> Option<wasip2::filesystem::types::Descriptor> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .find(|(_, name)| ctx.work_dir().is_ok_and(|w| Path::new(name) == w))
        .map(|(dir, _)| dir)
}

/// Open the directory `path` as a handle, then create and write the file `to`
/// relative to that handle: a write that never names the whole path.
fn dir_write(op: &Op, ctx: &Context) -> Value {
    use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    let Some(root) = root(ctx) else {
        return json!({"error": "no preopen"});
    };
    let opened = root
        .open_at(PathFlags::SYMLINK_FOLLOW, &op.at, OpenFlags::DIRECTORY, DescriptorFlags::READ)
        .and_then(|dir| {
            dir.open_at(
                PathFlags::empty(),
                op.other.as_deref().unwrap_or("x"),
                OpenFlags::CREATE | OpenFlags::TRUNCATE,
                DescriptorFlags::WRITE,
            )
        })
        .and_then(|file| file.write(op.content.as_deref().unwrap_or("").as_bytes(), 0));
    match opened {
        Ok(n) => json!({"ok": n}),
        Err(code) => json!({"error": format!("{code:?}")}),
    }
}

fn fs_write(op: Op, ctx: &Context) -> Result<Output, ToolError> {
    Ok(Output::text(run_op(&op, ctx)?.to_string()))
}

fn fs_read(op: Op, ctx: &Context) -> Result<Output, ToolError> {
    Ok(Output::text(run_op(&op, ctx)?.to_string()))
}

fn tools() -> Vec<Tool> {
    vec![
        tool("fs", "Does one filesystem operation exactly as told.", fs_write),
        tool("fs_read", "Does one reading filesystem operation exactly as told.", fs_read).read_only(),
    ]
}

toolhost_guest::export_tools!(tools);
