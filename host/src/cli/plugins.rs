//! `toolhost inspect` and `toolhost add`: what a component asks for, and its
//! policy entry (written by `add`, only shown by `inspect`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Args;
use serde_json::json;
use toolhost::policy::ConfigSource;
use toolhost::policy::{POLICY_FILE, PluginEntry, PluginEntryDraft, plugin_entry_toml};
use toolhost::{
    Engine, EngineSettings, ExecGrant, FsGrant, GrantSource, HostPattern, Inspection, Limits, PluginGrants,
    Sockets,
};

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
    pub(crate) work_dir: PathBuf,
    /// Work dir access: none, read or read-write (default: what its tools need).
    #[arg(long, value_parser = super::parse_fs)]
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
    /// A `wasi:config/store` value: `KEY=VALUE`, or `KEY` alone for the host
    /// variable of that name, taken at each start and redacted (repeatable).
    #[arg(long = "config", value_name = "KEY[=VALUE]")]
    config: Vec<String>,
    /// A typed-export tool that changes nothing (repeatable).
    #[arg(long = "read-only", value_name = "TOOL")]
    read_only: Vec<String>,
}

impl EntryArgs {
    /// Where `inspect --server` finds the server's entry.
    pub(crate) fn policy_args(&self, allow_private_network: bool) -> super::servers::PolicyArgs {
        super::servers::PolicyArgs::new(self.policy.clone(), self.work_dir.clone(), allow_private_network)
    }

    pub(crate) fn policy_path(&self) -> PathBuf {
        self.policy.clone().unwrap_or_else(|| self.work_dir.join(POLICY_FILE))
    }

    /// The entry's name: `--name`, or `stem` (the file name without `.wasm`, the
    /// repository's last part), every character but ASCII letters, digits and `_` made
    /// a `-`.
    fn entry_name(&self, stem: &str) -> anyhow::Result<String> {
        let name = match &self.name {
            Some(name) => name.clone(),
            None => {
                stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect()
            }
        };
        PluginEntry::check_name(&name).map_err(|e| anyhow::anyhow!("--name: {e}"))?;
        Ok(name)
    }

    /// The exec grant these flags give.
    fn exec(&self) -> ExecGrant {
        ExecGrant {
            programs: self.programs.clone(),
            shell: self.allow_shell,
            unconfined: false,
            commit: false,
        }
    }

    /// The `config` table these flags give.
    fn config(&self) -> Vec<(String, ConfigSource)> {
        self.config
            .iter()
            .map(|c| match c.split_once('=') {
                Some((key, text)) => (key.to_string(), ConfigSource::Literal(text.to_string())),
                None => (c.clone(), ConfigSource::Env { env: c.clone() }),
            })
            .collect()
    }

    /// How the entry names the component file `file`: relative to the policy file's
    /// dir (with `..` when outside it), absolute when they share only `/`.
    pub(crate) fn file_source(&self, file: &Path) -> anyhow::Result<String> {
        let policy = self.policy_path();
        let dir = policy.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file = file.canonicalize().with_context(|| format!("{}", file.display()))?;
        let relative = dir.canonicalize().ok().and_then(|d| super::entry_diff::relative_to(&d, &file));
        Ok(relative.unwrap_or(file).to_string_lossy().into_owned())
    }

    /// The entry `name` for the component `candidate`, from these flags and what it asks for.
    fn draft(&self, candidate: &Candidate, name: String, report: &Inspection) -> PluginEntryDraft {
        let writes = report.tools.iter().any(|t| !t.read_only);
        // The programs a component starts run in the work dir: exec needs it too.
        let uses_work_dir = report.requested.filesystem || report.requested.exec;
        let filesystem = self.filesystem.unwrap_or(match (uses_work_dir, writes) {
            (false, _) => FsGrant::None,
            (true, false) => FsGrant::Read,
            (true, true) => FsGrant::ReadWrite,
        });
        PluginEntryDraft {
            name,
            source: candidate.source.clone(),
            sha256: report.sha256.clone(),
            filesystem,
            network: self.hosts.iter().map(|h| h.as_str().to_owned()).collect(),
            env: self.env.clone(),
            sockets: if report.requested.sockets { Sockets::Stub } else { Sockets::Refuse },
            exec: self.exec(),
            config: self.config(),
            read_only: self.read_only.clone(),
            remote: candidate.remote.clone(),
        }
    }
}

/// A component to judge for an entry: its bytes, what messages call it, and how the
/// entry names its source.
pub(crate) struct Candidate {
    /// The file, or the pinned reference.
    pub(crate) label: String,
    /// The component.
    pub(crate) bytes: Vec<u8>,
    /// The entry's `source`.
    pub(crate) source: String,
    /// The entry's name without `--name`.
    pub(crate) stem: String,
    /// What an `oci://` entry adds (signers, keys to trust).
    pub(crate) remote: Option<toolhost::policy::RemoteDraft>,
}

impl Candidate {
    /// The component file `file`.
    fn file(file: &Path, args: &EntryArgs) -> anyhow::Result<Self> {
        let bytes = toolhost::hostfs::read_regular_following(file, 512 << 20)
            .with_context(|| format!("{}", file.display()))?
            .with_context(|| format!("{}: no such file", file.display()))?;
        Ok(Self {
            label: file.display().to_string(),
            bytes,
            source: args.file_source(file)?,
            stem: file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
            remote: None,
        })
    }
}

/// Inspect `candidate` with one `toolhost::inspect_bytes` (one tool listing), judging it
/// against the grants its entry would have.
pub(crate) async fn examine(
    candidate: &Candidate,
    args: &EntryArgs,
) -> anyhow::Result<(Inspection, PluginEntryDraft)> {
    let name = args.entry_name(&candidate.stem)?;
    let mut engine = Engine::new(&EngineSettings::default())?;
    if let Some(progress) = super::progress::if_terminal() {
        engine = engine.with_progress(progress);
    }
    // The grants are known before the component is looked at, but for the two the
    // entry takes from what it asks for, neither of which decides whether it loads:
    // `filesystem` is a per-call preopen, not an import check, and the entry stubs
    // sockets exactly when it imports them (so stubbing them here is the same).
    let mut grants = PluginGrants::new(GrantSource::Policy { name: name.clone() }, Limits::default());
    grants.net.hosts = args.hosts.clone();
    grants.sockets = Sockets::Stub;
    grants.exec = args.exec();
    // Whether a config import is granted depends only on there being values: the
    // inspection never reads the host's variables.
    grants.config = args
        .config()
        .into_iter()
        .map(|(key, source)| toolhost::policy::ConfigValue {
            from_env: match &source {
                ConfigSource::Env { env } => Some(env.clone()),
                ConfigSource::Literal(_) => None,
            },
            value: String::new(),
            key,
        })
        .collect();
    grants.read_only = args.read_only.clone();
    let report = toolhost::inspect_bytes(&engine, &candidate.label, &candidate.bytes, Some(&grants)).await?;
    let draft = args.draft(candidate, name, &report);
    Ok((report, draft))
}

pub(crate) fn print_report(
    out: &mut impl Write,
    label: &str,
    report: &Inspection,
    draft: &PluginEntryDraft,
) -> std::io::Result<()> {
    writeln!(out, "source:  {label}")?;
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
        "  wasi:http:  {}",
        yes(asks.http, "yes (outgoing requests, through the pinned client: needs hosts)")
    )?;
    writeln!(
        out,
        "  sockets:    {}",
        yes(asks.sockets, "imported (only ever stubbed: every operation refused)")
    )?;
    writeln!(
        out,
        "  config:     {}",
        yes(asks.config, "yes (wasi:config/store: needs `config` in its entry)")
    )?;
    writeln!(out, "  exec:       {}", yes(asks.exec, "yes (starts programs: needs a grant)"))?;
    writeln!(out, "  env:        {}", yes(asks.env, "can read the variables it is granted"))?;
    for unknown in &asks.unknown {
        writeln!(out, "  never provided: {unknown}")?;
    }
    writeln!(out, "tools:{}", if report.typed { " (its exported functions)" } else { "" })?;
    for tool in &report.tools {
        let ro = if tool.read_only { " (read-only)" } else { "" };
        writeln!(out, "  {}{ro}: {}", tool.name, tool.description.lines().next().unwrap_or(""))?;
        if report.typed {
            writeln!(out, "    arguments: {}", tool.parameters)?;
        }
    }
    if !report.skipped.is_empty() {
        writeln!(out, "skipped functions (not tools):")?;
        for skipped in &report.skipped {
            writeln!(out, "  {}: {}", skipped.function, skipped.why)?;
        }
    }
    writeln!(out, "policy entry:\n{}", plugin_entry_toml(draft))?;
    if let Some(err) = &report.refused {
        writeln!(out, "refused: {err}")?;
    }
    Ok(())
}

/// `toolhost inspect FILE.wasm`
pub(crate) async fn inspect(file: &Path, args: &EntryArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let candidate = Candidate::file(file, args)?;
    let (report, draft) = examine(&candidate, args).await?;
    let mut out = std::io::stdout().lock();
    if as_json {
        let doc = json!({
            "file": file,
            "sha256": report.sha256,
            "size": report.size,
            "imports": report.imports,
            "requested": report.requested,
            "tools": report.tools,
            "typed": report.typed,
            "skipped": report.skipped,
            "entry": plugin_entry_toml(&draft),
            "refused": report.refused.as_ref().map(|e| e.to_string()),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        print_report(&mut out, &candidate.label, &report, &draft)?;
    }
    Ok(if report.refused.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `toolhost add FILE.wasm`
pub(crate) async fn add(file: &Path, args: &EntryArgs) -> anyhow::Result<ExitCode> {
    let candidate = Candidate::file(file, args)?;
    let (report, draft) = examine(&candidate, args).await?;
    let mut out = std::io::stdout().lock();
    print_report(&mut out, &candidate.label, &report, &draft)?;
    admit(&report, &draft, args)?;
    write_entry(&draft, args, &mut out)?;
    Ok(ExitCode::SUCCESS)
}

/// Refuse an entry the host would not load: an import it never provides, or one the
/// flags grant nothing for.
pub(crate) fn admit(report: &Inspection, draft: &PluginEntryDraft, args: &EntryArgs) -> anyhow::Result<()> {
    if let Some(unknown) = report.requested.unknown.first() {
        bail!("not added: it imports {unknown}, which the host never provides");
    }
    if (report.requested.fetch || report.requested.http) && args.hosts.is_empty() {
        let what =
            if report.requested.fetch { "toolhost:plugin/fetch" } else { "wasi:http/outgoing-handler" };
        bail!("not added: it imports {what}; say which hosts it may reach with --allow-host PATTERN");
    }
    if report.requested.config && draft.config.is_empty() {
        bail!(
            "not added: it imports wasi:config/store; give the values it reads with --config KEY=VALUE, \
             or --config KEY to take the host variable KEY"
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
    Ok(())
}

/// Write `draft` into the policy file (trusting what the user's own command wrote).
pub(crate) fn write_entry(
    draft: &PluginEntryDraft,
    args: &EntryArgs,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let path = args.policy_path();
    let config = super::trust::before_rewrite(&path, &args.work_dir)?;
    let before = super::entry_diff::entry_text(&path, &draft.name);
    toolhost::policy::write_plugin_entry(&path, draft)?;
    super::trust::after_rewrite(&path, config.as_ref())?;
    let Some(before) = before else {
        writeln!(out, "added plugins.{} to {} (and trusted it as it is now)", draft.name, path.display())?;
        return Ok(());
    };
    let after = super::entry_diff::entry_text(&path, &draft.name).unwrap_or_default();
    writeln!(out, "replaced plugins.{} in {}:", draft.name, path.display())?;
    write!(out, "{}", super::entry_diff::line_diff(&before, &after))?;
    writeln!(out, "(and trusted the file as it is now)")?;
    Ok(())
}
