//! What an output is: from the command line that made it when there is one
//! (a hint: its programs and subcommands), else from its content (signature
//! lines of each format). A diff, a file's contents or search results are
//! recognised so that they are never shaped; a diff is looked for in the
//! content whatever the command says.

/// A recognised output format (`metadata.output_kind.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// cargo build/test/clippy, rustc (human output).
    Cargo,
    /// pytest.
    Pytest,
    /// python -m unittest.
    Unittest,
    /// pip install.
    Pip,
    /// npm, pnpm or yarn install.
    Npm,
    /// jest.
    Jest,
    /// vitest.
    Vitest,
    /// tsc.
    Tsc,
    /// go test, go build, go vet.
    Go,
    /// make, cmake, ninja, and gcc/clang diagnostics.
    Make,
    /// docker/podman build.
    Docker,
    /// Another log with progress bars, redraws, colours or repeated lines.
    Log,
    /// A diff or patch (never shaped).
    Diff,
    /// git log without patches (never shaped).
    GitLog,
    /// git status (never shaped).
    GitStatus,
    /// A file's contents (never shaped).
    File,
    /// Search results or listings (only repeated lines are collapsed).
    Search,
}

impl Kind {
    /// The name `metadata.output_kind.format` gives.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Cargo => "cargo",
            Kind::Pytest => "pytest",
            Kind::Unittest => "unittest",
            Kind::Pip => "pip",
            Kind::Npm => "npm",
            Kind::Jest => "jest",
            Kind::Vitest => "vitest",
            Kind::Tsc => "tsc",
            Kind::Go => "go",
            Kind::Make => "make",
            Kind::Docker => "docker",
            Kind::Log => "log",
            Kind::Diff => "diff",
            Kind::GitLog => "git-log",
            Kind::GitStatus => "git-status",
            Kind::File => "file",
            Kind::Search => "search",
        }
    }

    /// Whether the text passes through untouched.
    pub fn is_exact(self) -> bool {
        matches!(self, Kind::Diff | Kind::GitLog | Kind::GitStatus | Kind::File)
    }
}

/// Bytes of the start and of the end of a text its content is judged on.
const SNIFF_BYTES: usize = 64 << 10;

/// What the output `text` of `command` (when known) is; `None`: not recognised.
pub fn detect(command: Option<&str>, text: &str) -> Option<Kind> {
    let by_command = command.and_then(from_command);
    if let Some(kind) = by_command.filter(|k| k.is_exact() || *k == Kind::Search) {
        return Some(kind);
    }
    let sample = Sample::of(text);
    if sample.lines().any(is_diff_header) {
        return Some(Kind::Diff);
    }
    by_command.or_else(|| from_content(&sample))
}

/// The start and the end of a text, each at most [`SNIFF_BYTES`].
struct Sample<'a>(&'a str, &'a str);

impl<'a> Sample<'a> {
    fn of(text: &'a str) -> Self {
        if text.len() <= 2 * SNIFF_BYTES {
            return Sample(text, "");
        }
        let head = &text[..text.floor_char_boundary(SNIFF_BYTES)];
        let tail = &text[text.ceil_char_boundary(text.len() - SNIFF_BYTES)..];
        Sample(head, tail)
    }

    fn lines(&self) -> impl Iterator<Item = &'a str> {
        self.0.lines().chain(self.1.lines())
    }
}

/// `diff --git`, a unified hunk header, or a `---`/`+++` file pair.
fn is_diff_header(line: &str) -> bool {
    line.starts_with("diff --git ")
        || (line.starts_with("@@ -") && line[4..].contains(" @@"))
        || line.starts_with("+++ b/")
        || line.starts_with("Index: ")
}

/// The format a command line's output has, by its programs: a viewer, a diff
/// or a search anywhere in it wins (it is never shaped); else the first build
/// or test tool; a pipeline's last stage decides for it unless it only passes
/// lines through (`head`, `tail`, `tee`).
fn from_command(command: &str) -> Option<Kind> {
    let mut tool = None;
    for sequence in command.split(['\n', ';']).flat_map(|s| s.split("&&")).flat_map(|s| s.split("||")) {
        let stages: Vec<Vec<&str>> = sequence.split('|').map(words).filter(|w| !w.is_empty()).collect();
        let mut kind = None;
        for stage in &stages {
            match stage_kind(stage) {
                Some(Stage::Through) => {}
                Some(Stage::Is(k)) => kind = Some(k),
                None => kind = None,
            }
        }
        match kind {
            Some(k) if k.is_exact() || k == Kind::Search => return Some(k),
            Some(k) => tool = tool.or(Some(k)),
            None => {}
        }
    }
    tool
}

enum Stage {
    /// Passes its input's lines on (head, tail, tee, cat without files).
    Through,
    Is(Kind),
}

/// The words of one simple command, without leading variable assignments,
/// redirections and wrappers (`time`, `env`, `sudo`, `npx`, `python -m` …).
fn words(stage: &str) -> Vec<&str> {
    let mut words: Vec<&str> = stage
        .split_whitespace()
        .map(|w| w.trim_matches(|c| matches!(c, '(' | ')' | '{' | '}' | '"' | '\'')))
        .filter(|w| !w.is_empty() && !w.contains('>') && !w.starts_with('<') && *w != "&")
        .collect();
    loop {
        let Some(first) = words.first() else { return words };
        let name = first.rsplit('/').next().unwrap_or(first);
        let skip = if first.contains('=') && !first.starts_with('-') {
            1
        } else {
            match name {
                "time" | "env" | "sudo" | "nice" | "nohup" | "command" | "exec" | "npx" | "bunx"
                | "stdbuf" | "xvfb-run" => 1 + words[1..].iter().take_while(|w| w.starts_with('-')).count(),
                "timeout" => 2,
                "uv" | "poetry" | "pipenv" | "pdm" | "hatch" if words.get(1) == Some(&"run") => 2,
                n if n.starts_with("python") && words.get(1) == Some(&"-m") => 2,
                _ => 0,
            }
        };
        if skip == 0 {
            return words;
        }
        words.drain(..skip.min(words.len()));
    }
}

fn stage_kind(words: &[&str]) -> Option<Stage> {
    let program = words.first()?.rsplit('/').next()?;
    let sub = words.get(1).copied().unwrap_or("");
    let files = words[1..].iter().any(|w| !w.starts_with('-') && w.parse::<f64>().is_err());
    let kind = match program {
        "head" | "tail" | "tee" | "cat" | "less" | "more" if !files || program == "tee" => {
            return Some(Stage::Through);
        }
        "cat" | "bat" | "batcat" | "head" | "tail" | "less" | "more" | "nl" | "xxd" | "od" | "hexdump"
        | "strings" | "jq" | "yq" | "base64" => Kind::File,
        "sed" | "awk" if files => Kind::File,
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" | "find" | "fd" | "ls" | "tree" | "locate"
        | "sort" | "uniq" | "cut" | "sed" | "awk" | "wc" => Kind::Search,
        "diff" | "colordiff" | "interdiff" => Kind::Diff,
        "git" => git_kind(words)?,
        "cargo" | "rustc" | "cargo-nextest" => Kind::Cargo,
        "pytest" | "py.test" => Kind::Pytest,
        "unittest" => Kind::Unittest,
        "pip" | "pip3" => Kind::Pip,
        "uv" if sub == "pip" => Kind::Pip,
        "jest" => Kind::Jest,
        "vitest" => Kind::Vitest,
        "tsc" => Kind::Tsc,
        "npm" | "pnpm" | "yarn" | "bun" => Kind::Npm,
        "go" => Kind::Go,
        "make" | "gmake" | "cmake" | "ninja" | "meson" | "gcc" | "g++" | "cc" | "c++" | "clang"
        | "clang++" | "ld" => Kind::Make,
        "docker" | "podman" | "buildah" if words.iter().any(|w| *w == "build" || *w == "buildx") => {
            Kind::Docker
        }
        _ => return None,
    };
    Some(Stage::Is(kind))
}

fn git_kind(words: &[&str]) -> Option<Kind> {
    let sub = words[1..].iter().find(|w| !w.starts_with('-'))?;
    let patch = words.iter().any(|w| matches!(*w, "-p" | "-u" | "--patch" | "--stat" | "--numstat"));
    Some(match *sub {
        "diff" | "show" | "format-patch" | "stash" | "range-diff" => Kind::Diff,
        "log" | "reflog" | "whatchanged" if patch => Kind::Diff,
        "log" | "reflog" | "shortlog" => Kind::GitLog,
        "status" => Kind::GitStatus,
        "blame" | "cat-file" => Kind::File,
        "grep" | "ls-files" | "ls-tree" | "branch" | "tag" => Kind::Search,
        _ => return None,
    })
}

/// The format whose signature lines weigh most in the sample (none: not
/// recognised, unless it has what any log has: colours, redraws, progress
/// bars, runs of one repeated line).
fn from_content(sample: &Sample<'_>) -> Option<Kind> {
    let mut weights: Vec<(Kind, usize)> = Vec::new();
    let mut generic = 0usize;
    let mut previous = "";
    let mut repeats = 0usize;
    for line in sample.lines() {
        if let Some((kind, weight)) = signature(line) {
            match weights.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, w)) => *w += weight,
                None => weights.push((kind, weight)),
            }
        }
        if line.contains('\x1b')
            || line.trim_end_matches('\r').contains('\r')
            || super::generic::progress(line)
        {
            generic += 1;
        }
        repeats = if line == previous && !line.trim().is_empty() { repeats + 1 } else { 0 };
        if repeats == 4 {
            generic += 1;
        }
        previous = line;
    }
    let best = weights.into_iter().max_by_key(|(_, w)| *w).map(|(k, _)| k);
    best.or((generic > 0).then_some(Kind::Log))
}

/// Weight of a line that names its format for certain (a test runner's banner
/// or summary), of one that is typical of it, and of a compiler diagnostic
/// (which many formats hold).
const DECISIVE: usize = 50;
const TYPICAL: usize = 3;
const DIAGNOSTIC: usize = 1;

/// The format a line is a signature of, with its weight.
fn signature(line: &str) -> Option<(Kind, usize)> {
    let t = line.trim_start();
    let found = if t.starts_with("test result: ")
        || (t.starts_with("running ") && (t.ends_with(" tests") || t.ends_with(" test")))
    {
        (Kind::Cargo, DECISIVE)
    } else if t.starts_with("error[E") || (t.starts_with("Compiling ") && t.contains(" v")) {
        (Kind::Cargo, TYPICAL)
    } else if line.starts_with('=') && line.contains(" test session starts ") {
        (Kind::Pytest, DECISIVE)
    } else if line.starts_with("Ran ") && line.contains(" test") && line.contains(" in ") {
        (Kind::Unittest, DECISIVE)
    } else if line.starts_with("Collecting ")
        || line.starts_with("Requirement already satisfied: ")
        || line.starts_with("Successfully installed ")
    {
        (Kind::Pip, TYPICAL)
    } else if line.starts_with("npm ")
        || (line.starts_with("added ") && line.contains(" package"))
        || line.starts_with("Progress: resolved ")
    {
        (Kind::Npm, TYPICAL)
    } else if line.starts_with("Test Suites: ") {
        (Kind::Jest, DECISIVE)
    } else if line.starts_with("PASS ") || line.starts_with("FAIL ") {
        (Kind::Jest, TYPICAL)
    } else if t.starts_with("Test Files ") {
        (Kind::Vitest, DECISIVE)
    } else if line.contains("): error TS") {
        (Kind::Tsc, TYPICAL)
    } else if line.starts_with("=== RUN ") || t.starts_with("--- PASS: ") || t.starts_with("--- FAIL: ") {
        (Kind::Go, TYPICAL)
    } else if line.starts_with("make: ") || line.starts_with("make[") {
        (Kind::Make, TYPICAL)
    } else if super::cc::diagnostic(line) {
        (Kind::Make, DIAGNOSTIC)
    } else if (line.starts_with('#')
        && line[1..].starts_with(|c: char| c.is_ascii_digit())
        && line.contains(" ["))
        || (line.starts_with("Step ") && line.contains(" : "))
    {
        (Kind::Docker, TYPICAL)
    } else {
        return None;
    };
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_name_their_format() {
        let cases = [
            ("cargo test --workspace", Some(Kind::Cargo)),
            ("cd x && RUST_LOG=1 cargo clippy 2>&1 | tail -n 50", Some(Kind::Cargo)),
            ("python3 -m pytest -v tests/", Some(Kind::Pytest)),
            ("uv run pytest", Some(Kind::Pytest)),
            ("npm ci", Some(Kind::Npm)),
            ("npx jest --ci", Some(Kind::Jest)),
            ("go test ./...", Some(Kind::Go)),
            ("make -j4 all", Some(Kind::Make)),
            ("docker build -t x .", Some(Kind::Docker)),
            ("git log -p -3", Some(Kind::Diff)),
            ("git log --oneline", Some(Kind::GitLog)),
            ("git status", Some(Kind::GitStatus)),
            ("cat src/main.rs", Some(Kind::File)),
            ("tail -n 20 build.log", Some(Kind::File)),
            ("cargo test 2>&1 | grep FAILED", Some(Kind::Search)),
            ("cargo build && cat out.txt", Some(Kind::File)),
            ("rg -n foo src", Some(Kind::Search)),
            ("./run.sh", None),
        ];
        for (command, kind) in cases {
            assert_eq!(from_command(command), kind, "{command}");
        }
    }

    #[test]
    fn content_is_recognised_and_a_diff_always_wins() {
        let cargo = "   Compiling a v0.1.0\nrunning 3 tests\ntest a ... ok\ntest result: ok. 3 passed\n";
        assert_eq!(detect(None, cargo), Some(Kind::Cargo));
        assert_eq!(detect(None, "hello\nworld\n"), None);
        let patch = "running 1 test\ndiff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(detect(Some("cargo test"), patch), Some(Kind::Diff));
        assert_eq!(detect(Some("./x"), "a\r50%\rb\n"), Some(Kind::Log));
        assert_eq!(detect(Some("cat f"), cargo), Some(Kind::File));
    }
}
