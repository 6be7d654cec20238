//! `read_output`: reads back the full output of an earlier call from the output
//! store.

use std::fmt::Write as _;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{NativeCall, NativeOutput, NativeTool};
use crate::error::{CallError, codes};
use crate::host::Host;
use crate::spec::ToolSpec;

/// Name of the tool that reads back stored outputs.
pub const READ_OUTPUT: &str = "read_output";

/// `read_output`: a window of lines, or the lines matching a regex, of the
/// full output of an earlier call.
pub(crate) struct ReadOutput;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    call_id: String,
    #[serde(default = "one")]
    offset: usize,
    #[serde(default = "default_limit")]
    limit: usize,
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
        ToolSpec {
            name: READ_OUTPUT.into(),
            description: "Read the full output of an earlier tool call whose output was cut in the middle \
                (its marker names the call id). Give `call_id`, then either a window of lines (`offset`, \
                1-based, and `limit`, default 200) or a regular expression `pattern` to list the matching \
                lines with their line numbers (at most `limit`). Use it instead of re-running a command to \
                see what was cut. Outputs are kept in memory for a while; an evicted one says so."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "call_id": {"type": "string", "description": "The call id named in the cut output's marker."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Most lines to show (default 200)."},
                    "pattern": {"type": "string", "description": "Regular expression: show only matching lines (Rust regex syntax)."}
                },
                "required": ["call_id"],
                "additionalProperties": false
            }),
            read_only: true,
            destructive: false,
            timeout_ms: None,
        }
    }

    fn call<'a>(
        &'a self,
        host: &'a Host,
        args: Value,
        _call: NativeCall<'a>,
    ) -> BoxFuture<'a, Result<NativeOutput, CallError>> {
        Box::pin(async move { read(host, args) })
    }
}

fn read(host: &Host, args: Value) -> Result<NativeOutput, CallError> {
    {
        let args: Args = super::parse_args(args)?;
        let Some(full) = host.outputs().get(&args.call_id) else {
            return Err(CallError::new(
                codes::OUTPUT_NOT_FOUND,
                format!(
                    "no stored output for call id {}: it was evicted to bound memory, or no such call \
                     ran in this session; re-run the tool if you still need it",
                    args.call_id
                ),
            ));
        };
        let total = full.lines().count();
        let mut out = String::new();
        let metadata;
        if let Some(pattern) = &args.pattern {
            let re = regex::Regex::new(pattern)
                .map_err(|e| CallError::new(codes::INVALID_ARGS, format!("pattern: {e}")))?;
            let mut matched = 0;
            for (i, line) in full.lines().enumerate().skip(args.offset - 1) {
                if re.is_match(line) {
                    matched += 1;
                    if matched <= args.limit {
                        let _ = writeln!(out, "{:>6}\t{line}", i + 1);
                    }
                }
            }
            if matched == 0 {
                let _ = writeln!(out, "[no line of the {total} lines matches {pattern}]");
            } else if matched > args.limit {
                let _ = writeln!(
                    out,
                    "[{} more matching lines not shown; raise limit or narrow the pattern]",
                    matched - args.limit
                );
            }
            metadata = json!({"call_id": args.call_id, "total_lines": total, "matches": matched});
        } else {
            if args.offset > total.max(1) {
                return Err(CallError::new(
                    codes::INVALID_ARGS,
                    format!("offset {} is past the end: the output has {total} lines", args.offset),
                ));
            }
            let mut last = args.offset.saturating_sub(1);
            for (i, line) in full.lines().enumerate().skip(args.offset - 1).take(args.limit) {
                let _ = writeln!(out, "{:>6}\t{line}", i + 1);
                last = i + 1;
            }
            if last < total {
                let _ = writeln!(
                    out,
                    "[lines {}-{last} of {total}; use offset={} to continue]",
                    args.offset,
                    last + 1
                );
            }
            metadata = json!({"call_id": args.call_id, "total_lines": total, "first_line": args.offset, "last_line": last});
        }
        Ok(NativeOutput { content: out, metadata: Some(metadata) })
    }
}
