//! Write a [toolhost](https://github.com/) tool in Rust.
//!
//! A tool is a serde arguments struct (its JSON Schema is derived with
//! [`schemars`]), a function from those arguments to
//! `Result<Output, ToolError>`, and one line listing the tools in the export
//! macro:
//!
//! ```ignore
//! use toolhost_guest::prelude::*;
//!
//! /// Arguments of `greet`.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! fn greet(args: Greet, _ctx: &Context) -> Result<Output, ToolError> {
//!     Ok(Output::text(format!("hello, {}", args.name)))
//! }
//!
//! fn tools() -> Vec<Tool> {
//!     vec![tool("greet", "Greet someone by name.", greet).read_only()]
//! }
//!
//! toolhost_guest::export_tools!(tools);
//! ```
//!
//! The crate depends on `toolhost-guest`, `serde` (with `derive`) and
//! `schemars` (the derives expand to paths in those crates), and is a
//! `cdylib`. Build it with `cargo build --target wasm32-wasip2 --release`: the `.wasm`
//! in `target/wasm32-wasip2/release/` is a component the host loads with
//! `toolhost --plugin FILE.wasm`.
//!
//! The host runs every call in a fresh instance, so nothing a tool stores in a
//! global survives to the next call. The work directory (when the tool has
//! filesystem access) is the only directory the tool can see; resolve the
//! paths the model passes with [`Context::resolve`], or read a text file the
//! model names with [`fs::read_text`] (every failure a code the model can act on).
//! Show a name or path found on disk with [`quote_name`] (or
//! [`Context::show`]): a hostile file name then cannot forge lines of output
//! or send escape sequences to a terminal.
//!
//! Beyond the work dir, a tool reaches the outside only through the host:
//! [`http::fetch`] (pinned outbound HTTP) and [`exec::run`] (an allow-listed
//! program in a confined child process). A component imports only what it
//! calls, and the host loads it only when its policy grants that.

mod context;
mod error;
pub mod exec;
mod export;
pub mod fs;
pub mod http;
pub mod log;
mod name;
pub mod search;

pub use context::Context;
pub use error::{ToolError, codes};
pub use export::{Output, Tool, check_schema, tool};
pub use name::{quote_name, quote_name_always};

/// The generated bindings of the `toolhost:plugin` world. Tool authors do not
/// need them directly; [`export_tools!`] uses them.
#[doc(hidden)]
pub mod bindings {
    #![allow(missing_docs, unreachable_pub, unsafe_code)]
    wit_bindgen::generate!({
        path: "../wit",
        // The largest world; a component imports only what it uses.
        world: "host-plugin",
        pub_export_macro: true,
        export_macro_name: "__export_plugin",
        default_bindings_module: "toolhost_guest::bindings",
    });
}

#[doc(hidden)]
pub use export::__dispatch;
pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize, Serialize};
pub use serde_json;

/// Everything a tool file usually needs.
pub mod prelude {
    pub use crate::{Context, Output, Tool, ToolError, codes, tool};
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
    pub use serde_json::json;
}

/// Export the tools returned by a `fn() -> Vec<Tool>` as this component's
/// `toolhost:plugin/tools` interface. Use it once per component.
#[macro_export]
macro_rules! export_tools {
    ($tools:path) => {
        #[doc(hidden)]
        #[allow(dead_code)]
        struct __ToolhostPlugin;

        impl $crate::bindings::exports::toolhost::plugin::tools::Guest for __ToolhostPlugin {
            fn list_tools() -> ::std::vec::Vec<$crate::bindings::toolhost::plugin::types::ToolSpec> {
                $crate::__dispatch::list(&$tools())
            }

            fn call(
                name: ::std::string::String,
                args_json: ::std::string::String,
                context: $crate::bindings::toolhost::plugin::types::CallContext,
            ) -> ::std::result::Result<
                $crate::bindings::toolhost::plugin::types::ToolOutput,
                $crate::bindings::toolhost::plugin::types::ToolError,
            > {
                $crate::__dispatch::call(&$tools(), &name, &args_json, context)
            }
        }

        // Only a wasm build exports the interface (the export names are not
        // valid native symbols); native builds keep the tools testable.
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_plugin!(__ToolhostPlugin with_types_in $crate::bindings);
    };
}
