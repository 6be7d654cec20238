//! Keeping, shaping and cutting one part of a result: the full text goes to
//! the store; the model's copy is shaped by what it is ([`super::shape`]) when
//! the call allows it ([`ShapeCall`]) and the full text was kept, then clamped
//! like any text (a marker's line numbers are the stored text's).
//!
//! A tool opts in by declaring a boolean `raw` argument in its schema (the
//! builtins `terminal` and `run_tests` do); a call with `raw: true`, or a host
//! whose policy sets `[output] shape = false`, gets today's head + tail. A
//! string `command` argument, when the tool has one, is read as a hint of the
//! format. What was recognised, how many lines were folded, and the tokens
//! (`o200k_base`) before and after go into the metadata as `output_kind` and
//! `output_tokens`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::shape::{self, Kind, Request, Shape};
use super::{Omitted, OutputStore, Part, Stored, clamp_part};

/// Outputs at least this long are shaped and counted on a blocking thread.
const BLOCKING_BYTES: usize = 256 << 10;

/// The shaping one call allows.
#[derive(Debug, Clone)]
pub(crate) struct ShapeCall {
    /// The call's `command` argument (a hint of the format).
    command: Option<String>,
}

impl ShapeCall {
    /// The shaping a call of a tool with the argument schema `parameters` and
    /// the arguments `args` gets: none when `enabled` is false (the policy), the
    /// tool declares no boolean `raw` argument, or the call sets `raw: true`.
    pub(crate) fn for_call(enabled: bool, parameters: &Value, args: &Value) -> Option<Self> {
        let declared = parameters.pointer("/properties/raw/type").and_then(Value::as_str) == Some("boolean");
        if !enabled || !declared || args.get("raw") == Some(&Value::Bool(true)) {
            return None;
        }
        Some(Self { command: args.get("command").and_then(Value::as_str).map(str::to_owned) })
    }
}

/// What shaping did to a part: the format, the lines folded, and the tokens
/// of the full text and of the model's copy (`None`: it was left whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Report {
    kind: Kind,
    folded: usize,
    tokens: Option<(usize, usize)>,
}

impl Report {
    /// `metadata` with `output_kind` (and `output_tokens` when shaped) added: a
    /// new object when there is none; a metadata that is not an object is left as it is.
    pub(crate) fn annotate(&self, metadata: Option<Value>) -> Option<Value> {
        let mut metadata = metadata.unwrap_or_else(|| json!({}));
        if let Some(object) = metadata.as_object_mut() {
            object.insert(
                "output_kind".into(),
                json!({"format": self.kind.as_str(), "folded_lines": self.folded}),
            );
            if let Some((before, after)) = self.tokens {
                object.insert("output_tokens".into(), json!({"before": before, "after": after}));
            }
        }
        Some(metadata)
    }
}

/// A part as the caller gets it.
pub(crate) struct Clamped {
    pub(crate) text: String,
    pub(crate) omitted: Option<Omitted>,
    pub(crate) report: Option<Report>,
}

/// Keep `text` as `part` of `call_id` (always when `always` or when the model's
/// copy is shaped, else only when it is over `max_bytes`), shape it when
/// `shape` allows, then cut it to `max_bytes` with a marker saying where the
/// whole is, or that it was too large to keep. The shaped copy is used only
/// when the full text was kept: its markers point there.
pub(crate) async fn keep_and_clamp(
    store: &OutputStore,
    call_id: &str,
    part: Part,
    text: String,
    max_bytes: usize,
    always: bool,
    shape: Option<&ShapeCall>,
) -> Clamped {
    let shape = shape.filter(|_| text.lines().nth(shape::MIN_LINES - 1).is_some());
    if text.len() <= max_bytes && !always && shape.is_none() {
        return Clamped { text, omitted: None, report: None };
    }
    if text.len() > store.max_bytes() {
        let (text, omitted) = clamp_part(&text, max_bytes, call_id, part, &Stored::TooLarge, None);
        return Clamped { text, omitted, report: None };
    }
    let text: Arc<str> = text.into();
    let copy = match shape {
        Some(shape) => shaped_copy(text.clone(), shape.command.clone(), call_id, part, max_bytes).await,
        None => None,
    };
    let shaped = matches!(copy, Some(ModelCopy::Shaped(..)));
    let stored = store.keep(call_id, part, text.clone(), text.len() > max_bytes || shaped).await;
    let report = match copy {
        Some(ModelCopy::Shaped(clamped)) if stored.is_kept() => return clamped,
        Some(ModelCopy::Untouched(kind)) => Some(Report { kind, folded: 0, tokens: None }),
        _ => None,
    };
    let (text, omitted) = clamp_part(&text, max_bytes, call_id, part, &stored, None);
    Clamped { text, omitted, report }
}

/// The model's copy of a recognised output, or the format of one left whole.
enum ModelCopy {
    Shaped(Clamped),
    Untouched(Kind),
}

/// Shape `text`, clamp the copy (as kept), and count both in tokens: on a
/// blocking thread when the text is long.
async fn shaped_copy(
    text: Arc<str>,
    command: Option<String>,
    call_id: &str,
    part: Part,
    max_bytes: usize,
) -> Option<ModelCopy> {
    if text.len() < BLOCKING_BYTES {
        return copy_of(&text, command.as_deref(), call_id, part, max_bytes);
    }
    let call_id = call_id.to_string();
    let work = move || copy_of(&text, command.as_deref(), &call_id, part, max_bytes);
    match tokio::task::spawn_blocking(work).await {
        Ok(copy) => copy,
        Err(error) => {
            tracing::warn!(%error, "shaping an output failed; it is clamped whole");
            None
        }
    }
}

fn copy_of(
    text: &str,
    command: Option<&str>,
    call_id: &str,
    part: Part,
    max_bytes: usize,
) -> Option<ModelCopy> {
    let request = Request { command, call_id, part, budget: max_bytes };
    match shape::shape(text, &request) {
        Shape::Unknown => None,
        Shape::Untouched(kind) => Some(ModelCopy::Untouched(kind)),
        Shape::Shaped(shaped) => {
            let (copy, omitted) =
                clamp_part(&shaped.text, max_bytes, call_id, part, &Stored::Kept, Some(&shaped.lines));
            let tokens = Some((shape::count_tokens(text), shape::count_tokens(&copy)));
            let report = Some(Report { kind: shaped.kind, folded: shaped.folded_lines, tokens });
            Some(ModelCopy::Shaped(Clamped { text: copy, omitted, report }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> String {
        let tests: String = (0..200).map(|i| format!("test t{i} ... ok\n")).collect();
        format!(
            "   Compiling a v0.1.0\nrunning 201 tests\n{tests}test t200 ... FAILED\ntest result: FAILED. 200 passed\n"
        )
    }

    fn call() -> ShapeCall {
        ShapeCall { command: Some("cargo test".into()) }
    }

    #[test]
    fn only_tools_declaring_a_boolean_raw_opt_in_and_raw_calls_opt_out() {
        let declared = json!({"properties": {"raw": {"type": "boolean"}, "command": {"type": "string"}}});
        let shaped =
            |enabled, parameters: &Value, args: Value| ShapeCall::for_call(enabled, parameters, &args);
        let on = shaped(true, &declared, json!({"command": "make"})).unwrap();
        assert_eq!(on.command.as_deref(), Some("make"));
        assert!(shaped(true, &declared, json!({"raw": false})).is_some());
        assert!(shaped(true, &declared, json!({"raw": true})).is_none());
        assert!(shaped(false, &declared, json!({})).is_none());
        assert!(shaped(true, &json!({"properties": {"raw": {"type": "string"}}}), json!({})).is_none());
        assert!(shaped(true, &json!({"properties": {}}), json!({})).is_none());
    }

    #[tokio::test]
    async fn a_copy_is_shaped_only_when_the_whole_text_is_kept() {
        let log = log();
        let store = OutputStore::new(1 << 20);
        let out = keep_and_clamp(&store, "c", Part::Content, log.clone(), 30_000, true, Some(&call())).await;
        assert!(
            out.text.contains("[... 192 passing tests folded (lines 5-196); call read_output"),
            "{}",
            out.text
        );
        let report = out.report.unwrap();
        assert_eq!((report.kind, report.folded), (Kind::Cargo, 192));
        assert!(report.tokens.is_some_and(|(before, after)| after * 3 < before));
        assert_eq!(store.get("c").await.as_deref(), Some(log.as_str()));

        // Too large for the store, or the store failed: the text as today, no markers.
        let small = OutputStore::new(100);
        let out = keep_and_clamp(&small, "c", Part::Content, log.clone(), 30_000, true, Some(&call())).await;
        assert_eq!((out.text.as_str(), out.report), (log.as_str(), None));
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("store");
        let failing = OutputStore::on_disk(&gone, 1 << 20).unwrap();
        std::fs::remove_dir(&gone).unwrap();
        let out = keep_and_clamp(&failing, "c", Part::Error, log.clone(), 30_000, false, Some(&call())).await;
        assert_eq!((out.text.as_str(), out.report), (log.as_str(), None));
    }

    #[tokio::test]
    async fn a_shaped_copy_over_the_clamp_is_cut_with_stored_line_numbers() {
        let noise: String = (0..3000).map(|i| format!("test t{i} ... ok\n")).collect();
        let errors: String = (0..400).map(|i| format!("error: e{i}\n")).collect();
        let log = format!("running 3400 tests\n{noise}{errors}test result: FAILED\n");
        let store = OutputStore::new(1 << 20);
        let out = keep_and_clamp(&store, "c", Part::Content, log, 2_000, true, Some(&call())).await;
        assert!(out.omitted.is_some());
        // The clamp's marker points at a stored line among the errors, not at a line of the copy.
        let at = out.text.find("omitted from the middle").unwrap();
        let offset: usize =
            out.text[at..].split("\"offset\": ").nth(1).unwrap().split('}').next().unwrap().parse().unwrap();
        assert!((3006..3402).contains(&offset), "{offset}: {}", out.text);
    }
}
