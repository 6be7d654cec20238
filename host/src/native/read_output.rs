//! `read_output`: reads back the full text of a part of an earlier call's result
//! from the output store.
//!
//! A reply is bounded too: it stops at a byte budget just under the host's
//! clamp (so it is never cut itself), and a line too long for it is shown in
//! pieces, each naming the `offset` and `column` the next one starts at.

use std::fmt::Write as _;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{NativeCall, NativeOutput, NativeTool};
use crate::error::{CallError, codes};
use crate::load::spec::ToolSpec;
use crate::output::{OutputStore, Part, READ_OUTPUT};

/// Bytes of the clamp budget left for the notes after the lines.
const NOTE_ROOM: usize = 512;
/// Smallest reply budget, whatever the clamp.
const MIN_BUDGET: usize = 1024;
/// Bytes of a call id shown in a miss (ids are short; a long one is the caller's).
const SHOWN_ID: usize = 128;

/// `read_output`: a window of lines, or the lines matching a regex, of the
/// full text of a part of an earlier call's result.
pub(crate) struct ReadOutput {
    /// The host's store of full outputs.
    pub(crate) outputs: std::sync::Arc<OutputStore>,
    /// The host's clamp: a reply stops just under it.
    pub(crate) clamp_bytes: usize,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The call id named in the cut output's marker.
    call_id: String,
    /// Which part of the result: content (default), error, display or metadata.
    #[serde(default)]
    // A plain string here: `spec` lists `Part::ALL` as its enum.
    #[schemars(with = "String")]
    part: Part,
    /// First line to show (1-based).
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    offset: usize,
    /// Byte of the first line to start at (0-based), to continue a long line.
    #[serde(default)]
    column: usize,
    /// Most lines to show (default 200).
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 2000))]
    limit: usize,
    /// Regular expression: show only matching lines (Rust regex syntax).
    pattern: Option<String>,
}

fn one() -> usize {
    1
}

fn default_limit() -> usize {
    200
}

impl NativeTool for ReadOutput {
    fn spec(&self) -> ToolSpec {
        let mut schema = super::args_schema::<Args>();
        schema["properties"]["part"]["enum"] = Part::ALL.iter().map(|p| p.as_str()).collect();
        ToolSpec {
            name: READ_OUTPUT.into(),
            description: "Read the full text of an earlier tool call's result that was cut in the middle \
                (its marker names the call id, and the part when it is not the output itself). Give \
                `call_id`, then either a window of lines (`offset`, 1-based, and `limit`, default 200) or a \
                regular expression `pattern` to list the matching lines with their line numbers (at most \
                `limit`). A reply holds about as much as one clamped output; a line too long for it is shown \
                in pieces, and the note at the end says which `offset` and `column` to continue with. Use it \
                instead of re-running a command to see what was cut. Texts are kept in memory for a while; \
                an evicted one says so."
                .into(),
            parameters: schema,
            read_only: true,
            destructive: false,
            timeout_ms: None,
        }
    }

    fn call<'a>(
        &'a self,
        args: Value,
        _call: NativeCall<'a>,
    ) -> BoxFuture<'a, Result<NativeOutput, CallError>> {
        Box::pin(self.read(args))
    }
}

impl ReadOutput {
    async fn read(&self, args: Value) -> Result<NativeOutput, CallError> {
        let args: Args = super::parse_args(args)?;
        let full = match self.outputs.fetch_part(&args.call_id, args.part).await {
            Ok(Some(full)) => full,
            Ok(None) => return Err(miss(&args.call_id, args.part)),
            Err(error) => {
                let message = format!("{error}; the output may still be there: try again shortly");
                return Err(CallError::new(codes::OUTPUT_STORE_UNAVAILABLE, message));
            }
        };
        let budget = self.clamp_bytes.saturating_sub(NOTE_ROOM).max(MIN_BUDGET);
        let (content, mut metadata) = match &args.pattern {
            Some(pattern) => matches(&full, &args, pattern, budget)?,
            None => window(&full, &args, budget)?,
        };
        metadata["call_id"] = json!(args.call_id);
        metadata["part"] = json!(args.part.as_str());
        Ok(NativeOutput { content, metadata: Some(metadata) })
    }
}

fn miss(call_id: &str, part: Part) -> CallError {
    let id = if call_id.len() <= SHOWN_ID {
        call_id.to_string()
    } else {
        format!("{}… ({} bytes)", &call_id[..call_id.floor_char_boundary(SHOWN_ID)], call_id.len())
    };
    let message = match part {
        Part::Content => format!(
            "no stored output for call id {id}: it was evicted to bound memory, or no such call ran in this \
             session; re-run the tool if you still need it"
        ),
        other => format!(
            "no stored {} text for call id {id}: a part other than the output is kept only when the result \
             cut it (its marker names {READ_OUTPUT}), and it may have been evicted to bound memory; re-run \
             the tool if you still need it",
            other.as_str()
        ),
    };
    CallError::new(codes::OUTPUT_NOT_FOUND, message)
}

/// Lines `offset`.. (from byte `column` of the first) until `limit` lines or
/// `budget` bytes; a first line longer than the budget is shown in part.
fn window(full: &str, args: &Args, budget: usize) -> Result<(String, Value), CallError> {
    let total = full.lines().count();
    if args.offset > total.max(1) {
        return Err(CallError::new(
            codes::INVALID_ARGS,
            format!("offset {} is past the end: the output has {total} lines", args.offset),
        ));
    }
    let mut out = String::new();
    let mut last = args.offset - 1;
    let mut cut = None;
    for (i, line) in full.lines().enumerate().skip(args.offset - 1).take(args.limit) {
        let n = i + 1;
        let start = if n == args.offset { line.floor_char_boundary(args.column.min(line.len())) } else { 0 };
        let rest = &line[start..];
        let room = budget.saturating_sub(out.len() + 8);
        if rest.len() > room {
            if out.is_empty() {
                let end = rest.floor_char_boundary(room);
                let _ = writeln!(out, "{n:>6}\t{}", &rest[..end]);
                cut = Some((n, start + end, rest.len() - end));
            }
            break;
        }
        let _ = writeln!(out, "{n:>6}\t{rest}");
        last = n;
    }
    let mut metadata = json!({"total_lines": total, "first_line": args.offset, "last_line": last});
    if let Some((line, column, left)) = cut {
        let _ = writeln!(
            out,
            "[line {line} continues: {left} more bytes; use offset={line}, column={column} to continue]"
        );
        metadata["next"] = json!({"offset": line, "column": column});
    } else if last < total {
        let _ =
            writeln!(out, "[lines {}-{last} of {total}; use offset={} to continue]", args.offset, last + 1);
        metadata["next"] = json!({"offset": last + 1, "column": 0});
    }
    Ok((out, metadata))
}

/// The lines from `offset` on matching `pattern`, at most `limit` of them and
/// `budget` bytes; a first match longer than the budget is shown in part.
fn matches(full: &str, args: &Args, pattern: &str, budget: usize) -> Result<(String, Value), CallError> {
    let re = regex::Regex::new(pattern)
        .map_err(|e| CallError::new(codes::INVALID_ARGS, format!("pattern: {e}")))?;
    let total = full.lines().count();
    let (mut out, mut matched, mut shown, mut full_reply) = (String::new(), 0usize, 0usize, false);
    for (i, line) in full.lines().enumerate().skip(args.offset.saturating_sub(1)) {
        if !re.is_match(line) {
            continue;
        }
        matched += 1;
        if shown >= args.limit || full_reply {
            continue;
        }
        let room = budget.saturating_sub(out.len() + 8);
        if line.len() > room {
            full_reply = true;
            if shown == 0 {
                let end = line.floor_char_boundary(room);
                let _ = writeln!(out, "{:>6}\t{}", i + 1, &line[..end]);
                let _ = writeln!(
                    out,
                    "[line {} continues: {} more bytes; read it with offset={}, column={end} and no pattern]",
                    i + 1,
                    line.len() - end,
                    i + 1
                );
                shown = 1;
            }
            continue;
        }
        let _ = writeln!(out, "{:>6}\t{line}", i + 1);
        shown += 1;
    }
    if matched == 0 {
        let _ = writeln!(out, "[no line of the {total} lines matches {pattern}]");
    } else if matched > shown {
        let why = if full_reply {
            "the reply is full; narrow the pattern or start later with offset"
        } else {
            "raise limit or narrow the pattern"
        };
        let _ = writeln!(out, "[{} more matching lines not shown; {why}]", matched - shown);
    }
    Ok((out, json!({"total_lines": total, "matches": matched})))
}
