//! Command-line parsing and dispatch.

mod approve;
mod commands;
mod doctor;
mod doctor_text;
mod entry_diff;
mod journal;
mod list;
mod mcp_config;
mod new;
mod outside;
mod plugins;
mod progress;
mod publish;
mod registry;
mod remote;
mod servers;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use toolhost::policy::{LimitKey, LimitOverrides};
use toolhost::{Host, Limits};

/// Run an AI agent's tools as sandboxed WebAssembly components.
#[derive(Parser)]
#[command(name = "toolhost", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the available tools: one line each (name, kind, what it does).
    List {
        #[command(flatten)]
        host: HostArgs,
        /// Print JSON: tools (with schemas), plugins, limits.
        #[arg(long, conflicts_with = "long")]
        json: bool,
        /// Show each tool whole: where it comes from, what it may do, its
        /// description and arguments.
        #[arg(long)]
        long: bool,
    },
    /// Call one tool: toolhost call NAME 'ARGS_JSON'.
    Call {
        /// Tool name.
        name: String,
        /// Arguments as a JSON object (default `{}`).
        args: Option<String>,
        #[command(flatten)]
        host: HostArgs,
        /// Print the result as one JSON object: {call_id, ok, output, error, display,
        /// metadata, permission}, and omitted when the output was cut.
        #[arg(long)]
        json: bool,
    },
    /// Serve every tool to MCP clients over stdio (JSON-RPC on stdin/stdout), or
    /// with --http over Streamable HTTP at http://ADDR/mcp. A call that needs
    /// approval is asked of the client's user (MCP elicitation).
    Serve {
        #[command(flatten)]
        host: HostArgs,
        #[command(flatten)]
        http: Box<ServeArgs>,
    },
    /// Show a component's tools, imports, what they ask for and its sha256, and the
    /// policy entry `add` would write, without writing anything. FILE may be
    /// oci://HOST[:PORT]/REPO:TAG: pulled into memory and its signature verified
    /// (--trust-key, or --trust-identity/--trust-issuer/--trusted-root), then shown
    /// with who signed it and the manifest digest. With --server NAME: what the
    /// policy's MCP server NAME offers (it is started, confined) and how it is confined.
    Inspect {
        /// The component file, or oci://….
        #[arg(required_unless_present = "server")]
        file: Option<PathBuf>,
        /// The policy's MCP server to inspect ([servers.NAME]).
        #[arg(long, value_name = "NAME", conflicts_with = "file")]
        server: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        entry: plugins::EntryArgs,
        #[command(flatten)]
        signers: remote::SignerArgs,
        #[command(flatten)]
        registry: registry::RegistryArgs,
        /// With --server: let its proxy reach private and loopback addresses.
        #[arg(long, requires = "server")]
        allow_private_network: bool,
    },
    /// Approve a component: inspect it, show what it asks for, and write its policy
    /// entry (source, sha256, grants) to the policy file. SOURCE is a file,
    /// oci://HOST[:PORT]/REPO:TAG (or @sha256:DIGEST: pulled, its signature verified,
    /// the entry pinned to the manifest digest) or https://…/tool.wasm with --sha256.
    /// Exits 2 with the code (signature_missing, signature_invalid, digest_mismatch,
    /// too_large, …) and writes nothing when it refuses.
    Add {
        /// The component: FILE.wasm, oci://… or https://….
        source: String,
        #[command(flatten)]
        entry: plugins::EntryArgs,
        #[command(flatten)]
        signers: remote::SignerArgs,
        #[command(flatten)]
        registry: registry::RegistryArgs,
    },
    /// Re-resolve the tag of a registry entry, show what changed (digest, sha256,
    /// imports, tools) and ask before rewriting the entry.
    Update {
        #[command(flatten)]
        args: remote::NameArgs,
        #[command(flatten)]
        registry: registry::RegistryArgs,
        /// Rewrite without asking (scripts; without a terminal nothing is rewritten otherwise).
        #[arg(long)]
        yes: bool,
    },
    /// Remove the entry plugins.NAME from the policy file (and the [trust.keys] no
    /// other entry names).
    Remove(remote::NameArgs),
    /// Write a signing key pair: PREFIX.key (private, 0600, cosign's encrypted format)
    /// and PREFIX.pub.
    Keygen(publish::KeygenArgs),
    /// Push a component to a registry in the wasm OCI layout, signed with --key:
    /// toolhost publish FILE.wasm oci://HOST[:PORT]/REPO:TAG [--key PREFIX.key].
    Publish(publish::PublishArgs),
    /// Approve an MCP server: start it confined, show its tools and sandbox, and
    /// write its [servers.NAME] entry (its package's files and entry file pinned):
    /// toolhost add-server NAME -- PROG ARGS…
    AddServer(servers::AddServerArgs),
    /// Walk an MCP server's package again, show which files were added, removed or
    /// changed since it was pinned, and re-pin it when you agree (--yes for scripts):
    /// toolhost update-server NAME
    UpdateServer(servers::UpdateServerArgs),
    /// Trust the work dir's policy file as it is now: record its sha256 outside the
    /// work dir. A toolhost.toml inside the work dir that grants anything takes effect
    /// only when its exact bytes are trusted (a tool or a cloned repository may have
    /// written it).
    Trust(trust::TrustArgs),
    /// Create a tool project in ./NAME: toolhost new --lang rust|python|js NAME.
    New(new::NewArgs),
    /// Put back a file remove_file removed: toolhost restore ARTIFACT [--path P].
    /// Never overwrites an existing file.
    Restore {
        /// The artifact id remove_file returned.
        artifact: String,
        /// Where to put it, relative to the work dir (default: where it was).
        #[arg(long)]
        path: Option<String>,
        #[command(flatten)]
        host: HostArgs,
    },
    /// List the effect journal of a work dir: the calls that may have changed
    /// something, and how each ended; a call that began and never settled (the host
    /// died mid-call) is INDETERMINATE.
    Journal(journal::JournalArgs),
    /// Print the configuration an agent needs to use this binary as its MCP server:
    /// toolhost mcp-config claude-code|codex|cursor|vscode|claude-desktop|zed
    /// [--http URL --token-file F] (docs/agents.md).
    McpConfig(mcp_config::McpConfigArgs),
    /// What this machine supports and what follows: the kernel, Landlock, user
    /// namespaces, seccomp, the pids cgroup, the cache and data dirs, the policy and
    /// its trust, and which tools will work or refuse and why. Exits 1 when something
    /// the current policy needs is missing.
    Doctor {
        #[command(flatten)]
        host: HostArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// How to build the host: where tools work, which plugins, which limits.
#[derive(Args, Clone)]
pub(crate) struct HostArgs {
    /// The directory tools may see (the only preopened directory).
    #[arg(long, default_value = ".")]
    work_dir: PathBuf,
    /// Load a third-party component beside the builtins (repeatable).
    #[arg(long = "plugin", value_name = "FILE.wasm")]
    plugins: Vec<PathBuf>,
    /// Leave out the builtin tools.
    #[arg(long)]
    no_builtins: bool,
    /// Only offer these tools (comma-separated).
    #[arg(long, value_delimiter = ',')]
    tools: Option<Vec<String>>,
    /// Default per-call deadline in milliseconds.
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<String>,
    /// Per-call memory cap in MiB.
    #[arg(long, value_name = "MIB")]
    memory_mib: Option<String>,
    /// Per-call fuel (about one unit per wasm instruction).
    #[arg(long, value_name = "UNITS")]
    fuel: Option<String>,
    /// Bytes of output the model reads before the head + tail clamp.
    #[arg(long, value_name = "BYTES")]
    clamp_bytes: Option<String>,
    /// Per-call write quota in MiB: bytes a call's tool and its programs may write
    /// to files (`write_quota` past it).
    #[arg(long, value_name = "MIB")]
    write_mib: Option<String>,
    /// A host third-party plugins may fetch from: `docs.rs`, `*.example.com` or `*`
    /// (repeatable). Without any, a plugin that imports fetch is refused.
    #[arg(long = "allow-host", value_name = "PATTERN", value_parser = toolhost::HostPattern::parse)]
    allow_hosts: Vec<toolhost::HostPattern>,
    /// Let plugins fetch private, loopback and link-local addresses (unsafe: SSRF).
    #[arg(long)]
    allow_private_network: bool,
    /// The policy file (default: toolhost.toml in the work dir, when it exists).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Permission mode, over the policy's: default, plan, accept-edits or yolo.
    #[arg(long, value_parser = clap::value_parser!(toolhost::Mode))]
    mode: Option<toolhost::Mode>,
    /// Link `wasi:sockets` imports of --plugin components with every socket
    /// operation refused (runtimes such as componentize-py import them unused).
    #[arg(long)]
    stub_sockets: bool,
    /// A program --plugin components may start through exec (a bare name, resolved
    /// on the host's PATH outside the work dir; repeatable). The policy's
    /// `plugins.NAME.exec` does the same for its entries.
    #[arg(long = "allow-program", value_name = "NAME", value_parser = program_name)]
    allow_programs: Vec<String>,
    /// Let --plugin components run shell command lines (`bash -c`) through exec.
    #[arg(long)]
    allow_shell: bool,
    /// The HTML search endpoint `web_search` queries, with `{query}` where the
    /// query goes (default: DuckDuckGo's HTML endpoint).
    #[arg(long, env = "TOOLHOST_SEARCH_URL", value_name = "URL")]
    search_url: Option<String>,
}

/// `serve`'s transport flags.
#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Serve Streamable HTTP on this address (`127.0.0.1:8377`; port 0 picks a free
    /// one, printed on stderr) instead of stdio; the endpoint is /mcp.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// Require `Authorization: Bearer TOKEN`, the token read from FILE (mode 0600,
    /// at least 16 visible ASCII bytes).
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Listen on an address that is not loopback (needs --token-file).
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// A browser origin allowed besides the server's own, such as
    /// `https://app.example:443` (repeatable); any other Origin gets 403.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// An authority (`HOST:PORT`) clients reach this server by besides its own
    /// address, such as the load balancer's in front of several instances
    /// (repeatable); any other `Host` gets 403.
    #[arg(long = "allow-authority", value_name = "HOST:PORT", requires = "http", value_parser = authority)]
    allow_authorities: Vec<String>,
    /// The largest request body in bytes (413 beyond).
    #[arg(long, value_name = "BYTES", requires = "http")]
    max_body_bytes: Option<usize>,
    /// Requests one client address may have in flight (429 beyond).
    #[arg(long, value_name = "N", requires = "http")]
    calls_per_client: Option<usize>,
    /// Milliseconds a connection may take to send a request head or body, or idle.
    #[arg(long, value_name = "MS", requires = "http")]
    idle_timeout_ms: Option<u64>,
    /// Connections open at once (503 beyond).
    #[arg(long, value_name = "N", requires = "http")]
    max_connections: Option<usize>,
    /// Connections one client may have open (429 beyond; default 32).
    #[arg(long, value_name = "N", requires = "http")]
    connections_per_client: Option<usize>,
    /// Event streams (GET, subscriptions/listen) one client may have open (429 beyond; default 8).
    #[arg(long, value_name = "N", requires = "http")]
    streams_per_client: Option<usize>,
    /// Milliseconds an event stream may go without an event before it ends (default 300000).
    #[arg(long, value_name = "MS", requires = "http")]
    stream_idle_ms: Option<u64>,
    /// 2025-11-25 sessions kept at once; beyond, an idle one of the client holding
    /// the most is pushed out (default 1024).
    #[arg(long, value_name = "N", requires = "http")]
    max_sessions: Option<usize>,
    /// Sessions one client may hold; beyond, its least recently used idle one is
    /// pushed out (429 when all are busy; default 32).
    #[arg(long, value_name = "N", requires = "http")]
    sessions_per_client: Option<usize>,
    /// Milliseconds a session may go unused before it ends (default 300000).
    #[arg(long, value_name = "MS", requires = "http")]
    session_idle_ms: Option<u64>,
    /// A load balancer's address or network (`10.0.0.5`, `10.0.0.0/24`; repeatable):
    /// the client it names in X-Forwarded-For (or a PROXY header) gets the
    /// per-client limits; from other peers both are ignored.
    #[arg(long = "trusted-proxy", value_name = "ADDR[/BITS]", requires = "http", value_parser = network)]
    trusted_proxies: Vec<ipnet::IpNet>,
    /// Connections from a --trusted-proxy begin with a PROXY header, v1 or v2
    /// (haproxy's `send-proxy-v2`); one without it is closed.
    #[arg(long, requires = "trusted_proxies")]
    proxy_protocol: bool,
    /// Keep full outputs (what `read_output` reads) in this directory, which
    /// several `serve` instances on one machine may share, or in the Redis at
    /// `redis://[:PASSWORD@]HOST:PORT[/DB]`, which instances on several machines
    /// may share (default: `outputs` in the data dir).
    #[arg(long, value_name = "DIR|redis://HOST:PORT", value_parser = StoreAt::parse)]
    store: Option<StoreAt>,
    /// Seconds a store in Redis keeps an output (default 3600).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=30 * 24 * 3600))]
    store_expiry: Option<u64>,
    /// Seal approval questions (2026-07-28 `requestState`) with the key in FILE
    /// (mode 0600, at least 32 bytes), shared by every instance behind one
    /// endpoint; without it, a key of this process's own.
    #[arg(long, value_name = "FILE")]
    state_key_file: Option<PathBuf>,
    /// Seconds a client has to answer an approval question (default 300).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    approval_timeout: Option<u64>,
    /// Compile every plugin and start the policy's MCP servers before serving
    /// (default: a plugin the compile cache lacks compiles in the background and
    /// its tools are listed when ready, with tools/list_changed; a server starts at
    /// the first tools/list or call that needs it).
    #[arg(long)]
    eager: bool,
}

/// An address (a network of one) or a network in CIDR notation.
fn network(value: &str) -> Result<ipnet::IpNet, String> {
    value
        .parse::<ipnet::IpNet>()
        .or_else(|_| value.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map(|net| net.trunc())
        .map_err(|_| format!("{value:?} is not an address or ADDR/BITS"))
}

/// `HOST:PORT` as a `Host` header carries it: a name or address and a port, nothing else.
fn authority(value: &str) -> Result<String, String> {
    let parsed = http::uri::Authority::try_from(value).map_err(|e| format!("{value:?}: {e}"))?;
    if parsed.port_u16().is_none() || value.contains('@') || parsed.host().is_empty() {
        return Err(format!("{value:?} is not HOST:PORT"));
    }
    Ok(parsed.as_str().to_ascii_lowercase())
}

/// Where `serve` keeps full outputs.
#[derive(Debug, Clone)]
pub(crate) enum StoreAt {
    /// A directory.
    Dir(PathBuf),
    /// A Redis URL.
    Redis(String),
}

impl StoreAt {
    /// `redis://…` (or `rediss://…`) is a Redis; another `SCHEME://` is refused
    /// (it is not a directory anyone meant); anything else is a directory.
    fn parse(value: &str) -> Result<Self, String> {
        match value.split_once("://") {
            Some(("redis" | "rediss", _)) => Ok(Self::Redis(value.to_string())),
            Some((scheme, _)) if !scheme.is_empty() && !scheme.contains('/') => Err(format!(
                "{scheme}:// is not a store this host knows: give a directory or redis://HOST:PORT"
            )),
            _ if value.is_empty() => Err("give a directory or redis://HOST:PORT".into()),
            _ => Ok(Self::Dir(PathBuf::from(value))),
        }
    }
}

impl ServeArgs {
    /// How clients are asked about calls that need approval: the data dir's
    /// defaults for `host`, with --state-key-file and --approval-timeout.
    pub(crate) fn approvals(&self, host: &Host, key: Option<toolhost::StateKey>) -> toolhost::Approvals {
        let mut approvals = toolhost::Approvals::for_host(host);
        if let Some(key) = key {
            approvals = approvals.with_key(key);
        }
        if let Some(secs) = self.approval_timeout {
            approvals = approvals.with_timeout(std::time::Duration::from_secs(secs));
        }
        approvals
    }

    /// Refuse --token-file, --state-key-file and the store's directory when
    /// they are reached through `work_dir`.
    pub(crate) fn refuse_inside(&self, work_dir: &std::path::Path) -> anyhow::Result<()> {
        if let Some(file) = &self.token_file {
            outside::refuse_inside(work_dir, "--token-file", file)?;
        }
        if let Some(file) = &self.state_key_file {
            outside::refuse_inside(work_dir, "--state-key-file", file)?;
        }
        if let Some(StoreAt::Dir(dir)) = &self.store {
            outside::refuse_inside(work_dir, "--store", dir)?;
        }
        Ok(())
    }

    /// The --state-key-file key, read and checked.
    pub(crate) fn state_key(&self) -> anyhow::Result<Option<toolhost::StateKey>> {
        Ok(self.state_key_file.as_deref().map(toolhost::StateKey::from_file).transpose()?)
    }

    /// Where full outputs are kept: --store, else the data dir's `outputs`.
    pub(crate) fn store_at(&self) -> Option<StoreAt> {
        self.store.clone().or_else(|| toolhost::default_data_dir().map(|d| StoreAt::Dir(d.join("outputs"))))
    }

    /// Set the output store on `builder` (--store, --store-expiry).
    pub(crate) fn store(&self, builder: toolhost::HostBuilder) -> anyhow::Result<toolhost::HostBuilder> {
        let builder = match self.store_at() {
            None => builder,
            Some(StoreAt::Dir(dir)) => builder.output_store_dir(dir),
            Some(StoreAt::Redis(url)) => builder.output_store_redis(url),
        };
        Ok(match self.store_expiry {
            Some(_) if !matches!(self.store, Some(StoreAt::Redis(_))) => {
                anyhow::bail!("--store-expiry applies to a store in Redis (--store redis://HOST:PORT)")
            }
            Some(secs) => builder.output_store_expiry(std::time::Duration::from_secs(secs)),
            None => builder,
        })
    }

    /// The HTTP settings, when --http was given.
    pub(crate) fn settings(&self) -> anyhow::Result<Option<toolhost::HttpSettings>> {
        let Some(bind) = self.http else { return Ok(None) };
        let mut settings = toolhost::HttpSettings::new(bind);
        if let Some(file) = &self.token_file {
            settings.token = Some(toolhost::BearerToken::from_file(file)?);
        }
        settings.allow_remote = self.allow_remote;
        settings.allow_origins = self.allow_origins.clone();
        settings.allow_authorities = self.allow_authorities.clone();
        if let Some(n) = self.max_body_bytes {
            settings.max_body_bytes = n;
        }
        if let Some(n) = self.calls_per_client {
            settings.calls_per_client = n;
        }
        if let Some(ms) = self.idle_timeout_ms {
            settings.idle_timeout = std::time::Duration::from_millis(ms);
        }
        let ms = std::time::Duration::from_millis;
        for (flag, field) in [
            (self.max_connections, &mut settings.max_connections),
            (self.connections_per_client, &mut settings.connections_per_client),
            (self.streams_per_client, &mut settings.streams_per_client),
            (self.max_sessions, &mut settings.max_sessions),
            (self.sessions_per_client, &mut settings.sessions_per_client),
        ] {
            *field = flag.unwrap_or(*field);
        }
        for (flag, field) in [
            (self.stream_idle_ms, &mut settings.stream_idle),
            (self.session_idle_ms, &mut settings.session_idle),
        ] {
            *field = flag.map_or(*field, ms);
        }
        settings.trusted_proxies = self.trusted_proxies.clone();
        settings.proxy_protocol = self.proxy_protocol;
        Ok(Some(settings))
    }
}

/// A `--fs` value: the file access a grant gives.
pub(crate) fn parse_fs(s: &str) -> Result<toolhost::FsGrant, String> {
    match s {
        "none" => Ok(toolhost::FsGrant::None),
        "read" => Ok(toolhost::FsGrant::Read),
        "read-write" => Ok(toolhost::FsGrant::ReadWrite),
        _ => Err(format!("`{s}`: expected none, read or read-write")),
    }
}

pub(crate) fn program_name(name: &str) -> Result<String, String> {
    toolhost::ExecGrant::valid_program_name(name).map(|()| name.to_string())
}

impl HostArgs {
    /// The default limits with the limit flags applied; a bad value is an error
    /// naming its flag.
    fn limits(&self) -> anyhow::Result<Limits> {
        let mut overrides = LimitOverrides::default();
        for (key, text) in [
            (LimitKey::TimeoutMs, &self.timeout_ms),
            (LimitKey::MemoryMib, &self.memory_mib),
            (LimitKey::Fuel, &self.fuel),
            (LimitKey::ClampBytes, &self.clamp_bytes),
            (LimitKey::WriteMib, &self.write_mib),
        ] {
            if let Some(text) = text {
                overrides.set_text(key, text).map_err(|e| anyhow::anyhow!("--{e}"))?;
            }
        }
        Ok(overrides.apply(&Limits::default()))
    }

    /// Build the host, with progress on a terminal; `interactive`: ask on the terminal (when there is one) for calls
    /// the permissions leave open, instead of denying them; `journal`: it runs calls, so
    /// it journals them (in the data dir).
    pub(crate) async fn build(&self, interactive: bool, journal: bool) -> anyhow::Result<Host> {
        let mut builder = self.builder(interactive, journal)?;
        if let Some(progress) = progress::if_terminal() {
            builder = builder.progress(progress);
        }
        Ok(builder.build().await?)
    }

    /// The builder [`HostArgs::build`] builds.
    pub(crate) fn builder(&self, interactive: bool, journal: bool) -> anyhow::Result<toolhost::HostBuilder> {
        outside::refuse_state_inside(&self.work_dir)?;
        let limits = self.limits()?;
        let policy = toolhost::Policy::discover(self.policy.as_deref(), &self.work_dir)?;
        let network = toolhost::NetworkSettings {
            allow_private: self.allow_private_network,
            plugin_hosts: self.allow_hosts.clone(),
            ..toolhost::NetworkSettings::default()
        };
        let mut builder = Host::builder()
            .work_dir(&self.work_dir)
            .limits(limits)
            .network(network)
            .policy(policy)
            .stub_sockets(self.stub_sockets)
            .sandbox_unavailable(doctor::sandbox_without()?)
            .journal(journal)
            .plugin_exec(toolhost::ExecGrant {
                programs: self.allow_programs.clone(),
                shell: self.allow_shell,
                unconfined: false,
                commit: false,
            });
        if let Some(mode) = self.mode {
            builder = builder.mode(mode);
        }
        if interactive && let Some(approver) = approve::TerminalApprover::if_terminal() {
            builder = builder.approver(std::sync::Arc::new(approver));
        }
        if self.no_builtins {
            builder = builder.without_builtins();
        }
        if let Some(url) = &self.search_url {
            builder = builder.plugin_env("builtin:web", "TOOLHOST_SEARCH_URL", url);
        }
        for plugin in &self.plugins {
            builder = builder.plugin_file(plugin);
        }
        if let Some(tools) = &self.tools {
            builder = builder.allow_tools(tools.clone());
        }
        Ok(builder)
    }
}

/// Parse, run, and turn the outcome into an exit status.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLHOST_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    // A worker per core, MCP over stdio included. A one-thread runtime for
    // stdio was measured (issue 21, BENCHMARKS.md): 7-10 % less CPU and latency
    // per sequential call, but calls in flight then share one core: 16
    // pipelined calls 25 % slower, and the 60 s soak's mixed concurrent calls
    // 16,357 → 6,392. It was not kept.
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolhost: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::List { host, json, long } => commands::list(&host, json, long).await,
            Command::Call { name, args, host, json } => {
                commands::call(&host, &name, args.as_deref(), json).await
            }
            Command::Inspect { file, server, json, entry, signers, registry, allow_private_network } => {
                match (file, server) {
                    (_, Some(name)) => {
                        let args = entry.policy_args(allow_private_network);
                        servers::inspect(&name, &args, json).await
                    }
                    (Some(file), None) if file.to_str().is_some_and(|f| f.starts_with("oci://")) => {
                        remote::inspect(file.to_str().unwrap_or_default(), &entry, &signers, &registry, json)
                            .await
                    }
                    (Some(file), None) => plugins::inspect(&file, &entry, json).await,
                    (None, None) => unreachable!("clap requires FILE or --server"),
                }
            }
            Command::AddServer(args) => servers::add(&args).await,
            Command::UpdateServer(args) => servers::update(&args).await,
            Command::Add { source, entry, signers, registry } => {
                if source.contains("://") {
                    remote::add(&source, &entry, &signers, &registry).await
                } else {
                    plugins::add(std::path::Path::new(&source), &entry).await
                }
            }
            Command::Update { args, registry, yes } => remote::update(&args, &registry, yes).await,
            Command::Remove(args) => remote::remove(&args),
            Command::Keygen(args) => publish::keygen(&args),
            Command::Publish(args) => publish::publish(&args).await,
            Command::Serve { host, http } => commands::serve(&host, &http).await,
            Command::Trust(args) => trust::run(&args),
            Command::New(args) => new::run(&args),
            Command::Restore { artifact, path, host } => {
                commands::restore(&host, &artifact, path.as_deref()).await
            }
            Command::Journal(args) => journal::run(&args),
            Command::McpConfig(args) => mcp_config::run(&args),
            Command::Doctor { host, json } => doctor::run(&host, json).await,
        }
    });
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("toolhost: {err:#}");
            ExitCode::from(2)
        }
    }
}
