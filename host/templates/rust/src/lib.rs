//! `{{tool}}`: a toolhost tool. Counts the lines, words and bytes of a text
//! file in the work directory, like `wc`.
//!
//! Build with `./build.sh`; try it with
//! `toolhost call {{tool}} '{"path": "README.md"}' --plugin {{tool}}.wasm`.

use toolhost_guest::prelude::*;

/// The description the model reads to decide when to call the tool.
const DESCRIPTION: &str = "Count the lines, words and bytes of a text file, like `wc`. \
Paths are relative to the work directory.";

/// Arguments of `{{tool}}`. Doc comments become the JSON Schema's descriptions.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to count: relative to the work directory, or absolute inside it.
    pub path: String,
}

/// Lines (a last line without a newline counts), whitespace-separated words
/// and UTF-8 bytes of `text`.
pub fn counts(text: &str) -> (usize, usize, usize) {
    let mut lines = text.matches('\n').count();
    if !text.is_empty() && !text.ends_with('\n') {
        lines += 1;
    }
    (lines, text.split_whitespace().count(), text.len())
}

/// Run `{{tool}}`: `not_found`, `is_directory`, `binary_file`, `path_escape`
/// … come from the SDK's `read_text` as tool errors the model can act on.
pub fn run(args: Args, ctx: &Context) -> Result<Output, ToolError> {
    let text = toolhost_guest::fs::read_text(ctx, &args.path)?;
    let shown = ctx.display(&ctx.resolve(&args.path)?);
    let (lines, words, bytes) = counts(&text);
    Ok(Output::text(format!("{shown}: {lines} lines, {words} words, {bytes} bytes"))
        .with_metadata(json!({"path": shown, "lines": lines, "words": words, "bytes": bytes})))
}

/// The tools of this component. Read-only: it changes nothing, so it may run
/// in parallel and gets a read-only view of the work dir.
pub fn tools() -> Vec<Tool> {
    vec![tool("{{tool}}", DESCRIPTION, run).read_only()]
}

toolhost_guest::export_tools!(tools);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_like_wc() {
        assert_eq!(counts(""), (0, 0, 0));
        assert_eq!(counts("one two\nthree\n"), (2, 3, 14));
        assert_eq!(counts("no newline"), (1, 2, 10));
    }

    #[test]
    fn schema_describes_every_argument() {
        let schema = toolhost_guest::schemars::schema_for!(Args).to_value();
        toolhost_guest::check_schema("{{tool}}", &schema).unwrap();
    }
}
