//! `toolhost trust`: accept the work dir's policy file as it is now, by recording its
//! sha256 in the user's config dir (outside the work dir, where tools can't write).
//! A policy file inside the work dir that widens anything takes effect only when its
//! bytes are trusted; the user's own commands that write it (`add`) record the new
//! hash too.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use toolhost::Policy;
use toolhost::policy::{ConfigDir, MAX_POLICY_BYTES, POLICY_FILE};

/// Which policy file to trust.
#[derive(Args, Clone)]
pub(crate) struct TrustArgs {
    /// The work dir whose toolhost.toml is meant.
    #[arg(long, default_value = ".")]
    work_dir: PathBuf,
    /// The policy file (default: toolhost.toml in the work dir).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

/// The user's config dir, or why there is none.
pub(crate) fn config_dir() -> anyhow::Result<ConfigDir> {
    ConfigDir::from_env()
        .context("no config dir to record trust in: set TOOLHOST_CONFIG_DIR (or XDG_CONFIG_HOME or HOME)")
}

/// `toolhost trust`
pub(crate) fn run(args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let path = args.policy.clone().unwrap_or_else(|| args.work_dir.join(POLICY_FILE));
    let text = toolhost::hostfs::read_text(&path, MAX_POLICY_BYTES)
        .with_context(|| format!("{}", path.display()))?
        .with_context(|| format!("{}: no such file", path.display()))?;
    // Only a file the host can read back is worth trusting.
    let policy = Policy::parse(&text, &path)?;
    let config = config_dir()?;
    let sha = toolhost::policy::sha256_hex(text.as_bytes());
    config.trust(&path, &sha).with_context(|| format!("recording trust in {}", config.root().display()))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "trusted {} (sha256 {sha})", path.display())?;
    let widens = policy.widening();
    if widens.is_empty() {
        writeln!(out, "it only narrows what tools may do")?;
    } else {
        writeln!(out, "it grants: {}", widens.join("; "))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Before the user's command rewrites the policy file at `path` in `work_dir`: its
/// current bytes must be ones the user trusted (or only narrow), or the rewrite would
/// launder a tool's edit into a trusted file. Returns the config dir to record the
/// new hash in, when the file lies inside the work dir.
pub(crate) fn before_rewrite(path: &Path, work_dir: &Path) -> anyhow::Result<Option<ConfigDir>> {
    let work_dir = work_dir.canonicalize().with_context(|| format!("{}", work_dir.display()))?;
    if !toolhost::policy::inside(path, &work_dir) {
        return Ok(None);
    }
    let config = config_dir()?;
    if toolhost::hostfs::read_regular(path, MAX_POLICY_BYTES)
        .with_context(|| format!("{}", path.display()))?
        .is_some()
    {
        Policy::discover_in(Some(path), &work_dir, Some(&config)).with_context(|| {
            format!("not changed: {} must be trusted before toolhost rewrites it", path.display())
        })?;
    }
    Ok(Some(config))
}

/// After the user's command wrote the policy file: trust what it wrote.
pub(crate) fn after_rewrite(path: &Path, config: Option<&ConfigDir>) -> anyhow::Result<()> {
    if let Some(config) = config {
        config
            .trust_current(path)
            .with_context(|| format!("recording trust in {}", config.root().display()))?;
    }
    Ok(())
}
