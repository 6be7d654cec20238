//! `toolhost doctor`: what this machine supports and what follows from it. The
//! kernel and each sandbox feature (`toolhost::SandboxProbe`), whether a confined
//! child starts, the compile cache, data and config dirs, the policy and its trust,
//! and which tools will work and which will refuse, and why. Exit 0 when everything
//! the current policy needs is here, 1 when something is missing, 2 on a usage error.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};
use toolhost::{SandboxFeature, SandboxProbe};

use super::HostArgs;

/// The variable naming sandbox features to treat as missing (`landlock,seccomp`):
/// to see what refuses on a machine without them. It only ever takes features away.
pub(crate) const WITHOUT_VAR: &str = "TOOLHOST_SANDBOX_WITHOUT";

/// The features [`WITHOUT_VAR`] names; an unknown name is an error naming the variable.
pub(crate) fn sandbox_without() -> anyhow::Result<Vec<SandboxFeature>> {
    let Some(text) = std::env::var_os(WITHOUT_VAR) else { return Ok(Vec::new()) };
    let text = text.to_string_lossy();
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|name| SandboxFeature::parse(name).map_err(|e| anyhow::anyhow!("{WITHOUT_VAR}: {e}")))
        .collect()
}

/// One of the host's own dirs, as found.
struct DirState {
    role: &'static str,
    path: Option<PathBuf>,
    exists: bool,
    writable: bool,
    bytes: u64,
    files: u64,
}

impl DirState {
    fn of(role: &'static str, path: Option<PathBuf>) -> Self {
        let mut state = Self { role, path: path.clone(), exists: false, writable: false, bytes: 0, files: 0 };
        let Some(path) = path else { return state };
        state.exists = path.is_dir();
        // A dir that is not there yet is made on first use in its nearest existing parent.
        let probe = path.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/"));
        state.writable =
            rustix::fs::access(probe, rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK).is_ok();
        if state.exists {
            (state.bytes, state.files) = usage(&path);
        }
        state
    }

    fn json(&self) -> Value {
        json!({"role": self.role, "path": self.path, "exists": self.exists, "writable": self.writable,
               "bytes": self.bytes, "files": self.files})
    }
}

/// Bytes and files under `dir`, links not followed, at most 100,000 entries looked at.
fn usage(dir: &Path) -> (u64, u64) {
    let (mut bytes, mut files, mut seen, mut stack) = (0, 0, 0u32, vec![dir.to_path_buf()]);
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            seen += 1;
            if seen > 100_000 {
                return (bytes, files);
            }
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => (bytes, files) = (bytes + m.len(), files + 1),
                Err(_) => {}
            }
        }
    }
    (bytes, files)
}

/// What doctor found, and what it makes of it.
struct Findings {
    doc: Value,
    problems: Vec<String>,
}

/// `toolhost doctor`
pub(crate) async fn run(args: &HostArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let without = sandbox_without()?;
    let findings = examine(args, without).await;
    let mut out = std::io::stdout().lock();
    if as_json {
        writeln!(out, "{}", serde_json::to_string_pretty(&findings.doc)?)?;
    } else {
        super::doctor_text::print(&mut out, &findings.doc)?;
    }
    Ok(if findings.problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

async fn examine(args: &HostArgs, without: Vec<SandboxFeature>) -> Findings {
    let mut problems = Vec::new();
    // The policy first: its exec settings say where children's cgroups go.
    let policy = toolhost::Policy::discover(args.policy.as_deref(), &args.work_dir);
    let mut settings = policy.as_ref().map(|p| p.exec.clone()).unwrap_or_default();
    settings.unavailable.extend(without.iter().copied());
    let probe = SandboxProbe::run(&settings);
    let features: Vec<Value> = probe
        .checks
        .iter()
        .map(|c| {
            json!({"name": c.feature.name(), "title": c.feature.title(), "available": c.available,
                   "required": c.required, "detail": c.detail})
        })
        .collect();

    let dirs = [
        DirState::of("cache", toolhost::EngineSettings::default().cache_dir),
        DirState::of("data", toolhost::default_data_dir()),
        DirState::of("config", toolhost::policy::ConfigDir::from_env().map(|c| c.root().to_path_buf())),
    ];
    for dir in &dirs {
        match (&dir.path, dir.writable) {
            (None, _) => problems.push(format!(
                "no {} dir: set HOME (or TOOLHOST_{}_DIR)",
                dir.role,
                dir.role.to_uppercase()
            )),
            // The cache only saves compile time; the data dir holds the journal and
            // artifacts, the config dir the trust records: both are needed.
            (Some(path), false) if dir.role != "cache" => {
                problems.push(format!("the {} dir {} is not writable", dir.role, path.display()))
            }
            _ => {}
        }
    }

    let policy_doc = match &policy {
        Ok(p) => policy_json(p, &args.work_dir),
        Err(e) => {
            problems.push(format!("the policy is refused: {e}"));
            json!({"error": e.to_string()})
        }
    };

    let mut tools = Vec::new();
    let mut children = json!(null);
    if policy.is_ok() {
        match build(args, without).await {
            Ok(host) => {
                let available = host.exec_runtime().availability();
                children = json!({"ok": available.is_ok(), "error": available.as_ref().err()});
                for tool in host.registry().iter() {
                    let needs = needs_sandbox(tool);
                    let refusal = match (&available, needs) {
                        (Err(why), true) => Some(format!("{}: {why}", toolhost::codes::SANDBOX_UNAVAILABLE)),
                        _ => None,
                    };
                    if let Some(why) = &refusal {
                        problems.push(format!("{} will refuse: {why}", tool.spec().name));
                    }
                    tools.push(
                        json!({"name": tool.spec().name, "source": tool.source(), "needs_sandbox": needs,
                                      "works": refusal.is_none(), "refusal": refusal}),
                    );
                }
                let hooks = policy.as_ref().map(command_hooks).unwrap_or_default();
                if let (Err(why), false) = (&available, hooks.is_empty()) {
                    problems.push(format!(
                        "the command hooks ({}) will fail every call they match: {why}",
                        hooks.join(", ")
                    ));
                }
            }
            Err(e) => problems.push(format!("the host does not load: {e:#}")),
        }
    }
    let doc = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "kernel": probe.kernel,
        "root": probe.root,
        "sandbox": {"features": features, "children": children},
        "dirs": dirs.iter().map(DirState::json).collect::<Vec<_>>(),
        "policy": policy_doc,
        "tools": tools,
        "problems": problems,
        "ok": problems.is_empty(),
    });
    Findings { doc, problems }
}

/// The host `list` would build, with the features treated as missing.
async fn build(args: &HostArgs, without: Vec<SandboxFeature>) -> anyhow::Result<toolhost::Host> {
    Ok(args.builder(false, false)?.sandbox_unavailable(without).build().await?)
}

/// Whether `tool` starts processes in the sandbox: a component granted exec (not
/// `unconfined`), or the host's `run_tests`.
fn needs_sandbox(tool: &toolhost::Tool) -> bool {
    match tool.plugin() {
        Some(plugin) => plugin.exec().is_some() && !plugin.grants().exec.unconfined,
        None => tool.source() == toolhost::NATIVE_SOURCE && tool.spec().name == "run_tests",
    }
}

/// The labels of the policy's hooks that run a command.
fn command_hooks(policy: &toolhost::Policy) -> Vec<String> {
    policy
        .hooks
        .iter()
        .filter(|h| matches!(h.action, toolhost::policy::HookAction::Command(_)))
        .map(|h| h.label())
        .collect()
}

/// The policy files and whether each is trusted.
fn policy_json(policy: &toolhost::Policy, work_dir: &Path) -> Value {
    let config = toolhost::policy::ConfigDir::from_env();
    let work = work_dir.canonicalize().unwrap_or_else(|_| work_dir.to_path_buf());
    let files: Vec<Value> = policy
        .files
        .iter()
        .map(|file| {
            let inside = toolhost::policy::inside(file, &work);
            let bytes = toolhost::hostfs::read_text(file, toolhost::policy::MAX_POLICY_BYTES).ok().flatten();
            let sha256 = bytes.map(|t| toolhost::policy::sha256_hex(t.as_bytes()));
            let trusted = config.as_ref().and_then(|c| c.trusted(file));
            let trust = match (inside, &sha256) {
                (false, _) => "outside the work dir (yours)",
                (true, Some(sha)) if trusted.as_deref() == Some(sha.as_str()) => "trusted",
                (true, _) => "not trusted (applies because it only narrows)",
            };
            json!({"path": file, "sha256": sha256, "trust": trust})
        })
        .collect();
    json!({"files": files, "mode": policy.mode.as_str(), "widens": policy.widening()})
}
