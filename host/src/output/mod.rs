//! Output budgets: every part of a call's result (content, error message,
//! display, metadata) is bounded before it reaches the caller, and its full
//! text is kept by call id in a byte-budgeted store.
//!
//! Order for each part: redact (the executor) → keep the full text in the
//! [`OutputStore`] → cut what the caller sees, head + tail, with a marker naming
//! `read_output`, the call id and the part. Metadata too large or too deep to
//! parse is kept as text and replaced by a small stand-in ([`parts`]). An image
//! (the reserved metadata key [`IMAGE_KEY`]) is taken out of the metadata first,
//! checked and bounded by [`MAX_IMAGE_BYTES`], and travels beside the text
//! (`image`); it is never put in the store nor clamped. Between the store and
//! the cut, a build, test or install log is shaped by what it is when the tool
//! and the call allow it ([`shape`], [`shaping`]).

pub(crate) mod claims;
mod disk;
mod image;
mod parts;
mod redis;
pub mod shape;
mod shaping;
mod store;
mod stored;

pub use claims::{CLOCK_SKEW, Claim};
pub use image::{IMAGE_KEY, Image, MAX_IMAGE_BYTES};
pub(crate) use parts::{Metadata, Parts, bound_error};
pub(crate) use shaping::{Report as ShapeReport, ShapeCall};
pub(crate) use store::DISK_MAX_FILES;
pub use store::{DEFAULT_REDIS_EXPIRY, OutputStore};
pub use stored::{StoreError, Stored};

/// Name of the tool that reads back stored outputs (the marker of a cut names it).
pub const READ_OUTPUT: &str = "read_output";

/// Share of the clamp budget given to the head; the tail gets the rest,
/// since errors and summaries tend to come last.
const HEAD_SHARE: f64 = 0.4;

/// What was cut from the middle of an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Omitted {
    /// Whole lines left out.
    pub lines: usize,
    /// Bytes left out.
    pub bytes: usize,
}

/// A part of a call's result, as kept in the store and named to `read_output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// What the model reads.
    #[default]
    Content,
    /// The message of a failed call.
    Error,
    /// The text for a UI.
    Display,
    /// The structured facts, as the tool's JSON text.
    Metadata,
}

impl Part {
    /// Every part, in the order `read_output`'s schema lists them.
    pub const ALL: [Part; 4] = [Part::Content, Part::Error, Part::Display, Part::Metadata];

    /// The name `read_output` takes (`content`, `error`, `display`, `metadata`).
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Content => "content",
            Part::Error => "error",
            Part::Display => "display",
            Part::Metadata => "metadata",
        }
    }
}

/// Cut `text` to at most about `max_bytes`: a head and a tail,
/// both ending and starting at line boundaries, with a marker naming what was
/// left out, the call id the full text is kept under, the part unless it is the
/// content, or why the full text was not kept (`stored`). `lines` maps each
/// line of `text` to the 1-based line of the stored text it shows, when `text`
/// is a shaped copy (the marker's `offset` is a stored line).
pub(crate) fn clamp_part(
    text: &str,
    max_bytes: usize,
    call_id: &str,
    part: Part,
    stored: &Stored,
    lines: Option<&[usize]>,
) -> (String, Option<Omitted>) {
    if text.len() <= max_bytes {
        return (text.to_string(), None);
    }
    let head_budget = (max_bytes as f64 * HEAD_SHARE) as usize;
    let tail_budget = max_bytes - head_budget;

    let mut head_end = text.floor_char_boundary(head_budget);
    if let Some(nl) = text[..head_end].rfind('\n') {
        head_end = nl + 1;
    }
    let mut tail_start = text.ceil_char_boundary(text.len() - tail_budget).max(head_end);
    if let Some(nl) = text[tail_start..].find('\n')
        && tail_start + nl + 1 < text.len()
    {
        tail_start += nl + 1;
    }
    let middle = &text[head_end..tail_start];
    let omitted = Omitted { lines: middle.matches('\n').count(), bytes: middle.len() };
    let mut first_omitted = text[..head_end].matches('\n').count() + 1;
    if let Some(&stored_line) = lines.and_then(|map| map.get(first_omitted - 1)) {
        first_omitted = stored_line;
    }
    let part_arg = match part {
        Part::Content => String::new(),
        other => format!("\"part\": \"{}\", ", other.as_str()),
    };
    let marker = match stored {
        Stored::Kept => format!(
            "\n[... {} lines ({} bytes) omitted from the middle. To see them, call {READ_OUTPUT} with \
             {{\"call_id\": \"{call_id}\", {part_arg}\"offset\": {first_omitted}}} or with a \"pattern\" ...]\n",
            omitted.lines, omitted.bytes
        ),
        Stored::TooLarge => format!(
            "\n[... {} lines ({} bytes) omitted from the middle. The whole {} ({} bytes) was too large for \
             the output store and was not kept ...]\n",
            omitted.lines,
            omitted.bytes,
            part.as_str(),
            text.len()
        ),
        Stored::Failed(why) => format!(
            "\n[... {} lines ({} bytes) omitted from the middle. The whole {} ({} bytes) could not be kept: \
             {} ...]\n",
            omitted.lines,
            omitted.bytes,
            part.as_str(),
            text.len(),
            why[..why.floor_char_boundary(300)].replace("...]", "..]")
        ),
    };
    let mut out = String::with_capacity(head_end + marker.len() + text.len() - tail_start);
    out.push_str(&text[..head_end]);
    out.push_str(&marker);
    out.push_str(&text[tail_start..]);
    (out, Some(omitted))
}

#[cfg(test)]
mod tests {
    fn clamp(text: &str, max_bytes: usize, call_id: &str) -> (String, Option<Omitted>) {
        clamp_part(text, max_bytes, call_id, Part::Content, &Stored::Kept, None)
    }

    use super::*;

    #[test]
    fn short_output_is_untouched() {
        assert_eq!(clamp("a\nb\n", 100, "c1"), ("a\nb\n".to_string(), None));
    }

    #[test]
    fn long_output_keeps_head_and_tail_at_line_boundaries() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (out, omitted) = clamp(&text, 1000, "c7");
        let omitted = omitted.unwrap();
        assert!(out.starts_with("line 0\nline 1\n"));
        assert!(out.ends_with("line 999\n"));
        assert!(
            out.contains("omitted from the middle. To see them, call read_output with {\"call_id\": \"c7\"")
        );
        // Every kept line is whole, and kept + omitted = all.
        let kept: Vec<&str> = out.lines().filter(|l| l.starts_with("line ")).collect();
        assert!(kept.iter().all(|l| l[5..].parse::<u32>().is_ok()), "a line was cut");
        assert_eq!(kept.len() + omitted.lines, 1000);
        assert!(out.len() < 1200);
    }

    #[test]
    fn one_giant_line_is_cut_on_char_boundaries() {
        let text = "é".repeat(5000);
        let (out, omitted) = clamp(&text, 101, "c");
        assert!(omitted.unwrap().bytes > 9000);
        assert!(out.starts_with('é') && out.ends_with('é'));
    }

    #[test]
    fn a_part_marker_names_the_part_or_says_it_was_not_kept() {
        let text: String = (0..1000).map(|i| format!("e{i}\n")).collect();
        let (out, _) = clamp_part(&text, 500, "c9", Part::Error, &Stored::Kept, None);
        assert!(
            out.contains(r#"call read_output with {"call_id": "c9", "part": "error", "offset": "#),
            "{out}"
        );
        let (out, _) = clamp_part(&text, 500, "c9", Part::Display, &Stored::TooLarge, None);
        assert!(out.contains("The whole display (4890 bytes) was too large for the output store"), "{out}");
        assert!(!out.contains("read_output"), "{out}");
        assert!(out.len() < 700);
        let gone = Stored::Failed("the output store at redis://127.0.0.1:1 is unreachable: refused".into());
        let (out, _) = clamp_part(&text, 500, "c9", Part::Content, &gone, None);
        assert!(
            out.contains("The whole content (4890 bytes) could not be kept: the output store at redis://"),
            "{out}"
        );
        assert!(!out.contains("read_output"), "{out}");
    }
}

#[cfg(test)]
#[path = "clamp_props.rs"]
mod props;
