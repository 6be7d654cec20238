//! What every child gets: where programs are found ([`SYSTEM_PATH`], [`ExecSettings`]),
//! its limits ([`ChildLimits`]), the longest it may run ([`MAX_CHILD_TIME`]), and the kernel
//! features the sandbox needs ([`SandboxFeature`]; `probe` tries them).

use std::path::PathBuf;
use std::time::Duration;

/// Directories searched for allow-listed program names, before [`ExecSettings::path`].
pub const SYSTEM_PATH: &[&str] =
    &["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/// Resource limits of one child (and everything it starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildLimits {
    /// CPU seconds per process (`RLIMIT_CPU`; SIGXCPU, then SIGKILL a second later).
    pub cpu_seconds: u64,
    /// Address space per process in bytes (`RLIMIT_AS`): allocation fails beyond it.
    pub memory_bytes: u64,
    /// Largest file a process may write (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Processes (and threads) at once in the child's tree: the pids cgroup's
    /// `pids.max`, and `RLIMIT_NPROC` where that applies (not for root).
    pub processes: u64,
    /// Default and most bytes kept of each of stdout and stderr (4 MiB: a long failing
    /// build log reaches the output store whole, before anything is cut).
    pub output_bytes: u64,
}

impl Default for ChildLimits {
    fn default() -> Self {
        Self {
            cpu_seconds: 600,
            memory_bytes: 4 << 30,
            file_size_bytes: 1 << 30,
            processes: 256,
            output_bytes: 4 << 20,
        }
    }
}

/// Host-wide settings of exec: how many children at once, where programs are found
/// and what they may read, and their limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecSettings {
    /// Children running at once on this host; one more gets `exec_busy`.
    pub max_children: usize,
    /// Extra directories searched for program names (after [`SYSTEM_PATH`]); children
    /// may read and execute in them.
    pub path: Vec<PathBuf>,
    /// Extra directories children may read, and run programs from (a toolchain's
    /// files, say), never write.
    pub read_dirs: Vec<PathBuf>,
    /// Limits of every child.
    pub limits: ChildLimits,
    /// The pids cgroup directory the host makes its own in (default: its own pids
    /// cgroup, found in `/proc/self/cgroup`).
    pub cgroup_parent: Option<PathBuf>,
    /// Features to treat as missing whatever the machine has (`probe`): exec then
    /// refuses as it would on a machine without them. Empty by default.
    pub unavailable: Vec<SandboxFeature>,
}

impl Default for ExecSettings {
    fn default() -> Self {
        Self {
            max_children: 4,
            path: Vec::new(),
            read_dirs: Vec::new(),
            limits: ChildLimits::default(),
            cgroup_parent: None,
            unavailable: Vec::new(),
        }
    }
}

impl ExecSettings {
    /// The directories searched for program names, in order.
    pub fn search_path(&self) -> Vec<PathBuf> {
        SYSTEM_PATH.iter().map(PathBuf::from).chain(self.path.iter().cloned()).collect()
    }

    /// The `PATH` a child sees.
    pub fn child_path(&self) -> String {
        let dirs: Vec<String> = self.search_path().iter().map(|p| p.display().to_string()).collect();
        dirs.join(":")
    }
}

/// The longest a child may take when neither the request nor the call says less.
pub const MAX_CHILD_TIME: Duration = Duration::from_secs(3600);

/// One thing the sandbox needs from the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxFeature {
    /// Landlock at ABI 6 (Linux 6.12+): filesystem rules, signal and socket scoping.
    Landlock,
    /// Unprivileged user namespaces (and a network namespace inside one).
    UserNamespaces,
    /// Seccomp filters (`PR_SET_SECCOMP` with a BPF program).
    Seccomp,
    /// A pids cgroup the host may create children in (needed when running as root).
    PidsCgroup,
}

impl SandboxFeature {
    /// Every feature, in the order they are probed.
    pub const ALL: [Self; 4] = [Self::Landlock, Self::UserNamespaces, Self::Seccomp, Self::PidsCgroup];

    /// Its short name: `landlock`, `user-namespaces`, `seccomp`, `pids-cgroup`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Landlock => "landlock",
            Self::UserNamespaces => "user-namespaces",
            Self::Seccomp => "seccomp",
            Self::PidsCgroup => "pids-cgroup",
        }
    }

    /// The feature named `name` (see [`Self::name`]).
    pub fn parse(name: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|f| f.name() == name.trim()).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|f| f.name()).collect();
            format!("{name:?} is not a sandbox feature ({})", names.join(", "))
        })
    }

    /// What it is, for a person.
    pub fn title(self) -> &'static str {
        match self {
            Self::Landlock => "Landlock ABI 6 (Linux 6.12+)",
            Self::UserNamespaces => "unprivileged user namespaces",
            Self::Seccomp => "seccomp filters",
            Self::PidsCgroup => "a writable pids cgroup",
        }
    }
}
