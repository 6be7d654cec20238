//! The builtin system tools of toolhost: `terminal` (a shell command line)
//! and `git` (read-only inspection of the repository).
//!
//! Both start a program through the host's exec interface
//! ([`toolhost_guest::exec::run`]), so the plugin loads only when its policy
//! grants `exec`: `terminal` needs the shell profile, `git` the program
//! `git`. The host confines every child (the work dir only, no network,
//! resource limits, killed at its deadline); these tools check their
//! arguments before anything starts, and `git` builds its whole argument
//! vector itself ([`git::argv`]) from a closed set of choices. In a git work
//! dir, `terminal` also reports what the command changed ([`changes`]).

use toolhost_guest::{Context, Tool, ToolError, tool};

pub mod changes;
pub mod git;
pub mod status;
pub mod terminal;

/// The tools of this component, in the order the host lists them.
pub fn tools() -> Vec<Tool> {
    vec![
        tool("terminal", terminal::DESCRIPTION, terminal::run)
            .destructive()
            .timeout_ms(terminal::MAX_TIMEOUT_MS),
        tool("git", git::DESCRIPTION, git::run).read_only(),
    ]
}

toolhost_guest::export_tools!(tools);

/// `dir`, a directory the model named, as the exec interface's `cwd` takes
/// it: relative to the work dir, `None` for the work dir itself (`""` or
/// `.`), `path_escape` when it leaves the work dir.
pub(crate) fn work_dir_relative(ctx: &Context, dir: &str) -> Result<Option<String>, ToolError> {
    if dir.is_empty() || dir == "." {
        return Ok(None);
    }
    let full = ctx.resolve(dir)?;
    let shown = ctx.display(&full);
    Ok((shown != ".").then_some(shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_tools() {
        let names: Vec<String> =
            toolhost_guest::__dispatch::list(&tools()).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["terminal", "git"]);
    }

    #[test]
    fn specs() {
        let specs = toolhost_guest::__dispatch::list(&tools());
        let terminal = &specs[0];
        assert!(!terminal.read_only && terminal.destructive);
        assert_eq!(terminal.timeout_ms, Some(600_000));
        let git = &specs[1];
        assert!(git.read_only && !git.destructive);
    }

    /// Every property has one plain `type` (the host coerces by it) and a
    /// description (the model reads it); unknown fields are refused.
    #[test]
    fn schemas_type_and_describe_every_property() {
        use toolhost_guest::schemars::schema_for;
        let schemas = [("terminal", schema_for!(terminal::Args)), ("git", schema_for!(git::Args))];
        for (tool, schema) in schemas {
            let schema = schema.to_value();
            toolhost_guest::check_schema(tool, &schema).unwrap();
            assert!(!schema["properties"].as_object().unwrap().is_empty(), "{tool}");
        }
    }
}
