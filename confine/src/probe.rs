//! What this machine offers the exec sandbox, feature by feature ([`SandboxProbe`]):
//! the kernel, the Landlock ABI, user namespaces, seccomp filters and a pids cgroup
//! the host may create children in. Each is tried for real (a ruleset made at each
//! ABI, a child started in new user and network namespaces, a child under a seccomp
//! filter, a cgroup made and removed), never guessed from version numbers.
//!
//! It also words the refusal an exec call gets when the sandbox cannot be built:
//! `sandbox_unavailable`, naming the missing feature and pointing at `toolhost
//! doctor` ([`explain`]). [`ExecSettings::unavailable`] lists features to treat as
//! missing whatever the machine has: only ever fewer features, so more refusals
//! (`toolhost doctor` and tests use it to show what refuses without one).

use std::path::Path;

use super::cgroup::CgroupRoot;
use super::confine::{ChildSetup, IdMaps, is_root};
use super::settings::{ExecSettings, SandboxFeature};

/// Where a refusal points the person who reads it.
pub(crate) const DOCTOR: &str = "run `toolhost doctor` to see what this machine supports";

/// The Landlock ABI the sandbox needs.
pub const LANDLOCK_ABI_NEEDED: u32 = 6;

/// What the probe found about one feature.
#[derive(Debug, Clone)]
pub struct FeatureCheck {
    /// The feature.
    pub feature: SandboxFeature,
    /// Whether it works here.
    pub available: bool,
    /// What was found (the ABI, the cgroup directory), or why it does not work.
    pub detail: String,
    /// Whether the sandbox needs it on this host (a pids cgroup only as root).
    pub required: bool,
}

/// What this machine offers the exec sandbox.
#[derive(Debug, Clone)]
pub struct SandboxProbe {
    /// The running kernel's release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// Whether the host runs as root.
    pub root: bool,
    /// One check per [`SandboxFeature`], in [`SandboxFeature::ALL`]'s order.
    pub checks: Vec<FeatureCheck>,
}

impl SandboxProbe {
    /// Probe this machine for children under `settings` (its cgroup parent, and the
    /// features it treats as missing). Starts two short-lived `true` processes.
    pub fn run(settings: &ExecSettings) -> Self {
        let root = is_root();
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|e| format!("unknown ({e})"));
        let checks = SandboxFeature::ALL
            .into_iter()
            .map(|feature| {
                let found = if settings.unavailable.contains(&feature) {
                    Err("treated as missing on request".to_string())
                } else {
                    match feature {
                        SandboxFeature::Landlock => landlock(),
                        SandboxFeature::UserNamespaces => user_namespaces(),
                        SandboxFeature::Seccomp => seccomp(),
                        SandboxFeature::PidsCgroup => pids_cgroup(settings),
                    }
                };
                let required = feature != SandboxFeature::PidsCgroup || root;
                let (available, detail) = match found {
                    Ok(detail) => (true, detail),
                    Err(why) => (false, why),
                };
                FeatureCheck { feature, available, detail, required }
            })
            .collect();
        Self { kernel, root, checks }
    }

    /// The features the sandbox needs here and does not have.
    pub fn missing(&self) -> impl Iterator<Item = &FeatureCheck> {
        self.checks.iter().filter(|c| c.required && !c.available)
    }
}

/// The refusal for a call when `check`'s feature is missing.
pub(crate) fn refusal(check: &FeatureCheck) -> String {
    format!(
        "this machine lacks {} ({}), which the sandbox of terminal, git, run_tests and command hooks needs: {DOCTOR}",
        check.feature.title(),
        check.detail
    )
}

/// Refuse at once when `settings` treats a feature the sandbox needs as missing,
/// with the refusal a machine without it gets.
pub(super) fn gate(settings: &ExecSettings) -> Result<(), String> {
    let root = is_root();
    for feature in &settings.unavailable {
        if *feature != SandboxFeature::PidsCgroup || root {
            let check = FeatureCheck {
                feature: *feature,
                available: false,
                detail: "treated as missing on request".into(),
                required: true,
            };
            return Err(refusal(&check));
        }
    }
    Ok(())
}

/// `why` the confinement could not be built, said in terms of the feature this
/// machine lacks when the probe finds one, and pointing at `toolhost doctor`.
pub(super) fn explain(settings: &ExecSettings, why: String) -> String {
    if why.contains(DOCTOR) {
        return why;
    }
    match SandboxProbe::run(settings).missing().next() {
        Some(check) => format!("{} ({why})", refusal(check)),
        None => format!("{why}: {DOCTOR}"),
    }
}

/// The pids cgroup the host creates children in, unless `settings` treats it as missing.
pub(super) fn host_cgroup(settings: &ExecSettings) -> Option<CgroupRoot> {
    if settings.unavailable.contains(&SandboxFeature::PidsCgroup) {
        return None;
    }
    CgroupRoot::create(settings.cgroup_parent.as_deref())
}

/// The highest Landlock ABI this kernel enforces, from a ruleset made at each ABI
/// with every right of that ABI required.
fn landlock() -> Result<String, String> {
    use landlock::{ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};
    let mut why = String::new();
    for (n, abi) in [(6, ABI::V6), (5, ABI::V5), (4, ABI::V4), (3, ABI::V3), (2, ABI::V2), (1, ABI::V1)] {
        let made = (|| {
            let mut ruleset = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(abi))?;
            if n >= 4 {
                ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
            }
            if n >= 6 {
                ruleset = ruleset.scope(Scope::from_all(abi))?;
            }
            ruleset.create().map(drop)
        })();
        match made {
            Ok(()) if n >= LANDLOCK_ABI_NEEDED => return Ok(format!("ABI {n} or newer")),
            Ok(()) => {
                return Err(format!("this kernel enforces ABI {n}; ABI {LANDLOCK_ABI_NEEDED} is needed"));
            }
            Err(e) if why.is_empty() => why = e.to_string(),
            Err(_) => {}
        }
    }
    Err(format!("no Landlock ABI at all: {why}"))
}

/// A child started in new user and network namespaces (its uid and gid mapped).
fn user_namespaces() -> Result<String, String> {
    let mut setup = ChildSetup::new(&super::settings::ChildLimits::default());
    setup.namespaces = true;
    setup.ids = Some(IdMaps::own());
    start_true(&setup).map(|()| "a child starts in new user and network namespaces".into())
}

/// A child started under the sandbox's own seccomp filter.
fn seccomp() -> Result<String, String> {
    let program = super::seccomp::program(false)?;
    let mut setup = ChildSetup::new(&super::settings::ChildLimits::default());
    setup.seccomp = Some((program.as_ptr() as usize, program.len() as u16));
    let started = start_true(&setup);
    drop(program);
    started.map(|()| "a child starts under a seccomp filter".into())
}

/// A pids cgroup made under the host's own (or `cgroup_parent`) and removed.
fn pids_cgroup(settings: &ExecSettings) -> Result<String, String> {
    match CgroupRoot::create(settings.cgroup_parent.as_deref()) {
        Some(root) => {
            Ok(format!("children can be made under {}", root.dir().parent().unwrap_or(root.dir()).display()))
        }
        None => Err(match &settings.cgroup_parent {
            Some(dir) => format!("no pids cgroup can be made in {}", dir.display()),
            None => "no pids cgroup of this process lets it make children (v1 `pids`, or v2 with the pids \
                     controller delegated)"
                .into(),
        }),
    }
}

/// Start `true` with `setup` and wait for it.
fn start_true(setup: &ChildSetup) -> Result<(), String> {
    let program = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
        .ok_or("there is no `true` program to probe with")?;
    let spawn = super::process::Spawn {
        program,
        arg0: "true",
        args: &[],
        env: Vec::new(),
        cwd: Path::new("/"),
        stdin: false,
        output: super::process::Output::Null,
    };
    let mut spawned = super::process::spawn(&spawn, setup).map_err(|e| e.to_string())?;
    match spawned.process.wait_blocking() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("the probe process failed ({status})")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_names_round_trip_and_a_bad_one_lists_them() {
        for feature in SandboxFeature::ALL {
            assert_eq!(SandboxFeature::parse(feature.name()), Ok(feature));
        }
        let err = SandboxFeature::parse("apparmor").unwrap_err();
        assert!(err.contains("landlock, user-namespaces, seccomp, pids-cgroup"), "{err}");
    }

    #[test]
    fn a_feature_treated_as_missing_is_missing_and_gates_the_sandbox() {
        let settings = ExecSettings { unavailable: vec![SandboxFeature::Seccomp], ..ExecSettings::default() };
        let probe = SandboxProbe::run(&settings);
        let missing: Vec<SandboxFeature> = probe.missing().map(|c| c.feature).collect();
        assert!(missing.contains(&SandboxFeature::Seccomp), "{probe:?}");
        let refused = gate(&settings).unwrap_err();
        assert!(
            refused.starts_with("this machine lacks seccomp filters (treated as missing on request)")
                && refused.contains(DOCTOR),
            "{refused}"
        );
        assert!(gate(&ExecSettings::default()).is_ok());
    }
}
