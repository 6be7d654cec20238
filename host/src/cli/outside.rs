//! Start-up checks: the host's own secrets and state (`--token-file`,
//! `--state-key-file`, `--store DIR`, the data dir, the config dir) are
//! refused when they are reached through the work dir, where any tool that
//! reads (or, through a symlink it plants, redirects) could get at them.

use std::path::Path;

/// Refuse `path` (`what`: the flag or variable that names it) when it is
/// reached through `work_dir` ([`toolhost::reached_through`]). A work dir that
/// does not exist is left to the host's own check.
pub(crate) fn refuse_inside(work_dir: &Path, what: &str, path: &Path) -> anyhow::Result<()> {
    if !work_dir.is_dir() {
        return Ok(());
    }
    let reached = toolhost::reached_through(work_dir, path)
        .map_err(|e| anyhow::anyhow!("{what} {}: {e}", path.display()))?;
    let Some(at) = reached else { return Ok(()) };
    let through = if at.as_path() == path { String::new() } else { format!(" (at {})", at.display()) };
    anyhow::bail!(
        "{what} {} is inside the work dir {}{through}: any tool that reads the work dir could read it, \
         or plant a link there to choose what it is. Keep it outside the work dir.",
        path.display(),
        work_dir.display()
    )
}

/// Refuse the data dir and the config dir when they are inside `work_dir`.
pub(crate) fn refuse_state_inside(work_dir: &Path) -> anyhow::Result<()> {
    if let Some(data) = toolhost::default_data_dir() {
        refuse_inside(work_dir, "the data dir (TOOLHOST_DATA_DIR, XDG_DATA_HOME or HOME)", &data)?;
    }
    if let Some(config) = toolhost::default_config_dir() {
        let what = "the config dir, holding trust records (TOOLHOST_CONFIG_DIR, XDG_CONFIG_HOME or HOME)";
        refuse_inside(work_dir, what, &config)?;
    }
    Ok(())
}
