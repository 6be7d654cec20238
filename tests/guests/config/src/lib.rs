//! A plugin that reads its settings through `wasi:config/store`, importing both versions
//! components use (`0.2.0-draft` and `0.2.0-rc.1`). Its one tool prints what each answers.

use toolhost_guest::prelude::*;

#[allow(missing_docs, unreachable_pub)]
mod draft {
    wit_bindgen::generate!({
        inline: "
            package wasi:config@0.2.0-draft;
            interface store {
                variant error { upstream(string), io(string) }
                get: func(key: string) -> result<option<string>, error>;
                get-all: func() -> result<list<tuple<string, string>>, error>;
            }
            world imports { import store; }
        ",
        world: "imports",
    });
}

#[allow(missing_docs, unreachable_pub)]
mod rc1 {
    wit_bindgen::generate!({
        inline: "
            package wasi:config@0.2.0-rc.1;
            interface store {
                variant error { upstream(string), io(string) }
                get: func(key: string) -> result<option<string>, error>;
                get-all: func() -> result<list<tuple<string, string>>, error>;
            }
            world imports { import store; }
        ",
        world: "imports",
    });
}

/// Which key to read.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Read {
    /// The key.
    key: String,
}

/// `draft: VALUE`, `rc1: VALUE` and every key the store lists, one per line.
fn read(args: Read, _: &Context) -> Result<Output, ToolError> {
    let draft =
        draft::wasi::config::store::get(&args.key).map_err(|e| ToolError::new("config", format!("{e:?}")))?;
    let rc1 =
        rc1::wasi::config::store::get(&args.key).map_err(|e| ToolError::new("config", format!("{e:?}")))?;
    let all = rc1::wasi::config::store::get_all().map_err(|e| ToolError::new("config", format!("{e:?}")))?;
    let keys: Vec<String> = all.into_iter().map(|(k, _)| k).collect();
    Ok(Output::text(format!("draft: {draft:?}\nrc1: {rc1:?}\nkeys: {}", keys.join(","))))
}

fn tools() -> Vec<Tool> {
    vec![
        tool(
            "config_read",
            "Reads one key through wasi:config/store (both versions) and lists the keys.",
            read,
        )
        .read_only(),
    ]
}

toolhost_guest::export_tools!(tools);
