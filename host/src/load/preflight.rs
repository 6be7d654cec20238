//! The imports a component declares, read from its bytes without compiling it:
//! the names in its top-level import sections, as wasmtime names them
//! (`Component::component_type().imports`), so a component its grants do not
//! cover is refused in milliseconds rather than after seconds of compiling.
//!
//! Nested modules and components are skipped whole (their imports are satisfied
//! inside the component). Bytes that do not parse as a component give `None`:
//! compiling them then reports what is wrong, and the imports of what compiles
//! are checked again from wasmtime's own type information.

use wasmparser::{Chunk, Parser, Payload};

use super::capabilities::check_imports;
use crate::error::LoadError;
use crate::policy::grants::PluginGrants;

/// The sorted import names of the component `bytes`, or `None` when they are not
/// a component this parser reads.
pub(crate) fn declared_imports(bytes: &[u8]) -> Option<Vec<String>> {
    if !wasmparser::Parser::is_component(bytes) {
        return None;
    }
    let mut parser = Parser::new(0);
    let mut names = Vec::new();
    let mut at = 0usize;
    loop {
        let Chunk::Parsed { consumed, payload } = parser.parse(bytes.get(at..)?, true).ok()? else {
            return None;
        };
        at += consumed;
        match payload {
            Payload::ComponentImportSection(section) => {
                for import in section {
                    names.push(import.ok()?.name.name.to_string());
                }
            }
            // The outer parser has already stepped over the nested one's bytes.
            Payload::ModuleSection { unchecked_range, .. }
            | Payload::ComponentSection { unchecked_range, .. } => at = unchecked_range.end,
            Payload::End(_) => break,
            _ => {}
        }
    }
    names.sort();
    Some(names)
}

/// Refuse `bytes` (`capability_denied`) when an import it declares is not covered by
/// `grants`, before anything compiles it. Bytes this cannot read pass: the check
/// after compiling judges them.
pub(crate) fn check_declared_imports(bytes: &[u8], grants: &PluginGrants) -> Result<(), LoadError> {
    match declared_imports(bytes) {
        Some(imports) => check_imports(&imports, grants),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::policy::grants::GrantSource;

    #[test]
    fn the_declared_imports_are_the_ones_wasmtime_sees() {
        let engine = crate::engine::Engine::new(&crate::engine::EngineSettings {
            max_concurrent_calls: 1,
            cache_dir: None,
            ..Default::default()
        })
        .unwrap();
        for builtin in crate::load::builtins::ALL {
            let loaded = engine.embedded(builtin.precompiled, builtin.bytes, builtin.sha256).unwrap();
            let seen = super::super::capabilities::imports_of(engine.wasmtime(), &loaded.component);
            assert!(!seen.is_empty(), "{}", builtin.name);
            assert_eq!(declared_imports(builtin.bytes), Some(seen), "{}", builtin.name);
        }
    }

    #[test]
    fn bytes_that_are_not_a_component_are_left_to_the_compiler() {
        let grants = PluginGrants::new(GrantSource::AdHoc, Limits::default());
        for bytes in [&b""[..], b"not wasm", b"\0asm\x01\0\0\0", b"\0asm\x0d\0\x01\0\x07\xff"] {
            assert_eq!(declared_imports(bytes), None, "{bytes:?}");
            assert!(check_declared_imports(bytes, &grants).is_ok());
        }
    }

    #[test]
    fn an_ungranted_import_is_refused_from_the_bytes() {
        let sys = crate::load::builtins::ALL.iter().find(|b| b.name == "builtin:sys").unwrap();
        let grants = PluginGrants::new(GrantSource::AdHoc, Limits::default());
        match check_declared_imports(sys.bytes, &grants) {
            Err(LoadError::CapabilityDenied { interface, .. }) => {
                assert!(interface.starts_with("toolhost:plugin/exec"), "{interface}")
            }
            other => panic!("expected capability_denied, got {other:?}"),
        }
    }
}
