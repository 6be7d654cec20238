//! Bounding a call's result part by part: the content and display are kept
//! whole in the store and cut for the caller; metadata is parsed only when its
//! text is within [`Limits::metadata_bytes`] and [`Limits::metadata_depth`],
//! else kept as text and replaced by a stand-in (an image under the reserved key is
//! taken out first, [`super::image`]); an error's message is kept and
//! cut like content, and a code that is not a short word is refused.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::shaping::{ShapeCall, keep_and_clamp};
use super::{Image, Omitted, OutputStore, Part, Stored};
use crate::error::{CallError, codes};
use crate::limits::{Limits, json_nesting_exceeds};
use crate::policy::Redactor;

/// Longest error code, in bytes (codes are short `snake_case` words).
const MAX_CODE_BYTES: usize = 64;

/// The metadata of a result before it is bounded.
pub(crate) enum Metadata {
    /// A guest's JSON text, not parsed yet.
    Text(String),
    /// A host tool's value (the host built it: small).
    Value(Value),
}

/// A successful result before the budgets apply (content and display already
/// redacted).
pub(crate) struct Parts {
    pub(crate) content: String,
    pub(crate) display: Option<String>,
    pub(crate) metadata: Option<Metadata>,
}

/// A successful result within the budgets.
pub(crate) struct Bounded {
    pub(crate) output: String,
    pub(crate) omitted: Option<Omitted>,
    pub(crate) display: Option<String>,
    pub(crate) metadata: Option<Value>,
    /// The image the metadata carried ([`super::image`]), checked.
    pub(crate) image: Option<Image>,
}

impl Bounded {
    fn annotated(mut self, report: Option<super::ShapeReport>) -> Self {
        if let Some(report) = report {
            self.metadata = report.annotate(self.metadata.take());
        }
        self
    }
}

impl Parts {
    /// Bytes of text the result carries: content, display and metadata text
    /// (what [`Limits::output_bytes`] bounds).
    pub(crate) fn size(&self) -> usize {
        let metadata = match &self.metadata {
            Some(Metadata::Text(text)) => text.len(),
            _ => 0,
        };
        self.content.len() + self.display.as_ref().map_or(0, String::len) + metadata
    }

    /// Keep and cut each part for the call `call_id` under `limits`. The
    /// content is always kept; display and metadata only when the caller does
    /// not get them whole. Fails only when metadata within the bounds is not
    /// JSON (`bad_output`); `redactor` redacts the metadata (parsed, or as text
    /// when it is kept unparsed). The content is shaped when `shape` allows
    /// ([`super::shaping`]).
    pub(crate) async fn bound(
        self,
        store: &OutputStore,
        call_id: &str,
        limits: &Limits,
        redactor: Option<&Redactor>,
        shape: Option<&ShapeCall>,
    ) -> Result<Bounded, CallError> {
        let (metadata, image) = match self.metadata {
            None => (None, None),
            Some(Metadata::Value(value)) => (Some(value), None),
            Some(Metadata::Text(text)) => {
                let (rest, image) = super::image::lift(text, limits)?;
                let rest = match rest {
                    Some(text) => Some(bound_metadata(store, call_id, text, limits, redactor).await?),
                    None => None,
                };
                (rest, image)
            }
        };
        let content =
            keep_and_clamp(store, call_id, Part::Content, self.content, limits.clamp_bytes, true, shape)
                .await;
        let display = match self.display {
            Some(text) => Some(
                keep_and_clamp(store, call_id, Part::Display, text, limits.display_bytes, false, None)
                    .await
                    .text,
            ),
            None => None,
        };
        let bounded = Bounded { output: content.text, omitted: content.omitted, display, metadata, image };
        Ok(bounded.annotated(content.report))
    }
}

/// `err` bounded for the call `call_id`: a code longer than a short word, or
/// with spaces or control characters, becomes `bad_output`; a message over
/// [`Limits::clamp_bytes`] is kept whole as the `error` part and cut, and
/// shaped when `shape` allows (with what shaping did). Every failed result is
/// built through this, so no path returns an unbounded error.
pub(crate) async fn bound_error(
    store: &OutputStore,
    call_id: &str,
    mut err: CallError,
    limits: &Limits,
    shape: Option<&ShapeCall>,
) -> (CallError, Option<super::ShapeReport>) {
    if err.code.len() > MAX_CODE_BYTES || !err.code.bytes().all(|b| b.is_ascii_graphic()) {
        let end = err.code.floor_char_boundary(MAX_CODE_BYTES);
        let why = format!(
            "the tool failed with an invalid error code ({} bytes, starting {:?}; codes are words of at most \
             {MAX_CODE_BYTES} bytes)",
            err.code.len(),
            &err.code[..end]
        );
        err.message = if err.message.is_empty() { why } else { format!("{why}: {}", err.message) };
        err.code = codes::BAD_OUTPUT.to_string();
    }
    let message = std::mem::take(&mut err.message);
    let clamped =
        keep_and_clamp(store, call_id, Part::Error, message, limits.clamp_bytes, false, shape).await;
    err.message = clamped.text;
    (err, clamped.report)
}

/// The metadata text of `call_id` as JSON, when within the bounds; else kept as
/// (redacted) text and replaced by a stand-in naming its size, why it was not
/// parsed, and where it is kept.
async fn bound_metadata(
    store: &OutputStore,
    call_id: &str,
    mut text: String,
    limits: &Limits,
    redactor: Option<&Redactor>,
) -> Result<Value, CallError> {
    let why = if text.len() > limits.metadata_bytes {
        format!(
            "the metadata is {} bytes; at most {} bytes are parsed and returned",
            text.len(),
            limits.metadata_bytes
        )
    } else if json_nesting_exceeds(&text, limits.metadata_depth) {
        format!("the metadata nests arrays and objects deeper than {} levels", limits.metadata_depth)
    } else {
        let mut value: Value = serde_json::from_str(&text).map_err(|e| {
            CallError::new(codes::BAD_OUTPUT, format!("the tool's metadata is not JSON: {e}"))
        })?;
        if let Some(redactor) = redactor {
            redactor.redact_json(&mut value);
        }
        return Ok(value);
    };
    let bytes = text.len();
    if let Some(redactor) = redactor
        && let Cow::Owned(redacted) = redactor.redact(&text)
    {
        text = redacted;
    }
    let stored = store.put_part(call_id, Part::Metadata, text.into()).await;
    let mut stand_in = json!({"omitted": true, "bytes": bytes, "reason": why, "kept": stored.is_kept()});
    if let Stored::Failed(why) = &stored {
        stand_in["not_kept"] = json!(why);
    }
    if stored.is_kept() {
        stand_in["read_output"] = json!({"call_id": call_id, "part": Part::Metadata.as_str()});
    }
    Ok(stand_in)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            clamp_bytes: 100,
            display_bytes: 200,
            metadata_bytes: 64,
            metadata_depth: 3,
            ..Limits::default()
        }
    }

    fn parts(content: &str, display: Option<&str>, metadata: Option<&str>) -> Parts {
        Parts {
            content: content.into(),
            display: display.map(Into::into),
            metadata: metadata.map(|m| Metadata::Text(m.into())),
        }
    }

    #[tokio::test]
    async fn small_parts_pass_whole_and_only_the_content_is_kept() {
        let store = OutputStore::new(1 << 20);
        let out = parts("hi", Some("shown"), Some(r#"{"a": [1]}"#))
            .bound(&store, "c", &limits(), None, None)
            .await
            .unwrap();
        assert_eq!((out.output.as_str(), out.display.as_deref()), ("hi", Some("shown")));
        assert_eq!(out.metadata, Some(json!({"a": [1]})));
        assert_eq!(store.get("c").await.as_deref(), Some("hi"));
        assert_eq!(store.get_part("c", Part::Display).await, None);
        assert_eq!(store.get_part("c", Part::Metadata).await, None);
    }

    #[tokio::test]
    async fn long_display_and_metadata_are_kept_and_replaced() {
        let store = OutputStore::new(1 << 20);
        let display: String = (0..100).map(|i| format!("d{i}\n")).collect();
        let metadata = format!(r#"{{"k": "{}"}}"#, "v".repeat(100));
        let redactor = Redactor::new(&[("TOKEN".into(), "vvvvvvvvvv".into())]);
        let out = parts("x", Some(&display), Some(&metadata))
            .bound(&store, "c", &limits(), Some(&redactor), None)
            .await
            .unwrap();
        let shown = out.display.unwrap();
        assert!(shown.len() < 400 && shown.contains(r#""part": "display""#), "{shown}");
        assert_eq!(store.get_part("c", Part::Display).await.as_deref(), Some(display.as_str()));
        let stand_in = out.metadata.unwrap();
        assert_eq!(stand_in["bytes"], metadata.len());
        assert_eq!(stand_in["read_output"], json!({"call_id": "c", "part": "metadata"}));
        let kept = store.get_part("c", Part::Metadata).await.unwrap();
        assert!(kept.contains("[REDACTED]") && !kept.contains("vvvvvvvvvv"), "{kept}");
    }

    #[tokio::test]
    async fn deep_metadata_is_not_parsed_and_bad_json_is_bad_output() {
        let store = OutputStore::new(1 << 20);
        let out = parts("", None, Some("[[[[1]]]]")).bound(&store, "c", &limits(), None, None).await.unwrap();
        let reason = out.metadata.unwrap()["reason"].as_str().unwrap().to_string();
        assert!(reason.contains("deeper than 3 levels"), "{reason}");
        let err =
            parts("", None, Some("{nope")).bound(&store, "d", &limits(), None, None).await.err().unwrap();
        assert_eq!(err.code, codes::BAD_OUTPUT);
    }

    #[tokio::test]
    async fn a_part_too_large_for_the_store_says_so() {
        let store = OutputStore::new(150);
        let out = parts("", None, Some(&format!("[{}0]", "0,".repeat(100))))
            .bound(&store, "c", &limits(), None, None)
            .await;
        assert_eq!(out.unwrap().metadata.unwrap()["kept"], false);
        let err =
            bound_error(&store, "c", CallError::new("boom", "e\n".repeat(100)), &limits(), None).await.0;
        assert!(err.message.contains("too large for the output store"), "{}", err.message);
        assert!(store.get_part("c", Part::Error).await.is_none());
    }

    #[tokio::test]
    async fn errors_are_kept_and_cut_and_bad_codes_refused() {
        let store = OutputStore::new(1 << 20);
        let message = "m\n".repeat(1000);
        let err = bound_error(&store, "c", CallError::new("boom", message.clone()), &limits(), None).await.0;
        assert_eq!(err.code, "boom");
        assert!(err.message.len() < 400 && err.message.contains(r#""part": "error""#), "{}", err.message);
        assert_eq!(store.get_part("c", Part::Error).await.as_deref(), Some(message.as_str()));
        let short = bound_error(&store, "d", CallError::new("boom", "short"), &limits(), None).await.0;
        assert_eq!(short, CallError::new("boom", "short"));
        for code in ["x".repeat(1 << 20), "two words".into(), "nl\n".into()] {
            let err = bound_error(&store, "e", CallError::new(code, "why"), &Limits::default(), None).await.0;
            assert_eq!(err.code, codes::BAD_OUTPUT);
            assert!(err.message.contains("invalid error code") && err.message.len() < 250, "{}", err.message);
        }
    }
}
