//! The policy's exec parts: what the builtin tools may run and see (`[builtins]`),
//! how children are bounded (`[exec]`), and the test profiles `run_tests` may run
//! (`[tests.NAME]`).
//!
//! ```toml
//! [builtins]
//! env = ["LANG", "CI", "RUST_*"]        # what env_get shows and children get
//! reveal = ["DATABASE_URL"]             # secret-looking names env_get shows anyway
//! exec = { programs = ["git"], shell = true, commit = true }   # commit: children may write .git data
//!
//! [exec]
//! max-children = 4
//! path = ["/root/.cargo/bin"]           # searched after the system dirs
//! read-dirs = ["/root/.rustup"]         # children may read (and run) these too
//! limits = { cpu-seconds = 600, memory-mib = 4096, file-size-mib = 1024, processes = 256, output-bytes = 4194304 }
//!
//! [tests.unit]
//! command = "cargo"
//! args = ["test", "--offline"]
//! cwd = "."                             # inside the work dir
//! timeout-ms = 600000
//! filter = true                         # run_tests may append one filter argument
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::env::EnvName;
use crate::imports::exec::{ChildLimits, ExecGrant, ExecSettings};

/// What the builtin tools get: the variables they (and their children) see, the ones
/// `env_get` may show although they look secret, and what `terminal` and `git` may run.
#[derive(Debug, Clone)]
pub struct BuiltinsPolicy {
    /// Environment variable names (or globs) granted to the builtins.
    pub env: Vec<EnvName>,
    /// Secret-looking names whose values `env_get` shows.
    pub reveal: Vec<String>,
    /// Programs the builtins may start.
    pub exec: ExecGrant,
}

impl Default for BuiltinsPolicy {
    fn default() -> Self {
        let env = ["LANG", "LC_*", "TZ", "CI"].iter().filter_map(|n| EnvName::parse(n).ok()).collect();
        Self { env, reveal: Vec::new(), exec: default_builtin_exec() }
    }
}

/// The builtins' exec grant when the policy says nothing: `git` for the `git` tool
/// and the shell profile for `terminal` (which asks for approval in `default` mode).
pub(crate) fn default_builtin_exec() -> ExecGrant {
    ExecGrant { programs: vec!["git".into()], shell: true, unconfined: false, commit: false }
}

/// A test profile: the only commands `run_tests` runs. Nothing in it comes from a
/// model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TestProfile {
    /// Its name (`[tests.NAME]`).
    pub name: String,
    /// The program: a bare name, resolved like every allow-listed program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Working directory, relative to the work dir.
    pub cwd: PathBuf,
    /// When to kill it.
    pub timeout: Duration,
    /// Whether `run_tests` may append one `filter` argument.
    pub filter: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawExecGrant {
    #[serde(default)]
    programs: Vec<Spanned<String>>,
    #[serde(default)]
    shell: bool,
    #[serde(default)]
    unconfined: bool,
    #[serde(default)]
    commit: bool,
}

impl RawExecGrant {
    pub(super) fn parse(&self) -> Result<ExecGrant, (std::ops::Range<usize>, String)> {
        for p in &self.programs {
            ExecGrant::valid_program_name(p.get_ref()).map_err(|e| (p.span(), e))?;
        }
        Ok(ExecGrant {
            programs: self.programs.iter().map(|p| p.get_ref().clone()).collect(),
            shell: self.shell,
            unconfined: self.unconfined,
            commit: self.commit,
        })
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawBuiltins {
    env: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    reveal: Vec<String>,
    exec: Option<RawExecGrant>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawExec {
    max_children: Option<usize>,
    #[serde(default)]
    path: Vec<String>,
    #[serde(default)]
    read_dirs: Vec<String>,
    #[serde(default)]
    limits: RawChildLimits,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawChildLimits {
    cpu_seconds: Option<u64>,
    memory_mib: Option<Spanned<u64>>,
    file_size_mib: Option<Spanned<u64>>,
    processes: Option<u64>,
    output_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawTest {
    command: Spanned<String>,
    #[serde(default)]
    args: Vec<String>,
    cwd: Option<Spanned<String>>,
    timeout_ms: Option<u64>,
    #[serde(default)]
    filter: bool,
}

type Spanful<T> = Result<T, (std::ops::Range<usize>, String)>;

impl RawBuiltins {
    pub(super) fn parse(&self) -> Spanful<BuiltinsPolicy> {
        let mut out = BuiltinsPolicy::default();
        if let Some(env) = &self.env {
            out.env = env
                .iter()
                .map(|n| EnvName::parse(n.get_ref()).map_err(|e| (n.span(), format!("builtins.env: {e}"))))
                .collect::<Result<_, _>>()?;
        }
        out.reveal = self.reveal.clone();
        if let Some(exec) = &self.exec {
            out.exec = exec.parse()?;
        }
        Ok(out)
    }
}

impl RawExec {
    pub(super) fn parse(&self, base: &Path) -> Spanful<ExecSettings> {
        let defaults = ChildLimits::default();
        let l = &self.limits;
        Ok(ExecSettings {
            max_children: self.max_children.unwrap_or(ExecSettings::default().max_children),
            path: self.path.iter().map(|p| base.join(p)).collect(),
            read_dirs: self.read_dirs.iter().map(|p| base.join(p)).collect(),
            cgroup_parent: None,
            unavailable: Vec::new(),
            limits: ChildLimits {
                cpu_seconds: l.cpu_seconds.unwrap_or(defaults.cpu_seconds),
                memory_bytes: mib_bytes(l.memory_mib.as_ref(), "memory-mib")?
                    .unwrap_or(defaults.memory_bytes),
                file_size_bytes: mib_bytes(l.file_size_mib.as_ref(), "file-size-mib")?
                    .unwrap_or(defaults.file_size_bytes),
                processes: l.processes.unwrap_or(defaults.processes),
                output_bytes: l.output_bytes.unwrap_or(defaults.output_bytes),
            },
        })
    }
}

/// The bytes of `exec.limits.KEY = MIB`, refused when they do not fit in 64 bits.
fn mib_bytes(mib: Option<&Spanned<u64>>, key: &str) -> Spanful<Option<u64>> {
    let Some(mib) = mib else { return Ok(None) };
    let value = *mib.get_ref();
    let bytes = value.checked_mul(1 << 20).ok_or_else(|| {
        let most = u64::MAX >> 20;
        (
            mib.span(),
            format!("exec.limits.{key}: {value} MiB is more bytes than 64 bits hold (at most {most})"),
        )
    })?;
    Ok(Some(bytes))
}

impl RawTest {
    pub(super) fn parse(&self, name: &str) -> Spanful<TestProfile> {
        ExecGrant::valid_program_name(self.command.get_ref())
            .map_err(|e| (self.command.span(), format!("tests.{name}.command: {e}")))?;
        let cwd = match &self.cwd {
            Some(c) => {
                let path = PathBuf::from(c.get_ref());
                if path.is_absolute()
                    || path.components().any(|p| matches!(p, std::path::Component::ParentDir))
                {
                    return Err((
                        c.span(),
                        format!("tests.{name}.cwd: `{}` must be inside the work dir", c.get_ref()),
                    ));
                }
                path
            }
            None => PathBuf::from("."),
        };
        Ok(TestProfile {
            name: name.to_string(),
            command: self.command.get_ref().clone(),
            args: self.args.clone(),
            cwd,
            timeout: Duration::from_millis(self.timeout_ms.unwrap_or(600_000)),
            filter: self.filter,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::Policy;
    use std::path::Path;

    #[test]
    fn the_commit_grant_is_parsed_for_the_builtins_and_plugins() {
        let path = Path::new("/nowhere/toolhost.toml");
        let sha = "0".repeat(64);
        let text = format!(
            "[builtins]\nexec = {{ programs = [\"git\"], commit = true }}\n\n\
             [plugins.vcs]\nsource = \"vcs.wasm\"\nsha256 = \"{sha}\"\nexec = {{ programs = [\"git\"], commit = true }}\n\n\
             [plugins.plain]\nsource = \"p.wasm\"\nsha256 = \"{sha}\"\nexec = {{ programs = [\"git\"] }}\n"
        );
        let policy = Policy::parse(&text, path).unwrap();
        assert!(policy.builtins.exec.commit && policy.builtins.exec.programs == ["git"]);
        let commit = |name: &str| policy.plugins.iter().find(|p| p.name == name).unwrap().exec.commit;
        assert!(commit("vcs") && !commit("plain"));
        // Without it nothing may write .git data.
        assert!(!Policy::parse("", path).unwrap().builtins.exec.commit);
        let err = Policy::parse("[builtins]\nexec = { commit = \"yes\" }\n", path).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("invalid type"), "{err}");
    }

    /// `memory-mib` and `file-size-mib` are multiplied by 2^20: a value whose bytes do
    /// not fit in 64 bits is refused, naming the key and the value (it wrapped to a
    /// small limit before, 2^50 MiB to 0 bytes).
    #[test]
    fn a_size_in_mib_too_large_for_bytes_is_refused() {
        let path = Path::new("/nowhere/toolhost.toml");
        for key in ["memory-mib", "file-size-mib"] {
            let text = format!("[exec]\nlimits = {{ {key} = {} }}\n", 1u64 << 50);
            let err = Policy::parse(&text, path).unwrap_err().to_string();
            assert!(err.contains(&format!("exec.limits.{key}")), "{err}");
            assert!(err.contains("1125899906842624") && err.contains("line 2"), "{err}");
        }
        let most = u64::MAX >> 20;
        let text = format!("[exec]\nlimits = {{ memory-mib = {most}, file-size-mib = 1 }}\n");
        let limits = Policy::parse(&text, path).unwrap().exec.limits;
        assert_eq!((limits.memory_bytes, limits.file_size_bytes), (most << 20, 1 << 20));
    }
}
