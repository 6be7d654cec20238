//! Command lines × rules → allow, deny or ask, through [`Permissions::decide`] for
//! `terminal` in `default` mode, the safe list on, in a work dir that is a
//! repository's top.

use serde_json::json;

use crate::policy::permissions::{Decision, Mode, Permissions};
use crate::policy::rules::Rule;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Allow,
    Deny,
    Ask,
}
use Want::{Allow, Ask, Deny};

const ALLOW: &[&str] = &[
    "terminal(command=git status*)",
    "terminal(command=cargo test*)",
    "terminal(command=cargo build*)",
    "terminal(command=npm test)",
    "terminal(command=printf*)",
    "terminal(command=sleep*)",
    "terminal(command=true)",
    "terminal(command=X=1 make*)",
];

const DENY: &[&str] = &[
    "terminal(command=rm*)",
    "terminal(command=git push*)",
    "terminal(command=curl*)",
    "terminal(command=dd *)",
];

/// (line, expected)
const TABLE: &[(&str, Want)] = &[
    // Words, and the trailing `*`.
    ("git status", Allow),
    ("git status --short", Allow),
    ("git statusx", Ask),
    ("git", Ask),
    ("npm test", Allow),
    ("npm test --watch", Ask),
    ("cargo test -- --nocapture", Allow),
    // Chains, pipes, background.
    ("git status; touch pwned", Ask),
    ("git status && cargo test", Allow),
    ("git status || cargo build --release", Allow),
    ("git status; rm -rf x", Deny),
    ("cargo test && git push origin main", Deny),
    ("git status | printf x", Allow),
    ("cargo test | tee log.txt", Ask),
    ("git status | rm x", Deny),
    ("cargo build & git status", Allow),
    ("git status &", Allow),
    ("! git status", Allow),
    ("git status\ncargo test", Allow),
    ("git status\ntouch pwned", Ask),
    ("git status\n\nrm -rf x", Deny),
    // Subshells, groups, if / for / while / case.
    ("(git status; cargo test)", Allow),
    ("(git status; touch x)", Ask),
    ("{ git status; cargo test; }", Allow),
    ("{ git status; rm x; }", Deny),
    ("if git status; then cargo test; fi", Allow),
    ("if git status; then touch x; fi", Ask),
    ("if touch x; then git status; fi", Ask),
    ("if true; then git status; else rm -rf /; fi", Deny),
    ("for i in 1 2; do cargo test; done", Allow),
    ("for i in 1 2; do touch $i; done", Ask),
    ("for f in $(ls); do git status; done", Ask),
    ("while sleep 1; do git status; done", Allow),
    ("until true; do rm x; done", Deny),
    ("case x in a) git status;; esac", Allow),
    ("case x in a) git status;; b) touch y;; esac", Ask),
    ("[[ -f x ]] && git status", Ask),
    ("(( 1 )) && git status", Ask),
    // Here-documents: the body is data, unless it expands a substitution.
    ("printf x <<EOF\nrm -rf /\nEOF", Allow),
    ("printf x <<EOF\n$(touch pwned)\nEOF", Ask),
    ("printf x <<'EOF'\n$(touch pwned)\nEOF", Allow),
    ("printf x <<< 'rm -rf /'", Allow),
    // Quoting tricks.
    ("'git' \"status\"", Allow),
    ("g\"it\" 'status'", Allow),
    ("git\\ status", Ask),
    ("\"git status\"", Ask),
    ("git${IFS}status", Ask),
    ("git $X", Ask),
    ("$X status", Ask),
    ("g*t status", Ask),
    ("r\"m\" -rf x", Deny),
    ("\\rm x", Deny),
    // Comments.
    ("git status # ; rm -rf /", Allow),
    ("# only a comment", Ask),
    // Aliases and functions defined in the line.
    ("alias ls='touch pwned'; ls", Ask),
    ("alias ls='rm -rf /'; ls", Deny),
    ("ls() { touch x; }; ls", Ask),
    ("git() { touch x; }; git status", Ask),
    ("ls() { rm x; }; ls", Deny),
    ("hash -p /tmp/x git; git status", Ask),
    // Assignments and wrappers: allow matches as written, deny unwraps.
    ("X=1 git status", Ask),
    ("env X=1 git status", Ask),
    ("command git status", Ask),
    ("X=1 make check", Allow),
    ("X=2 make check", Ask),
    ("env rm -rf x", Deny),
    ("env -i A=1 /usr/bin/rm x", Deny),
    ("command rm x", Deny),
    ("builtin eval x", Ask),
    ("nohup rm x", Deny),
    ("time rm x", Deny),
    ("exec rm x", Deny),
    ("nice -n 5 rm x", Deny),
    ("timeout 5 rm x", Deny),
    ("X=1 rm x", Deny),
    ("sudo rm x", Ask),
    // Program paths.
    ("/bin/rm -rf x", Deny),
    ("/tmp/x/git status", Ask),
    ("./git status", Ask),
    // eval, source, ., exec.
    ("eval git status", Ask),
    ("eval \"rm -rf x\"", Deny),
    ("source ./env.sh", Ask),
    (". ./env.sh && git status", Ask),
    ("exec git status", Ask),
    ("bash -c 'rm -rf x'", Deny),
    ("sh -ec \"git push\"", Deny),
    // Substitutions, anywhere.
    ("git status $(touch pwned)", Ask),
    ("git status `touch pwned`", Ask),
    ("printf \"$(touch x)\"", Ask),
    ("X=$(touch x) git status", Ask),
    ("git status > \"$(touch x)\"", Ask),
    ("printf ${X:-$(touch p)}", Ask),
    ("printf $(( $(touch p) ))", Ask),
    ("printf $(rm -rf x)", Deny),
    ("printf \"`rm x`\"", Deny),
    ("printf ${X:-$(rm x)}", Deny),
    ("diff <(git status) <(git status)", Ask),
    ("cat <(rm x)", Deny),
    ("git status > >(printf x)", Ask),
    // Redirections.
    ("git status > out.txt", Ask),
    ("git status >> out.txt", Ask),
    ("cargo test 2> err.txt", Ask),
    ("git status &> out.txt", Ask),
    ("git status >&out.txt", Ask),
    ("{ git status; } > out.txt", Ask),
    ("git status 2>&1", Allow),
    ("git status >&2", Allow),
    ("git status >/dev/null 2>&1", Allow),
    ("git status &>/dev/null", Allow),
    ("git status 2>/dev/null | printf x", Allow),
    ("git status < in.txt", Allow),
    ("git status < $F", Ask),
    ("dd if=/dev/zero > /dev/sda", Deny),
    // Lines that don't parse: ask, and deny rules still match the text.
    ("git status; (", Ask),
    ("echo \"unterminated", Ask),
    ("rm -rf x; (", Deny),
    // The safe list.
    ("ls -la", Allow),
    ("ls *.rs | wc -l", Allow),
    ("ls; pwd", Ask),
    ("ls && pwd", Ask),
    ("cat a.txt | grep -n foo | head -5", Allow),
    ("cat a.txt > b.txt", Ask),
    ("tail -n 5 log", Allow),
    ("tail -f log", Ask),
    ("tail -nf 5 log", Ask),
    ("tail --fol log", Ask),
    ("git diff HEAD~1 -- src", Allow),
    ("git log --oneline -5 | cat", Allow),
    ("git show HEAD", Allow),
    ("git diff --output=x", Ask),
    ("git diff --outp=x", Ask),
    ("git log --ext-diff -p", Ask),
    ("git -c core.pager=sh log", Ask),
    ("git -C .. diff", Ask),
    ("git commit -m x", Ask),
    ("grep -r foo .", Allow),
    ("rg --pre ./x foo", Ask),
    ("rg -n foo src", Allow),
    ("file -C -m x", Ask),
    ("tree -o out", Ask),
    ("echo $HOME", Ask),
    ("echo hi > /dev/null", Allow),
    ("FOO=1 ls", Ask),
    ("/bin/ls", Ask),
    ("find . -name x", Ask),
    ("cargo --version", Allow),
    ("cargo run", Ask),
    ("which git", Allow),
    ("pwd\nls", Ask),
];

fn permissions(allow: &[&str], deny: &[&str], mode: Mode, work_dir: Option<&std::path::Path>) -> Permissions {
    let mut permissions = Permissions::new(mode).with_work_dir(work_dir.map(|d| d.to_path_buf()));
    permissions.allow = allow.iter().map(|r| Rule::parse(r).unwrap()).collect();
    permissions.deny = deny.iter().map(|r| Rule::parse(r).unwrap()).collect();
    permissions
}

fn want(decision: &Decision) -> Want {
    match decision {
        Decision::Allow(_) => Allow,
        Decision::Deny(_) => Deny,
        Decision::Ask { .. } => Ask,
    }
}

/// A work dir that is a repository's top.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    dir
}

#[test]
fn the_table() {
    assert!(TABLE.len() >= 60);
    let dir = repo();
    let permissions = permissions(ALLOW, DENY, Mode::Default, Some(dir.path()));
    let mut wrong = Vec::new();
    for (line, expected) in TABLE {
        let decision = permissions.decide("terminal", false, &json!({ "command": line }));
        if want(&decision) != *expected {
            wrong.push(format!("{line:?}: expected {expected:?}, got {decision:?}"));
        }
    }
    assert!(wrong.is_empty(), "{} of {} wrong:\n{}", wrong.len(), TABLE.len(), wrong.join("\n"));
}

#[test]
fn reasons_name_the_rules_and_the_hazard() {
    let dir = repo();
    let p = permissions(ALLOW, DENY, Mode::Default, Some(dir.path()));
    let decide = |line: &str| p.decide("terminal", false, &json!({ "command": line }));
    assert_eq!(decide("git status"), Decision::Allow("rule allow terminal(command=git status*)".into()));
    assert_eq!(
        decide("git status && cargo test"),
        Decision::Allow("rules allow terminal(command=git status*), terminal(command=cargo test*)".into())
    );
    assert_eq!(decide("cd x; rm -rf y"), Decision::Deny("rule deny terminal(command=rm*)".into()));
    assert_eq!(decide("ls"), Decision::Allow("a read-only command of the safe list".into()));
    let Decision::Ask { reason, .. } = decide("git status > out.txt") else { panic!() };
    assert!(reason.ends_with("(no rule can allow this line: it redirects output to a file)"), "{reason}");
}

#[test]
fn the_safe_list_can_be_turned_off_and_needs_a_clean_repository_top() {
    let dir = repo();
    let mut p = permissions(ALLOW, DENY, Mode::Default, Some(dir.path()));
    let decide = |p: &Permissions, args: serde_json::Value| want(&p.decide("terminal", false, &args));
    assert_eq!(decide(&p, json!({"command": "ls"})), Allow);
    assert_eq!(decide(&p, json!({"command": "git diff"})), Allow);
    // Git only at the repository's top, with no global config planted in HOME.
    assert_eq!(decide(&p, json!({"command": "git diff", "cwd": "sub"})), Ask);
    assert_eq!(decide(&p, json!({"command": "git diff", "cwd": "."})), Allow);
    std::fs::write(dir.path().join(".gitconfig"), "[core]\nfsmonitor = ./x\n").unwrap();
    assert_eq!(decide(&p, json!({"command": "git diff"})), Ask);
    assert_eq!(decide(&p, json!({"command": "ls", "cwd": "sub"})), Allow);
    std::fs::write(dir.path().join("rust-toolchain.toml"), "[toolchain]\npath = \"x\"\n").unwrap();
    assert_eq!(decide(&p, json!({"command": "cargo --version"})), Ask);
    // Only `terminal`'s line: another tool's `command` may not be a shell's.
    assert_eq!(want(&p.decide("remote", false, &json!({"command": "ls"}))), Ask);
    p.safe_commands = false;
    assert_eq!(decide(&p, json!({"command": "ls"})), Ask);
    assert_eq!(decide(&p, json!({"command": "git status"})), Allow, "rules still apply");
    // Not a work dir at all: no git.
    let p = permissions(&[], &[], Mode::Default, None);
    assert_eq!(decide(&p, json!({"command": "git status"})), Ask);
    assert_eq!(decide(&p, json!({"command": "wc -l a"})), Allow);
}

#[test]
fn modes_around_command_rules() {
    let dir = repo();
    let decide = |mode, line: &str| {
        let p = permissions(ALLOW, DENY, mode, Some(dir.path()));
        want(&p.decide("terminal", false, &json!({ "command": line, "cwd": "." })))
    };
    // yolo allows what no rule may, but deny rules still deny.
    assert_eq!(decide(Mode::Yolo, "git status $(touch x) > out"), Allow);
    assert_eq!(decide(Mode::Yolo, "git status; /bin/rm x"), Deny);
    assert_eq!(decide(Mode::Plan, "ls"), Deny);
    // accept-edits does not take a command line for an edit, even with a cwd inside.
    assert_eq!(decide(Mode::AcceptEdits, "touch x"), Ask);
    assert_eq!(decide(Mode::AcceptEdits, "ls"), Allow);
}

#[test]
fn a_bare_or_non_command_rule_judges_the_whole_call() {
    let p = permissions(&["terminal"], &[], Mode::Default, None);
    let decide = |line: &str| want(&p.decide("terminal", false, &json!({ "command": line })));
    assert_eq!(decide("git status $(touch x) > out"), Allow);
    let p = permissions(&["terminal(cwd=sub)"], &["terminal(cwd=secret)"], Mode::Default, None);
    assert_eq!(want(&p.decide("terminal", false, &json!({"command": "touch x", "cwd": "sub"}))), Allow);
    assert_eq!(want(&p.decide("terminal", false, &json!({"command": "ls", "cwd": "secret"}))), Deny);
    // Any tool's `command` is a line.
    let p = permissions(&["ssh_run(command=uptime)"], &["*(command=rm*)"], Mode::Default, None);
    assert_eq!(want(&p.decide("ssh_run", false, &json!({"command": "uptime"}))), Allow);
    assert_eq!(want(&p.decide("ssh_run", false, &json!({"command": "uptime; reboot"}))), Ask);
    assert_eq!(want(&p.decide("other", false, &json!({"command": "ls && rm x"}))), Deny);
}

#[test]
fn always_suggests_the_narrowest_rule_that_matches() {
    let p = permissions(&[], &[], Mode::Default, None);
    for (line, rule, covers) in [
        ("git commit -m 'fix, again'", "terminal(command=git commit*)", true),
        ("git -C sub log", "terminal(command=git*)", true),
        ("cargo test -p toolhost", "terminal(command=cargo test*)", true),
        ("make check", "terminal(command=make check*)", true),
        ("touch a b", "terminal(command=touch*)", true),
        ("./scripts/run.sh --fast", "terminal(command=./scripts/run.sh*)", true),
        ("X=1 cargo test", r"terminal(command=X\=1 cargo test*)", true),
        ("'my tool' x", r"terminal(command=my\ tool*)", true),
        // Every word literal: no `?` standing for other characters.
        ("'a*b' x", r"terminal(command=a\*b*)", true),
        ("'a\\' x", r"terminal(command=a\\*)", true),
        ("'' x", "terminal(command=''*)", true),
        ("'a\nb' x", "terminal(command=a'\n'b*)", true),
        ("touch a; rm b", "terminal(command=touch*)", false),
        ("touch $(date)", "terminal(command=touch*)", false),
        ("touch x; (", "terminal(command=touch*)", false),
        // Not even tokenized: the whole line as one word, which no command is.
        ("echo \"unterminated", r#"terminal(command=echo\ \"unterminated)"#, false),
    ] {
        let args = json!({ "command": line });
        let Decision::Ask { suggested_rule, .. } = p.decide("terminal", false, &args) else {
            panic!("{line}")
        };
        assert_eq!(suggested_rule, rule, "{line}");
        let mut with = permissions(&[], &[], Mode::Default, None);
        with.allow = vec![Rule::parse(&suggested_rule).unwrap_or_else(|e| panic!("{line}: {e}"))];
        assert_eq!(want(&with.decide("terminal", false, &args)) == Allow, covers, "{line}");
    }
}

/// The rule "always" saves for a command holding glob or rule characters matches
/// its words literally: a `?` or `*` in the rule never stands for another character.
#[test]
fn a_suggested_command_rule_matches_no_other_command() {
    let p = permissions(&[], &[], Mode::Default, None);
    for (line, others) in [
        ("'a b' x", &["axb x", "a-b x"][..]),
        ("'a*b' x", &["ab x", "aXb x", "aXYb x"]),
        ("'a?' x", &["ab x"]),
        ("git 'c[o]mmit' -m x", &["git co", "git commit", "git cxoxmmit"]),
        ("'x\\' y", &["x y", "xz y", "'x\\z' y"]),
        ("'a,b' x", &["a x", "b x", "axb x"]),
        ("'p)' x", &["p x", "pq x"]),
    ] {
        let Decision::Ask { suggested_rule, .. } = p.decide("terminal", false, &json!({ "command": line }))
        else {
            panic!("{line}")
        };
        let mut with = permissions(&[], &[], Mode::Default, None);
        with.allow = vec![Rule::parse(&suggested_rule).unwrap_or_else(|e| panic!("{line}: {e}"))];
        assert_eq!(
            want(&with.decide("terminal", false, &json!({ "command": line }))),
            Allow,
            "{suggested_rule}"
        );
        for other in others {
            let decision = with.decide("terminal", false, &json!({ "command": other }));
            assert_eq!(want(&decision), Ask, "{suggested_rule} allows {other:?}");
        }
    }
}

#[test]
fn bad_command_patterns_say_what_is_wrong() {
    for (text, needle) in [
        ("terminal(command=git status; rm*)", "one simple command"),
        ("terminal(command=cargo test | tail*)", "one simple command"),
        ("terminal(command=ls > x)", "redirect"),
        ("terminal(command=echo $HOME*)", "quote `$`"),
        ("terminal(command=echo $(x))", "substitution"),
        ("terminal(command=echo \"x)", "does not parse"),
    ] {
        let err = Rule::parse(text).unwrap_err();
        assert!(err.contains(needle), "{text}: {err}");
    }
    // Quoted globs are literal.
    let p = permissions(&["terminal(command=echo '*')"], &[], Mode::Default, None);
    let decide = |line: &str| want(&p.decide("terminal", false, &json!({ "command": line })));
    assert_eq!(decide("printf x; echo '*'"), Ask);
    let p = permissions(
        &["terminal(command=printf '*')", "terminal(command=cargo test-* *)"],
        &[],
        Mode::Default,
        None,
    );
    let decide = |line: &str| want(&p.decide("terminal", false, &json!({ "command": line })));
    assert_eq!(decide("printf '*'"), Allow);
    assert_eq!(decide("printf x"), Ask);
    assert_eq!(decide("cargo test-unit --release"), Allow);
    assert_eq!(decide("cargo test"), Ask);
}

#[test]
fn deep_nesting_neither_crashes_nor_allows() {
    let p = permissions(&["terminal(command=*)"], &["terminal(command=rm*)"], Mode::Default, None);
    for depth in [10, 400, 8000] {
        for (open, close) in [
            ("(", ")"),
            ("$(", ")"),
            ("{ ", "; }"),
            ("\"$(", ")\""),
            ("if true; then ", "; fi"),
            ("[[ ( ", " ) ]]"),
            ("( ", " )"),
            ("`", "`"),
        ] {
            let line = format!("{}true{}", open.repeat(depth), close.repeat(depth));
            let line = &line[..line.len().min(crate::policy::shell::MAX_PARSED_BYTES)];
            let decision = p.decide("terminal", false, &json!({ "command": line }));
            assert!(!matches!(decision, Decision::Deny(_)), "{open} × {depth}: {decision:?}");
        }
    }
}
