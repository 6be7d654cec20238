//! The WIT doc comments a component carries: its `package-docs` custom section
//! (written by `wit-component`, as wit-bindgen and `wasm-tools` do): a version byte
//! (0 or 1), then JSON. Read once at load; a section that is missing or does not
//! parse just means no docs (a tool then gets a default description).
//!
//! `wit-parser`'s `PackageMetadata` reads this format but keeps its fields private
//! (it only injects them into a full `Resolve`), so the JSON is read here, keeping
//! only what names a function: `interfaces.NAME.funcs.FUNC` and the worlds'
//! `funcs`/`func_exports` (each a string, or an object with `docs`).

use serde_json::Value;

/// The custom section's name.
const SECTION: &str = "package-docs";

/// Most bytes of one `package-docs` section read; a larger one is ignored.
const MAX_SECTION_BYTES: usize = 4 << 20;

/// The doc comments of a component's functions.
#[derive(Debug, Default)]
pub(crate) struct Docs {
    sections: Vec<Value>,
}

impl Docs {
    /// Every `package-docs` section in `bytes` (the component's own and any nested
    /// component's).
    pub(crate) fn read(bytes: &[u8]) -> Self {
        let mut sections = Vec::new();
        for payload in wasmparser::Parser::new(0).parse_all(bytes) {
            let Ok(wasmparser::Payload::CustomSection(section)) = payload else { continue };
            if section.name() != SECTION || section.data().len() > MAX_SECTION_BYTES {
                continue;
            }
            if let [0 | 1, json @ ..] = section.data()
                && let Ok(value) = serde_json::from_slice::<Value>(json)
            {
                sections.push(value);
            }
        }
        Self { sections }
    }

    /// The docs of function `func`, in the interface `interface` (its short name:
    /// `weather` for `pkg:name/weather@1.0.0`) or at the world's top level.
    pub(crate) fn function(&self, interface: Option<&str>, func: &str) -> Option<String> {
        let text = |docs: &Value| -> Option<String> {
            match docs {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o.get("docs")?.as_str().map(str::to_string),
                _ => None,
            }
        };
        self.sections.iter().find_map(|section| match interface {
            Some(name) => {
                let direct = section.get("interfaces")?.get(name).and_then(|i| i.get("funcs")?.get(func));
                let inline = || {
                    section.get("worlds")?.as_object()?.values().find_map(|w| {
                        ["interface_exports", "interfaces"]
                            .iter()
                            .find_map(|k| w.get(*k)?.get(name)?.get("funcs")?.get(func))
                    })
                };
                direct.or_else(inline).and_then(text)
            }
            None => section.get("worlds")?.as_object()?.values().find_map(|w| {
                ["func_exports", "funcs"].iter().find_map(|k| w.get(*k)?.get(func)).and_then(text)
            }),
        })
    }
}
