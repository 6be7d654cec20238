//! `toolhost doctor`'s findings for a person: one section per concern, a mark on
//! each line (`ok`, `--` not needed here, `MISSING`), and what to do last.

use std::io::{self, Write};

use serde_json::Value;

/// Print `doc` (what `doctor --json` prints) as text.
pub(crate) fn print(out: &mut impl Write, doc: &Value) -> io::Result<()> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let who = if doc["root"] == true { "root" } else { "not root" };
    writeln!(out, "toolhost {} on Linux {} ({who})", s(&doc["version"]), s(&doc["kernel"]))?;

    writeln!(out, "\nsandbox (terminal, git, run_tests, command hooks, MCP servers):")?;
    for f in doc["sandbox"]["features"].as_array().into_iter().flatten() {
        let mark = match (f["available"] == true, f["required"] == true) {
            (true, _) => "ok     ",
            (false, false) => "--     ",
            (false, true) => "MISSING",
        };
        let needed =
            if f["required"] == true { "" } else { " (not needed: not root, RLIMIT_NPROC caps processes)" };
        writeln!(out, "  {mark} {}: {}{needed}", s(&f["title"]), s(&f["detail"]))?;
    }
    match &doc["sandbox"]["children"] {
        Value::Null => writeln!(out, "  ?       a confined child: not tried (the host did not load)")?,
        c if c["ok"] == true => writeln!(out, "  ok      a confined child starts")?,
        c => writeln!(out, "  MISSING a confined child cannot start: {}", s(&c["error"]))?,
    }

    writeln!(out, "\ndirs:")?;
    for d in doc["dirs"].as_array().into_iter().flatten() {
        let Some(path) = d["path"].as_str() else {
            writeln!(out, "  MISSING {:<6} none (no HOME or TOOLHOST_*_DIR)", s(&d["role"]))?;
            continue;
        };
        let mark = if d["writable"] == true { "ok     " } else { "MISSING" };
        let state = match (d["exists"] == true, d["writable"] == true) {
            (true, true) => {
                format!("writable, {} in {} files", size(d["bytes"].as_u64().unwrap_or(0)), d["files"])
            }
            (false, true) => "made on first use".to_string(),
            (_, false) => "not writable".to_string(),
        };
        writeln!(out, "  {mark} {:<6} {path}: {state}", s(&d["role"]))?;
    }

    writeln!(out, "\npolicy:")?;
    let policy = &doc["policy"];
    if let Some(err) = policy["error"].as_str() {
        writeln!(out, "  MISSING {err}")?;
    } else {
        let files = policy["files"].as_array().cloned().unwrap_or_default();
        if files.is_empty() {
            writeln!(out, "  ok      no policy file: the defaults (mode {})", s(&policy["mode"]))?;
        }
        for f in files {
            writeln!(out, "  ok      {}: {}", s(&f["path"]), s(&f["trust"]))?;
        }
        for widening in policy["widens"].as_array().into_iter().flatten() {
            writeln!(out, "          grants {}", s(widening))?;
        }
    }

    let tools = doc["tools"].as_array().cloned().unwrap_or_default();
    if !tools.is_empty() {
        writeln!(out, "\ntools:")?;
        let width = tools.iter().map(|t| s(&t["name"]).len()).max().unwrap_or(0);
        for t in &tools {
            match t["refusal"].as_str() {
                None => writeln!(out, "  ok      {}", s(&t["name"]))?,
                Some(why) => writeln!(out, "  REFUSES {:width$}  {why}", s(&t["name"]))?,
            }
        }
    }

    let problems = doc["problems"].as_array().cloned().unwrap_or_default();
    if problems.is_empty() {
        writeln!(out, "\nall that the current policy needs is here")?;
    } else {
        writeln!(out, "\nmissing what the current policy needs:")?;
        for p in problems {
            writeln!(out, "  - {}", s(&p))?;
        }
    }
    Ok(())
}

/// `bytes` in KiB, MiB or GiB.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{:.1} KiB", b as f64 / 1024.0),
    }
}
