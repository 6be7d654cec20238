//! Starting a child with `clone`: failures reported with their step and `errno`,
//! and the state a child starts in (signals, descriptors).

use super::*;
use crate::ChildLimits;
use crate::confine::{SetupFailed, Step};

fn spawn_with(program: &str, args: &[&str], setup: &ChildSetup) -> Result<(ExitStatus, String), StartError> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let what = Spawn {
        program: Path::new(program),
        arg0: program,
        args: &args,
        env: vec![(OsStr::new("PATH"), OsStr::new("/usr/bin:/bin"))],
        cwd: Path::new("/"),
        stdin: false,
        output: Output::Merged,
    };
    let mut spawned = spawn(&what, setup)?;
    let mut out = String::new();
    let stdout = File::from(spawned.stdout.take().expect("a stdout pipe"));
    io::Read::read_to_string(&mut &stdout, &mut out).expect("read stdout");
    Ok((spawned.process.wait_blocking().expect("wait"), out))
}

fn plain() -> ChildSetup {
    ChildSetup::new(&ChildLimits::default())
}

#[test]
fn a_missing_program_is_named_with_the_error() {
    let err = spawn_with("/nonexistent/program", &[], &plain()).expect_err("it started");
    assert!(matches!(err.failed, Failed::Child(ChildFailed::Exec(libc::ENOENT))), "{err:?}");
    assert_eq!(err.to_string(), "/nonexistent/program: No such file or directory (os error 2)");
    let err = spawn_with("no-such-program-xyz", &[], &plain()).expect_err("it started");
    assert_eq!(err.to_string(), "no-such-program-xyz: No such file or directory (os error 2)");
}

#[test]
fn a_file_that_is_not_executable_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, "#!/bin/sh\necho ran\n").unwrap();
    let err = spawn_with(file.to_str().unwrap(), &[], &plain()).expect_err("it started");
    assert!(matches!(err.failed, Failed::Child(ChildFailed::Exec(libc::EACCES))), "{err:?}");
    assert!(err.to_string().ends_with("data: Permission denied (os error 13)"), "{err}");
}

#[test]
fn a_script_without_an_interpreter_line_runs_in_sh_and_names_resolve_on_path() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bare");
    std::fs::write(&script, "echo \"bare $1\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (status, out) = spawn_with(script.to_str().unwrap(), &["ran"], &plain()).unwrap();
    assert!(status.success() && out == "bare ran\n", "{status} {out:?}");
    let (status, out) = spawn_with("echo", &["found"], &plain()).unwrap();
    assert!(status.success() && out == "found\n", "{status} {out:?}");
}

#[test]
fn a_failed_step_is_named_with_its_error() {
    let read_only = File::open("/dev/null").unwrap();
    let mut setup = plain();
    setup.cgroup_procs = Some(read_only.as_raw_fd());
    let err = spawn_with("/bin/true", &[], &setup).expect_err("it started");
    let expected = SetupFailed { step: Step::Cgroup, errno: libc::EBADF };
    assert!(matches!(err.failed, Failed::Child(ChildFailed::Setup(f)) if f == expected), "{err:?}");
    assert_eq!(err.to_string(), "/bin/true: joining its pids cgroup: Bad file descriptor (os error 9)");
}

/// The host's mask and handlers stay behind: nothing blocked, and only what was
/// ignored before (less `SIGPIPE`, which Rust ignores) plus `SIGXFSZ` ignored.
#[test]
fn a_child_starts_with_no_signal_blocked_and_no_handler() {
    let field = |status: &str, name: &str| {
        let line = status.lines().find(|l| l.starts_with(name)).expect("a field of /proc/PID/status");
        u64::from_str_radix(line[name.len()..].trim(), 16).unwrap()
    };
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    let bit = |signal: i32| 1u64 << (signal - 1);
    let expected_ignored = (field(&own, "SigIgn:") & !bit(libc::SIGPIPE)) | bit(libc::SIGXFSZ);
    let (status, out) = spawn_with("/bin/cat", &["/proc/self/status"], &plain()).unwrap();
    assert!(status.success(), "{status} {out}");
    assert_eq!(field(&out, "SigBlk:"), 0, "{out}");
    assert_eq!(field(&out, "SigIgn:"), expected_ignored, "{out}");
    assert_eq!(field(&out, "SigCgt:"), 0, "{out}");
}

/// Only 0, 1 and 2 reach the program, even a descriptor the host left inheritable.
#[test]
fn no_descriptor_of_the_host_reaches_the_child() {
    let kept = File::open("/dev/null").unwrap();
    rustix::io::fcntl_setfd(&kept, rustix::io::FdFlags::empty()).unwrap();
    let args = ["/proc/self/fd", "-mindepth", "1", "-maxdepth", "1", "-printf", "%f %l\\n"];
    let (status, out) = spawn_with("/usr/bin/find", &args, &plain()).unwrap();
    assert!(status.success(), "{status} {out}");
    // find's own descriptors are directories: where it started, what it lists
    // (its own /proc entry, gone by now).
    let fds: Vec<&str> = out
        .lines()
        .filter(|l| {
            !l.split_once(' ').is_some_and(|(_, to)| to.starts_with("/proc/") || Path::new(to).is_dir())
        })
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(fds, ["0", "1", "2"], "{out}");
}
