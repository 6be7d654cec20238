//! The builtin web tools of toolhost: `fetch_url`, `http_request` and
//! `web_search`.
//!
//! Every request goes through the host's pinned fetch
//! ([`toolhost_guest::http::fetch`]): the host refuses private and local
//! addresses and hosts the plugin is not granted, follows redirects itself
//! and bounds the body. A refusal keeps the host's code (`blocked_url`,
//! `host_not_allowed`, `timeout`, …). The tools check their arguments
//! before anything is sent, and everything after the response arrives is a
//! pure function of the [`toolhost_guest::http::Response`] (`render` in each
//! module), which is what the unit tests exercise.
//!
//! Every error code is one of the shared [`toolhost_guest::codes`], except a
//! non-2xx status: `http_<status>` (`http_404`, `http_429`, …).

use toolhost_guest::{Tool, tool};

pub mod charset;
pub mod common;
pub mod fetch_url;
pub mod http_request;
pub mod search_page;
pub mod web_search;

/// The tools of this component, in the order the host lists them.
pub fn tools() -> Vec<Tool> {
    vec![
        tool("fetch_url", fetch_url::DESCRIPTION, fetch_url::run)
            .read_only()
            .timeout_ms(common::TOOL_TIMEOUT_MS),
        // PUT, PATCH and DELETE change or remove what the URL names.
        tool("http_request", http_request::DESCRIPTION, http_request::run)
            .destructive()
            .timeout_ms(common::TOOL_TIMEOUT_MS),
        tool("web_search", web_search::DESCRIPTION, web_search::run).read_only(),
    ]
}

toolhost_guest::export_tools!(tools);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_tools() {
        assert_eq!(tools().len(), 3);
    }

    /// Every property has one plain `type` (the host coerces by it) and a
    /// description (the model reads it); unknown fields are refused.
    #[test]
    fn schemas_type_and_describe_every_property() {
        use toolhost_guest::schemars::schema_for;
        let schemas = [
            ("fetch_url", schema_for!(fetch_url::Args)),
            ("http_request", schema_for!(http_request::Args)),
            ("web_search", schema_for!(web_search::Args)),
        ];
        for (tool, schema) in schemas {
            let schema = schema.to_value();
            toolhost_guest::check_schema(tool, &schema).unwrap();
            assert!(!schema["properties"].as_object().unwrap().is_empty(), "{tool}");
        }
    }

    #[test]
    fn header_values_are_typed_as_strings() {
        let schema = toolhost_guest::schemars::schema_for!(http_request::Args).to_value();
        assert_eq!(schema["properties"]["headers"]["additionalProperties"]["type"], "string");
        assert_eq!(schema["required"], serde_json::json!(["url"]));
    }
}
