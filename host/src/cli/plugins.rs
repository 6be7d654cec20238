//! `toolhost inspect` and `toolhost add`: what a component asks for, and its
//! policy entry (written by `add`, only shown by `inspect`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Args;
use serde_json::json;
use toolhost::ExecGrant;
use toolhost::GrantSource;
use toolhost::Inspection;
use toolhost::policy::{POLICY_FILE, PluginEntryDraft};
use toolhost::{Engine, EngineSettings, FsGrant, HostPattern, Limits, PluginGrants, Sockets};

/// The grants to write into (or judge) a component's policy entry.
#[derive(Args, Clone)]
pub(crate) struct EntryArgs {
    /// The entry's name (default: the file name without `.wasm`).
    #[arg(long)]
    name: Option<String>,
    /// The policy file (default: toolhost.toml in the work dir).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The work dir whose toolhost.toml is meant.
    #[arg(long, default_value = ".")]
    work_dir: PathBuf,
    /// Work dir access: none, read or read-write (default: what its tools need).
    #[arg(long, value_parser = parse_fs)]
    filesystem: Option<FsGrant>,
    /// A host its fetch may reach (repeatable).
    #[arg(long = "allow-host", value_name = "PATTERN", value_parser = HostPattern::parse)]
    hosts: Vec<HostPattern>,
    /// An environment variable name (or glob) it may see (repeatable).
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// A program it may start through exec (a bare name; repeatable).
    #[arg(long = "allow-program", value_name = "NAME", value_parser = super::program_name)]
    programs: Vec<String>,
    /// Let it run shell command lines (`bash -c`) through exec.
    #[arg(long)]
    allow_shell: bool,
}

fn parse_fs(s: &str) -> Result<FsGrant, String> {
    match s {
        "none" => Ok(FsGrant::None),
        "read" => Ok(FsGrant::Read),
        "read-write" => Ok(FsGrant::ReadWrite),
        _ => Err(format!("`{s}`: expected none, read or read-write")),
    }
}

impl EntryArgs {
    fn policy_path(&self) -> PathBuf {
        self.policy.clone().unwrap_or_else(|| self.work_dir.join(POLICY_FILE))
    }

    /// The entry for `file`, from these flags and what the component asks for.
    fn draft(&self, file: &Path, report: &Inspection) -> anyhow::Result<PluginEntryDraft> {
        let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let name = self.name.clone().unwrap_or_else(|| {
            stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect()
        });
        let writes = report.tools.iter().any(|t| !t.read_only);
        // The programs a component starts run in the work dir: exec needs it too.
        let uses_work_dir = report.requested.filesystem || report.requested.exec;
        let filesystem = self.filesystem.unwrap_or(match (uses_work_dir, writes) {
            (false, _) => FsGrant::None,
            (true, false) => FsGrant::Read,
            (true, true) => FsGrant::ReadWrite,
        });
        let policy = self.policy_path();
        let dir = policy.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file = file.canonicalize().with_context(|| format!("{}", file.display()))?;
        let source =
            match dir.canonicalize().ok().and_then(|d| file.strip_prefix(d).ok().map(Path::to_path_buf)) {
                Some(rel) => rel,
                None => file.clone(),
            };
        Ok(PluginEntryDraft {
            name,
            source: source.to_string_lossy().into_owned(),
            sha256: report.sha256.clone(),
            filesystem,
            network: self.hosts.iter().map(|h| h.as_str().to_owned()).collect(),
            env: self.env.clone(),
            sockets: if report.requested.sockets { Sockets::Stub } else { Sockets::Refuse },
            exec: ExecGrant {
                programs: self.programs.clone(),
                shell: self.allow_shell,
                unconfined: false,
                commit: false,
            },
        })
    }
}

/// Inspect `file`, judging it against the grants its entry would have.
async fn examine(file: &Path, args: &EntryArgs) -> anyhow::Result<(Inspection, PluginEntryDraft)> {
    let engine = Engine::new(&EngineSettings::default())?;
    let first = toolhost::inspect_file(&engine, file, None).await?;
    let draft = args.draft(file, &first)?;
    let mut grants = PluginGrants::new(GrantSource::Policy { name: draft.name.clone() }, Limits::default());
    grants.fs = draft.filesystem;
    grants.net.hosts = args.hosts.clone();
    grants.sockets = draft.sockets;
    grants.exec = draft.exec.clone();
    let report = toolhost::inspect_file(&engine, file, Some(&grants)).await?;
    Ok((report, draft))
}

fn entry_toml(draft: &PluginEntryDraft) -> String {
    let list = |items: &[String]| items.iter().map(|i| format!("{i:?}")).collect::<Vec<_>>().join(", ");
    let mut text = format!(
        "[plugins.{}]\nsource = {:?}\nsha256 = {:?}\nfilesystem = {:?}\nnetwork = [{}]\nenv = [{}]\n",
        draft.name,
        draft.source,
        draft.sha256,
        draft.filesystem.as_str(),
        list(&draft.network),
        list(&draft.env)
    );
    if draft.sockets == Sockets::Stub {
        text.push_str("sockets = \"stub\"\n");
    }
    if !draft.exec.is_empty() {
        text.push_str(&format!(
            "exec = {{ programs = [{}], shell = {} }}\n",
            list(&draft.exec.programs),
            draft.exec.shell
        ));
    }
    text
}

fn print_report(
    out: &mut impl Write,
    file: &Path,
    report: &Inspection,
    draft: &PluginEntryDraft,
) -> std::io::Result<()> {
    writeln!(out, "file:    {}", file.display())?;
    writeln!(out, "sha256:  {}", report.sha256)?;
    writeln!(out, "size:    {} bytes", report.size)?;
    writeln!(out, "imports:")?;
    for import in &report.imports {
        writeln!(out, "  {import}")?;
    }
    let asks = &report.requested;
    writeln!(out, "asks for:")?;
    let yes = |b: bool, what: &str| if b { what.to_string() } else { "no".to_string() };
    writeln!(out, "  filesystem: {}", yes(asks.filesystem, "yes (a preopen, when granted)"))?;
    writeln!(out, "  network:    {}", yes(asks.fetch, "yes (pinned fetch: needs hosts)"))?;
    writeln!(
        out,
        "  sockets:    {}",
        yes(asks.sockets, "imported (only ever stubbed: every operation refused)")
    )?;
    writeln!(out, "  exec:       {}", yes(asks.exec, "yes (starts programs: needs a grant)"))?;
    writeln!(out, "  env:        {}", yes(asks.env, "can read the variables it is granted"))?;
    for unknown in &asks.unknown {
        writeln!(out, "  never provided: {unknown}")?;
    }
    writeln!(out, "tools:")?;
    for tool in &report.tools {
        let ro = if tool.read_only { " (read-only)" } else { "" };
        writeln!(out, "  {}{ro}: {}", tool.name, tool.description.lines().next().unwrap_or(""))?;
    }
    writeln!(out, "policy entry:\n{}", entry_toml(draft))?;
    if let Some(err) = &report.refused {
        writeln!(out, "refused: {err}")?;
    }
    Ok(())
}

/// `toolhost inspect FILE.wasm`
pub(crate) async fn inspect(file: &Path, args: &EntryArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let (report, draft) = examine(file, args).await?;
    let mut out = std::io::stdout().lock();
    if as_json {
        let doc = json!({
            "file": file,
            "sha256": report.sha256,
            "size": report.size,
            "imports": report.imports,
            "requested": report.requested,
            "tools": report.tools,
            "entry": entry_toml(&draft),
            "refused": report.refused.as_ref().map(|e| e.to_string()),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        print_report(&mut out, file, &report, &draft)?;
    }
    Ok(if report.refused.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `toolhost add FILE.wasm`
pub(crate) async fn add(file: &Path, args: &EntryArgs) -> anyhow::Result<ExitCode> {
    let (report, draft) = examine(file, args).await?;
    let mut out = std::io::stdout().lock();
    print_report(&mut out, file, &report, &draft)?;
    if let Some(unknown) = report.requested.unknown.first() {
        bail!("not added: it imports {unknown}, which the host never provides");
    }
    if report.requested.fetch && args.hosts.is_empty() {
        bail!(
            "not added: it imports toolhost:plugin/fetch; say which hosts it may reach with --allow-host PATTERN"
        );
    }
    if report.requested.exec && draft.exec.is_empty() {
        bail!(
            "not added: it imports toolhost:plugin/exec; say which programs it may start with --allow-program NAME \
             (or --allow-shell)"
        );
    }
    if let Some(err) = &report.refused {
        bail!("not added: {err}");
    }
    let path = args.policy_path();
    let config = super::trust::before_rewrite(&path, &args.work_dir)?;
    toolhost::policy::write_plugin_entry(&path, &draft)?;
    super::trust::after_rewrite(&path, config.as_ref())?;
    writeln!(out, "added plugins.{} to {} (and trusted it as it is now)", draft.name, path.display())?;
    Ok(ExitCode::SUCCESS)
}
