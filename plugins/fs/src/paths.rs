//! Path helpers shared by the writing tools: symlink resolution, and the
//! paths the tools never write (`.git`, the host's configuration).

use std::path::{Component, Path, PathBuf};

use toolhost_guest::{Context, ToolError};

/// How many symlinks [`resolve_for_write`] follows before giving up (the
/// same bound as Linux's `ELOOP`).
const MAX_LINKS: usize = 40;

/// Resolve the path argument of a writing tool with the policy's
/// `follow-links` setting ([`crate::fresh::Settings`]): see
/// [`resolve_for_write_with`].
pub fn resolve_for_write(ctx: &Context, path: &str) -> Result<PathBuf, ToolError> {
    resolve_for_write_with(ctx, path, crate::fresh::Settings::from_env().follow_links)
}

/// Resolve the path argument of a writing tool: [`Context::resolve`], then
/// look at the existing part of the path one component at a time. A symlink
/// there is refused (`is_symlink`) unless `follow_links`, when it is followed
/// (lexically) so that the file actually written is the one checked. The
/// result must stay inside the work dir (`path_escape`) and must not be a
/// path the tools never write (`forbidden_path`, see [`check_writable`]).
///
/// The check and the write are two steps; a symlink swapped in between is
/// harmless: the write renames a new file over the path, which replaces the
/// link itself instead of writing where it points.
pub fn resolve_for_write_with(ctx: &Context, path: &str, follow_links: bool) -> Result<PathBuf, ToolError> {
    let root = ctx.work_dir()?.to_path_buf();
    let lexical = ctx.resolve(path)?;
    check_writable(ctx, &lexical)?;
    if !follow_links {
        refuse_links(ctx, &root, &lexical)?;
        return Ok(lexical);
    }
    let real = follow_links_in(&root, &lexical, path)?;
    if real != lexical {
        check_writable(ctx, &real)?;
    }
    Ok(real)
}

/// Refuse (`forbidden_path`) a path the tools never write: anything with a
/// `.git` component, the host's `toolhost.toml` at the work dir root, and
/// anything under `.toolhost/` at the root. Names are compared ignoring ASCII
/// case, for case-insensitive filesystems. `path` is absolute inside the
/// work dir (as returned by [`Context::resolve`]).
pub fn check_writable(ctx: &Context, path: &Path) -> Result<(), ToolError> {
    let root = ctx.work_dir()?;
    let rel = path.strip_prefix(root).map_err(|_| ToolError::path_escape(path.display()))?;
    let shown = ctx.show(path);
    let names: Vec<&str> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_str().unwrap_or("")),
            _ => None,
        })
        .collect();
    if names.iter().any(|n| n.eq_ignore_ascii_case(".git")) {
        return Err(ToolError::forbidden_path(
            shown,
            "the tools never write inside .git; use git itself for repository changes",
        ));
    }
    match names.as_slice() {
        [only] if only.eq_ignore_ascii_case("toolhost.toml") => Err(ToolError::forbidden_path(
            shown,
            "this is the toolhost configuration, which tools may not change",
        )),
        [first, ..] if first.eq_ignore_ascii_case(".toolhost") => Err(ToolError::forbidden_path(
            shown,
            "files under .toolhost/ belong to the host, which tools may not change",
        )),
        _ => Ok(()),
    }
}

/// `is_symlink` when an existing component of `path` (absolute, normalized,
/// inside `root`) below the root is a symlink, naming it and where it leads.
fn refuse_links(ctx: &Context, root: &Path, path: &Path) -> Result<(), ToolError> {
    let Ok(rel) = path.strip_prefix(root) else { return Ok(()) };
    let mut at = root.to_path_buf();
    for component in rel.components() {
        at.push(component);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&at).map(|t| t.display().to_string()).unwrap_or_default();
                return Err(ToolError::new(
                    toolhost_guest::codes::IS_SYMLINK,
                    format!(
                        "{} is a symlink (to {}); the tools do not write through symlinks here: name the file \
                         it points to",
                        ctx.show(&at),
                        toolhost_guest::quote_name(&target)
                    ),
                ));
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// Replace symlinks among the existing components of `path` (absolute,
/// normalized, inside `root`) by their targets. Components past the first
/// one that does not exist are kept as they are.
fn follow_links_in(root: &Path, path: &Path, given: &str) -> Result<PathBuf, ToolError> {
    let mut pending: Vec<PathBuf> = path.components().rev().map(|c| PathBuf::from(c.as_os_str())).collect();
    let mut out = PathBuf::new();
    let mut links = 0;
    let mut exists = true;
    while let Some(part) = pending.pop() {
        match part.components().next() {
            Some(Component::ParentDir) => {
                if !out.pop() {
                    return Err(ToolError::path_escape(given));
                }
                continue;
            }
            Some(Component::CurDir) | None => continue,
            Some(_) => out.push(&part),
        }
        // Only components below the root are looked at; the root itself is
        // the sandbox's business.
        if !exists || !out.starts_with(root) || out == root {
            continue;
        }
        match std::fs::symlink_metadata(&out) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(ToolError::invalid_args(format!("{given}: too many levels of symlinks")));
                }
                let target = std::fs::read_link(&out).map_err(|e| ToolError::io(&e, Path::new(given)))?;
                out.pop();
                if target.is_absolute() {
                    out = PathBuf::new();
                }
                pending.extend(target.components().rev().map(|c| PathBuf::from(c.as_os_str())));
            }
            Ok(_) => {}
            Err(_) => exists = false,
        }
    }
    if !out.starts_with(root) {
        return Err(ToolError::path_escape(given));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_guest::codes;

    fn ctx(dir: &Path) -> Context {
        Context::new("t", Some(dir.to_path_buf()))
    }

    #[test]
    fn forbidden_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        for p in [
            ".git/config",
            ".git",
            "sub/.git/HEAD",
            ".GIT/hooks/pre-commit",
            "toolhost.toml",
            "./toolhost.toml",
            ".toolhost/plugins.toml",
            ".toolhost",
            "a/../.git/x",
        ] {
            let err = resolve_for_write(&c, p).unwrap_err();
            assert_eq!(err.code, codes::FORBIDDEN_PATH, "{p}");
            assert!(
                err.message.contains("never write") || err.message.contains("may not change"),
                "{p}: {}",
                err.message
            );
        }
    }

    #[test]
    fn ordinary_paths_are_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        for p in
            ["src/main.rs", "sub/toolhost.toml", "sub/.toolhost/x", ".gitignore", ".github/ci.yml", "git/x"]
        {
            assert_eq!(resolve_for_write(&c, p).unwrap(), dir.path().join(p), "{p}");
        }
    }

    #[test]
    fn escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve_for_write(&ctx(dir.path()), "../x").unwrap_err();
        assert_eq!(err.code, codes::PATH_ESCAPE);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_into_git_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(".git/hooks", dir.path().join("hooks")).unwrap();
        std::os::unix::fs::symlink(".git/config", dir.path().join("cfg")).unwrap();
        let c = ctx(dir.path());
        for follow in [true, false] {
            let code = |p: &str| resolve_for_write_with(&c, p, follow).unwrap_err().code;
            let expected = if follow { codes::FORBIDDEN_PATH } else { codes::IS_SYMLINK };
            assert_eq!(code("hooks/pre-commit"), expected);
            assert_eq!(code("cfg"), expected);
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed_inside_the_work_dir() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("alias")).unwrap();
        std::os::unix::fs::symlink("../real/f.txt", dir.path().join("real/link")).unwrap();
        let c = ctx(dir.path());
        let follow = |p: &str| resolve_for_write_with(&c, p, true);
        assert_eq!(follow("alias/new.txt").unwrap(), dir.path().join("real/new.txt"));
        assert_eq!(follow("alias/link").unwrap(), dir.path().join("real/f.txt"));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_refused_unless_the_policy_follows_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("real/f.txt"), "x").unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("alias")).unwrap();
        std::os::unix::fs::symlink("f.txt", dir.path().join("real/link\n")).unwrap();
        let c = ctx(dir.path());
        let err = resolve_for_write_with(&c, "alias/new.txt", false).unwrap_err();
        assert_eq!(err.code, codes::IS_SYMLINK);
        assert!(err.message.starts_with("alias is a symlink (to real)"), "{}", err.message);
        let err = resolve_for_write_with(&c, "real/link\n", false).unwrap_err();
        assert!(err.message.starts_with("\"real/link\\n\" is a symlink (to f.txt)"), "{}", err.message);
        // Real files and new names are fine.
        assert_eq!(resolve_for_write_with(&c, "real/f.txt", false).unwrap(), dir.path().join("real/f.txt"));
        assert_eq!(resolve_for_write_with(&c, "real/new/x", false).unwrap(), dir.path().join("real/new/x"));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_work_dir_escape() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("../..", dir.path().join("up")).unwrap();
        let c = ctx(dir.path());
        assert_eq!(resolve_for_write_with(&c, "out/x", true).unwrap_err().code, codes::PATH_ESCAPE);
        assert_eq!(resolve_for_write_with(&c, "up/x", true).unwrap_err().code, codes::PATH_ESCAPE);
        assert_eq!(resolve_for_write_with(&c, "out/x", false).unwrap_err().code, codes::IS_SYMLINK);
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let err = resolve_for_write_with(&ctx(dir.path()), "a", true).unwrap_err();
        assert_eq!(err.code, codes::INVALID_ARGS);
        assert!(err.message.contains("symlinks"), "{}", err.message);
    }
}
