//! `toolhost journal`: what the effect journal of a work dir holds, and the
//! warning `serve` gives at start when an earlier run left indeterminate effects.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use toolhost::Host;
use toolhost::journal::Effect;

/// `toolhost journal [--indeterminate] [--json] [--work-dir DIR]`
#[derive(Args)]
pub(crate) struct JournalArgs {
    /// Only the calls that began and never settled (their effects are unknown).
    #[arg(long)]
    indeterminate: bool,
    /// Print one JSON array of records.
    #[arg(long)]
    json: bool,
    /// The work dir whose journal to read.
    #[arg(long, default_value = ".")]
    work_dir: PathBuf,
}

pub(crate) fn run(args: &JournalArgs) -> anyhow::Result<ExitCode> {
    let data = toolhost::default_data_dir().context("no data dir is known (set TOOLHOST_DATA_DIR)")?;
    let work =
        args.work_dir.canonicalize().with_context(|| format!("--work-dir {}", args.work_dir.display()))?;
    let log = toolhost::journal::read(&data, Some(&work))
        .with_context(|| format!("reading the journal under {}", data.display()))?;
    let effects: Vec<&Effect> =
        log.effects.iter().filter(|e| !args.indeterminate || e.is_indeterminate()).collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&effects)?)?;
    } else {
        for effect in &effects {
            writeln!(out, "{}", line(effect))?;
        }
        if log.torn_lines > 0 {
            eprintln!("toolhost: {} journal line(s) were cut short by a crash and skipped", log.torn_lines);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `TIME  TOOL  CALL_ID  OUTCOME  PATHS`
fn line(effect: &Effect) -> String {
    let b = &effect.begin;
    let outcome = match &effect.settle {
        Some(s) if s.ok => format!("ok in {} ms", s.duration_ms),
        Some(s) => format!("failed {} in {} ms", s.code.as_deref().unwrap_or("?"), s.duration_ms),
        None if effect.host_alive => {
            format!("running? (its host, pid {}, still runs)", effect.pid.unwrap_or(0))
        }
        None => "INDETERMINATE".to_string(),
    };
    format!("{}  {}  {}  {}  {}", b.time, b.tool, b.call_id, outcome, b.paths.join(" "))
}

/// Log a warning when earlier runs on this work dir left calls that never settled.
pub(crate) fn warn_indeterminate(host: &Host) {
    let Some(journal) = host.journal() else { return };
    let open: Vec<&Effect> = journal.previous().indeterminate().filter(|e| !e.host_alive).collect();
    if open.is_empty() {
        return;
    }
    let tools: Vec<String> =
        open.iter().take(5).map(|e| format!("{} {}", e.begin.tool, e.begin.call_id)).collect();
    tracing::warn!(
        "{} call(s) of an earlier run began and never settled, so their effects are unknown ({}{}); \
         see `toolhost journal --indeterminate --work-dir {}`",
        open.len(),
        tools.join(", "),
        if open.len() > 5 { ", …" } else { "" },
        host.work_dir().map(|d| d.display().to_string()).unwrap_or_else(|| ".".into()),
    );
}
