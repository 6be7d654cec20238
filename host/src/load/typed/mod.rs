//! Typed-export components: a component that does not export
//! `toolhost:plugin/tools` but exports functions (at the top level of its world or
//! in exported interfaces) is loaded as one tool per function, the way MCP-oriented
//! wasm hosts run them.
//!
//! Derived once at load from the compiled component's type ([`derive`]): the tool
//! name (`get-weather` → `get_weather`; on a collision the interface's name first,
//! `weather_get_weather`), the description (its WIT doc comment from the
//! `package-docs` section, [`docs`], else a default naming the function), the
//! argument and result schemas ([`schema`]) and the export to call. A function whose
//! signature holds a resource handle, a future or a stream is skipped, with why
//! ([`Skipped`]). Each call converts its JSON arguments to component values
//! ([`convert`]), runs the function in a fresh instance like any plugin's call, and
//! renders the result ([`render`]).

pub(crate) mod convert;
mod docs;
pub(crate) mod schema;

use serde_json::Value;
use wasmtime::component::types::{ComponentItem, Type};
use wasmtime::component::{Component, ComponentExportIndex, Val};

use crate::error::{CallError, codes};

/// The interface a `toolhost:plugin` component exports.
pub(crate) const TOOLS_INTERFACE: &str = "toolhost:plugin/tools";

/// One exported function, as a tool.
#[derive(Debug, Clone)]
pub(crate) struct TypedFunc {
    /// The tool name.
    pub(crate) tool: String,
    /// Where it is exported: `weather#get-weather` or `echo`.
    pub(crate) export_name: String,
    /// The description for the model.
    pub(crate) description: String,
    /// The parameters, in order, by WIT name.
    pub(crate) params: Vec<(String, Type)>,
    /// The result type, if any.
    pub(crate) result: Option<Type>,
    /// The argument schema.
    pub(crate) parameters: Value,
    /// The schema of the typed result (of `T` for `result<T, E>`), unless it is
    /// plain text (`string`) or there is none.
    pub(crate) output: Option<Value>,
    /// The export to call, resolved once.
    pub(crate) export: ComponentExportIndex,
}

/// A function that is not a tool, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// Where it is exported: `weather#get-weather` or `echo`.
    pub function: String,
    /// Why it is not a tool.
    pub why: String,
}

/// The tools and the skipped functions of a typed-export component.
#[derive(Debug, Clone, Default)]
pub(crate) struct TypedExports {
    pub(crate) funcs: Vec<TypedFunc>,
    pub(crate) skipped: Vec<Skipped>,
}

/// Whether `component` exports the `toolhost:plugin/tools` interface (any version).
pub(crate) fn exports_tools(engine: &wasmtime::Engine, component: &Component) -> bool {
    component.component_type().exports(engine).any(|(name, _)| {
        name.strip_prefix(TOOLS_INTERFACE).is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
    })
}

/// The short name of an exported interface: `weather` for `pkg:typed/weather@0.1.0`.
fn short_name(export: &str) -> &str {
    let name = export.split('@').next().unwrap_or(export);
    name.rsplit('/').next().unwrap_or(name)
}

/// A WIT name as a tool name: `get-weather` → `get_weather` (WIT allows
/// upper-case words: they are lowered).
fn tool_name(name: &str) -> String {
    name.replace('-', "_").to_ascii_lowercase()
}

struct Found {
    interface: Option<String>,
    name: String,
    func: wasmtime::component::types::ComponentFunc,
    export: ComponentExportIndex,
}

/// Every exported function of `component`, as tools or skipped (`bytes`: the
/// component's bytes, for its doc comments).
pub(crate) fn derive(engine: &wasmtime::Engine, component: &Component, bytes: &[u8]) -> TypedExports {
    let mut found = Vec::new();
    for (name, item) in component.component_type().exports(engine) {
        match item.ty {
            ComponentItem::ComponentFunc(func) => {
                if let Some(export) = component.get_export_index(None, name) {
                    found.push(Found { interface: None, name: name.to_string(), func, export });
                }
            }
            ComponentItem::ComponentInstance(instance) => {
                let Some(parent) = component.get_export_index(None, name) else { continue };
                for (func_name, item) in instance.exports(engine) {
                    if let ComponentItem::ComponentFunc(func) = item.ty
                        && let Some(export) = component.get_export_index(Some(&parent), func_name)
                    {
                        let interface = Some(name.to_string());
                        found.push(Found { interface, name: func_name.to_string(), func, export });
                    }
                }
            }
            _ => {}
        }
    }
    let docs = docs::Docs::read(bytes);
    let mut exports = TypedExports::default();
    let count = |name: &str| found.iter().filter(|f| tool_name(&f.name) == name).count();
    for f in &found {
        let short = f.interface.as_deref().map(short_name);
        let shown = match short {
            Some(i) => format!("{i}#{}", f.name),
            None => f.name.clone(),
        };
        let skip = |why: String| Skipped { function: shown.clone(), why };
        let base = tool_name(&f.name);
        let tool = match short {
            Some(i) if count(&base) > 1 => format!("{}_{base}", tool_name(i)),
            _ => base,
        };
        if f.func.async_() {
            exports.skipped.push(skip("async functions are not supported".into()));
            continue;
        }
        let params: Vec<(String, Type)> = f.func.params().map(|(n, t)| (n.to_string(), t)).collect();
        let result = f.func.results().next();
        let parameters = match schema::params(&params) {
            Ok(schema) => schema,
            Err(schema::Unsupported(why)) => {
                exports.skipped.push(skip(why));
                continue;
            }
        };
        let output = match result.as_ref().map(output_schema).transpose() {
            Ok(output) => output.flatten(),
            Err(schema::Unsupported(why)) => {
                exports.skipped.push(skip(format!("its result: {why}")));
                continue;
            }
        };
        if !super::spec::valid_name(&tool) {
            exports.skipped.push(skip(format!(
                "its tool name {tool:?} is not 1-64 characters of [a-z0-9_] starting with a letter"
            )));
            continue;
        }
        let description = docs
            .function(short, &f.name)
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| format!("Calls the function `{shown}` of this WebAssembly component."));
        exports.funcs.push(TypedFunc {
            tool,
            export_name: shown,
            description,
            params,
            result,
            parameters,
            output,
            export: f.export,
        });
    }
    // Two functions that still share a name (the same name in two interfaces and at
    // the top level): the later ones are skipped, named.
    let mut seen = std::collections::HashSet::new();
    let (kept, clashing): (Vec<_>, Vec<_>) =
        exports.funcs.into_iter().partition(|f| seen.insert(f.tool.clone()));
    exports.funcs = kept;
    for f in clashing {
        exports.skipped.push(Skipped {
            why: format!("another exported function already has the tool name {}", f.tool),
            function: f.export_name,
        });
    }
    exports
}

/// The schema of what a call returns as structured content: `T` of a
/// `result<T, E>`, or the type itself; `None` for `string` (plain text) and for
/// nothing.
fn output_schema(ty: &Type) -> Result<Option<Value>, schema::Unsupported> {
    let ok = match ty {
        Type::Result(result) => {
            if let Some(err) = result.err() {
                schema::output(&err)?;
            }
            match result.ok() {
                Some(ok) => ok,
                None => return Ok(None),
            }
        }
        other => other.clone(),
    };
    match ok {
        Type::String => Ok(None),
        ok => schema::output(&ok).map(Some),
    }
}

/// What a call returned: the text the model reads, and the typed value (when the
/// result is not plain text).
#[derive(Debug)]
pub(crate) struct Rendered {
    pub(crate) text: String,
    pub(crate) value: Option<Value>,
}

/// Render a call's result: a `string` as is, other values as JSON; the error of a
/// `result<_, E>` is a failed call (`tool_error`) with `E` as text.
pub(crate) fn render(result: Option<Val>) -> Result<Rendered, CallError> {
    let text_of = |val: &Val| match val {
        Val::String(s) => s.clone(),
        other => convert::to_json(other).to_string(),
    };
    let ok = match result {
        None => return Ok(Rendered { text: String::new(), value: None }),
        Some(Val::Result(Err(err))) => {
            let message =
                err.as_deref().map(text_of).unwrap_or_else(|| "the function returned an error".into());
            return Err(CallError::new(codes::TOOL_ERROR, message));
        }
        Some(Val::Result(Ok(None))) => return Ok(Rendered { text: String::new(), value: None }),
        Some(Val::Result(Ok(Some(ok)))) => *ok,
        Some(other) => other,
    };
    match ok {
        Val::String(text) => Ok(Rendered { text, value: None }),
        other => {
            let value = convert::to_json(&other);
            Ok(Rendered { text: value.to_string(), value: Some(value) })
        }
    }
}
