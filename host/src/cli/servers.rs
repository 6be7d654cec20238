//! `toolhost inspect --server NAME`, `toolhost add-server NAME -- PROG ARGS…` and
//! `toolhost update-server NAME`: what an MCP server offers and how it is confined
//! (it is started, confined, to list its tools), its `[servers.NAME]` entry (written
//! by `add-server`, its package pinned whole), and what changed in its files since
//! (`update-server`, which re-pins them once the user agrees).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::Args;
use toolhost::policy::ServerTransport;
use toolhost::policy::{POLICY_FILE, ServerEntryDraft, ServerPinDraft, server_entry_toml, with_server_pin};
use toolhost::server_command::{Bounds, Manifest, Pins};
use toolhost::{FsGrant, Host, HostPattern, Policy, ServerReport};

/// Where the server's entry is, and who looks.
#[derive(Args, Clone)]
pub(crate) struct PolicyArgs {
    /// The policy file (default: toolhost.toml in the work dir).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The work dir whose toolhost.toml is meant (and the server's work dir).
    #[arg(long, default_value = ".")]
    work_dir: PathBuf,
    /// Let the server's proxy (or an HTTP server's URL) reach private, loopback and
    /// link-local addresses (unsafe: for local setups and tests).
    #[arg(long)]
    allow_private_network: bool,
}

impl PolicyArgs {
    pub(crate) fn new(policy: Option<PathBuf>, work_dir: PathBuf, allow_private_network: bool) -> Self {
        Self { policy, work_dir, allow_private_network }
    }

    fn policy_path(&self) -> PathBuf {
        self.policy.clone().unwrap_or_else(|| self.work_dir.join(POLICY_FILE))
    }

    /// A host holding only `policy`'s server `name` (no builtins, no plugins, no
    /// hooks), and that server's report after trying to start it.
    async fn report(&self, mut policy: Policy, name: &str) -> anyhow::Result<ServerReport> {
        policy.plugins.clear();
        policy.hooks.clear();
        policy.servers.retain(|s| s.name == name);
        if policy.servers.is_empty() {
            bail!("the policy has no [servers.{name}] entry");
        }
        let network =
            toolhost::NetworkSettings { allow_private: self.allow_private_network, ..Default::default() };
        let host = Host::builder()
            .work_dir(&self.work_dir)
            .without_builtins()
            .network(network)
            .policy(policy)
            .build()
            .await?;
        let report = host.server_report(name).await.context("the server vanished from the policy")?;
        Ok(report)
    }
}

/// `toolhost add-server`'s arguments.
#[derive(Args)]
pub(crate) struct AddServerArgs {
    /// The entry's name: its tools are offered as mcp__NAME__TOOL.
    name: String,
    /// The program and its arguments, after `--` (`-- node server.js`).
    #[arg(last = true, required = true, value_name = "PROG ARGS")]
    command: Vec<String>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Work dir access: none, read (the default) or read-write.
    #[arg(long, value_parser = super::parse_fs)]
    filesystem: Option<FsGrant>,
    /// A host it may reach through its proxy (repeatable; default: no network).
    #[arg(long = "allow-host", value_name = "PATTERN", value_parser = HostPattern::parse)]
    hosts: Vec<HostPattern>,
    /// An environment variable name (or glob) it sees (repeatable).
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// A directory it may read besides the system dirs (repeatable); the entry
    /// file's package (and an interpreter outside the system dirs) are added.
    #[arg(long = "read-dir", value_name = "DIR")]
    read_dirs: Vec<PathBuf>,
    /// Its working directory (default: the work dir).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Its address space, in MiB.
    #[arg(long, value_name = "MIB")]
    memory_mib: Option<i64>,
    /// Its CPU seconds, over its whole life.
    #[arg(long, value_name = "SECONDS")]
    cpu_seconds: Option<i64>,
    /// Processes (and threads) at once in its tree.
    #[arg(long, value_name = "N")]
    processes: Option<i64>,
    /// The default deadline of a call to one of its tools.
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<i64>,
    /// The files to pin (a directory, walked whole, or one file); default: the entry
    /// file's `node_modules` or `site-packages`, else its directory (or the file alone
    /// when that directory is a system dir or holds the work dir).
    #[arg(long, value_name = "PATH", conflicts_with = "unpinned")]
    package: Option<PathBuf>,
    /// Pin no package: it starts whatever its files become (`unpinned = true`).
    #[arg(long)]
    unpinned: bool,
}

/// `toolhost update-server`'s arguments.
#[derive(Args)]
pub(crate) struct UpdateServerArgs {
    /// The entry (`servers.NAME`).
    name: String,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Re-pin without asking (scripts; without a terminal nothing is rewritten otherwise).
    #[arg(long)]
    yes: bool,
}

/// Directories a server reads anyway: never added to `read-dirs`.
const SYSTEM: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// The package an entry file belongs to: its `node_modules` (or `site-packages`,
/// `dist-packages`), else its directory — or the file alone when that directory is a
/// system dir, `/`, or holds the work dir `work` (whose files change by design).
fn package_of(entry: &Path, work: &Path) -> PathBuf {
    let named = ["node_modules", "site-packages", "dist-packages"];
    if let Some(dir) =
        entry.ancestors().find(|a| a.file_name().is_some_and(|n| named.iter().any(|m| n == *m)))
    {
        return dir.to_path_buf();
    }
    match entry.parent() {
        Some(dir)
            if dir != Path::new("/")
                && !work.starts_with(dir)
                && !SYSTEM.iter().any(|s| dir.starts_with(s)) =>
        {
            dir.to_path_buf()
        }
        _ => entry.to_path_buf(),
    }
}

/// Where pinned packages' file lists are kept: the data dir's `server-pins`.
fn pins() -> anyhow::Result<Pins> {
    let data = toolhost::default_data_dir().context("no data dir is known (set TOOLHOST_DATA_DIR)")?;
    Ok(Pins::in_data_dir(&data))
}

/// Walk the package at `root`, keep its file list, and say what pins it.
fn pin_package(root: &Path, entry_sha256: Option<String>) -> anyhow::Result<(ServerPinDraft, Manifest)> {
    let manifest = Manifest::walk(root, &Bounds::default()).map_err(anyhow::Error::msg)?;
    let digest = pins()?.keep(&manifest).map_err(anyhow::Error::msg)?;
    let pin =
        ServerPinDraft { package: root.display().to_string(), package_sha256: digest, sha256: entry_sha256 };
    Ok((pin, manifest))
}

impl AddServerArgs {
    /// The entry these arguments describe: the program resolved, the entry file's
    /// sha256 pinned, the read-dirs it needs added.
    fn draft(&self, policy: &Policy) -> anyhow::Result<(ServerEntryDraft, PathBuf, Option<PathBuf>)> {
        let work = self
            .policy
            .work_dir
            .canonicalize()
            .with_context(|| self.policy.work_dir.display().to_string())?;
        let cwd = match &self.cwd {
            Some(dir) => dir.canonicalize().with_context(|| dir.display().to_string())?,
            None => work.clone(),
        };
        let search = policy.exec.search_path();
        let program = toolhost::server_command::find_program(&self.command[0], &cwd, &search)
            .map_err(anyhow::Error::msg)?;
        let entry = toolhost::server_command::entry_file(&self.command, &cwd, &program);
        let sha256 = toolhost::server_command::sha256_file(&entry).map_err(anyhow::Error::msg)?;
        let mut read_dirs: Vec<PathBuf> =
            self.read_dirs.iter().map(|d| d.canonicalize().unwrap_or(d.clone())).collect();
        let covered = |path: &Path, dirs: &[PathBuf]| {
            SYSTEM.iter().any(|s| path.starts_with(s))
                || path.starts_with(&work)
                || dirs.iter().any(|d| path.starts_with(d))
        };
        // The package the entry file belongs to (its node_modules, or its own dir),
        // and the prefix of an interpreter that lives outside the system dirs.
        let package = entry
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "node_modules" || n == "site-packages"))
            .or_else(|| entry.parent())
            .map(Path::to_path_buf);
        let pinned = match &self.package {
            Some(dir) => Some(dir.canonicalize().with_context(|| format!("--package {}", dir.display()))?),
            None if self.unpinned => None,
            None => Some(package_of(&entry, &work)),
        };
        let canonical = program.canonicalize().unwrap_or(program.clone());
        let prefix = canonical.parent().and_then(Path::parent).map(Path::to_path_buf);
        for dir in [package, prefix].into_iter().flatten() {
            if !covered(&dir, &read_dirs) && dir != Path::new("/") {
                read_dirs.push(dir);
            }
        }
        let limits = [
            ("memory-mib", self.memory_mib),
            ("cpu-seconds", self.cpu_seconds),
            ("processes", self.processes),
            ("timeout-ms", self.timeout_ms),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect();
        let draft = ServerEntryDraft {
            name: self.name.clone(),
            command: self.command.clone(),
            sha256: Some(sha256),
            cwd: self.cwd.as_ref().map(|c| c.display().to_string()),
            read_dirs: read_dirs.iter().map(|d| d.display().to_string()).collect(),
            filesystem: self.filesystem.unwrap_or(FsGrant::Read),
            network: self.hosts.iter().map(|h| h.as_str().to_string()).collect(),
            env: self.env.clone(),
            limits,
        };
        Ok((draft, entry, pinned))
    }
}

fn print_report(out: &mut impl Write, report: &ServerReport) -> std::io::Result<()> {
    writeln!(out, "server:    {}", report.name)?;
    writeln!(out, "transport: {}", report.transport)?;
    writeln!(out, "sandbox:")?;
    for line in &report.sandbox {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "tools:")?;
    for tool in &report.tools {
        let how = match (tool.spec.read_only, tool.instance) {
            (true, "read-only") => "read-only, in the read-only instance",
            (true, _) => "read-only",
            (false, _) => "destructive",
        };
        let summary = tool.spec.description.lines().next().unwrap_or("");
        writeln!(out, "  {} ({how}; its own name: {}): {summary}", tool.spec.name, tool.remote)?;
    }
    if !report.refused.is_empty() {
        writeln!(out, "left out:")?;
        for refused in &report.refused {
            writeln!(out, "  {}: {}", refused.tool, refused.why)?;
        }
    }
    if let Some(error) = &report.error {
        writeln!(out, "error: {error}")?;
    }
    Ok(())
}

/// `toolhost inspect --server NAME`
pub(crate) async fn inspect(name: &str, args: &PolicyArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let policy = Policy::discover(args.policy.as_deref(), &args.work_dir)?;
    let report = args.report(policy, name).await?;
    let mut out = std::io::stdout().lock();
    if as_json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_report(&mut out, &report)?;
    }
    Ok(if report.error.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `toolhost add-server NAME -- PROG ARGS…`
pub(crate) async fn add(args: &AddServerArgs) -> anyhow::Result<ExitCode> {
    toolhost::policy::PluginEntry::check_name(&args.name).map_err(|e| anyhow::anyhow!("NAME: {e}"))?;
    let path = args.policy.policy_path();
    let existing = Policy::discover(args.policy.policy.as_deref(), &args.policy.work_dir)
        .or_else(|_| Ok::<_, anyhow::Error>(Policy::default()))?;
    let (draft, entry, package) = args.draft(&existing)?;
    let pin = package.as_deref().map(|root| pin_package(root, draft.sha256.clone())).transpose()?;
    let text = with_server_pin(&server_entry_toml(&draft), &draft.name, pin.as_ref().map(|(p, _)| p));
    let mut policy = Policy::parse(&text, &path)?;
    policy.exec = existing.exec.clone();
    let report = args.policy.report(policy, &args.name).await?;
    let mut out = std::io::stdout().lock();
    print_report(&mut out, &report)?;
    writeln!(out, "entry file: {} (its sha256 is pinned)", entry.display())?;
    match &pin {
        Some((pin, manifest)) => {
            let (files, bytes) = manifest.totals();
            writeln!(
                out,
                "package: {} ({files} files, {bytes} bytes; every file pinned by package-sha256 {})",
                pin.package, pin.package_sha256
            )?;
        }
        None => writeln!(out, "package: not pinned (--unpinned): it starts whatever its files become")?,
    }
    writeln!(out, "policy entry:\n{text}")?;
    if let Some(error) = &report.error {
        bail!("not added: {error}");
    }
    let config = super::trust::before_rewrite(&path, &args.policy.work_dir)?;
    toolhost::policy::write_server_entry(&path, &draft)?;
    toolhost::policy::set_server_pin(&path, &draft.name, pin.as_ref().map(|(p, _)| p))?;
    super::trust::after_rewrite(&path, config.as_ref())?;
    writeln!(out, "added servers.{} to {} (and trusted it as it is now)", draft.name, path.display())?;
    Ok(ExitCode::SUCCESS)
}

/// At most this many paths of each kind are listed by `update-server`.
const MAX_LISTED: usize = 200;

/// `toolhost update-server NAME`: walk the server's package again, show what changed
/// since it was pinned, and re-pin it once the user agrees.
pub(crate) async fn update(args: &UpdateServerArgs) -> anyhow::Result<ExitCode> {
    let path = args.policy.policy_path();
    // Only a policy the user trusts as it is now is rewritten.
    let config = super::trust::before_rewrite(&path, &args.policy.work_dir)?;
    let policy = Policy::load(&path)?;
    let entry = policy
        .servers
        .iter()
        .find(|s| s.name == args.name)
        .with_context(|| format!("{}: no entry servers.{}", path.display(), args.name))?;
    let ServerTransport::Stdio(stdio) = &entry.transport else {
        bail!("servers.{} is reached over HTTP: it has no files here to pin", entry.name);
    };
    let work =
        args.policy.work_dir.canonicalize().with_context(|| args.policy.work_dir.display().to_string())?;
    let cwd = match &stdio.cwd {
        Some(dir) => dir.canonicalize().with_context(|| dir.display().to_string())?,
        None => work.clone(),
    };
    let program = toolhost::server_command::find_program(&stdio.command[0], &cwd, &policy.exec.search_path())
        .map_err(anyhow::Error::msg)?;
    let entry_file = toolhost::server_command::entry_file(&stdio.command, &cwd, &program);
    let entry_sha = toolhost::server_command::sha256_file(&entry_file).map_err(anyhow::Error::msg)?;
    let root =
        stdio.package.as_ref().map(|p| p.root.clone()).unwrap_or_else(|| package_of(&entry_file, &work));
    let now = Manifest::walk(&root, &Bounds::default()).map_err(anyhow::Error::msg)?;
    let digest = now.digest();
    let mut out = std::io::stdout().lock();
    let same_entry = stdio.sha256.as_ref().is_none_or(|sha| *sha == entry_sha);
    if stdio.package.as_ref().is_some_and(|p| p.sha256 == digest) && same_entry {
        writeln!(out, "servers.{} is up to date: {} still hashes to {digest}", entry.name, root.display())?;
        return Ok(ExitCode::SUCCESS);
    }
    let (files, bytes) = now.totals();
    writeln!(out, "servers.{}: package {} ({files} files, {bytes} bytes)", entry.name, root.display())?;
    match &stdio.package {
        None => writeln!(out, "  not pinned until now")?,
        Some(pin) => {
            writeln!(out, "  package-sha256: {} -> {digest}", pin.sha256)?;
            match pins()?.get(&pin.sha256) {
                None => {
                    writeln!(out, "  (the pinned file list is not kept here: what changed cannot be shown)")?
                }
                Some(old) => print_changes(&mut out, &old.changes(&now))?,
            }
        }
    }
    if !same_entry {
        writeln!(
            out,
            "  entry file {}: sha256 {} -> {entry_sha}",
            entry_file.display(),
            stdio.sha256.as_deref().unwrap_or("")
        )?;
    }
    if !(args.yes || super::approve::confirm(&format!("re-pin servers.{} to {digest}?", entry.name))?) {
        writeln!(out, "not re-pinned (answer y, or pass --yes)")?;
        return Ok(ExitCode::from(1));
    }
    pins()?.keep(&now).map_err(anyhow::Error::msg)?;
    let pin = ServerPinDraft {
        package: root.display().to_string(),
        package_sha256: digest,
        sha256: stdio.sha256.as_ref().map(|_| entry_sha),
    };
    toolhost::policy::set_server_pin(&path, &entry.name, Some(&pin))?;
    super::trust::after_rewrite(&path, config.as_ref())?;
    writeln!(out, "re-pinned servers.{} in {}", entry.name, path.display())?;
    Ok(ExitCode::SUCCESS)
}

/// The added (`+`), removed (`-`) and changed (`~`) paths, at most [`MAX_LISTED`] of each.
fn print_changes(out: &mut impl Write, changes: &toolhost::server_command::Changes) -> std::io::Result<()> {
    if changes.is_empty() {
        return writeln!(out, "  files: unchanged");
    }
    for (mark, paths) in [("+", &changes.added), ("-", &changes.removed), ("~", &changes.changed)] {
        for path in paths.iter().take(MAX_LISTED) {
            writeln!(out, "  {mark} {path}")?;
        }
        if paths.len() > MAX_LISTED {
            writeln!(out, "  {mark} … and {} more", paths.len() - MAX_LISTED)?;
        }
    }
    Ok(())
}
