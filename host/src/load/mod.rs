//! Stage 2, once per plugin: read the component, check its identity and imports
//! against its grants, compile it (or take it from the cache), prepare its
//! instantiation, list its tools and compile their argument schemas.
//!
//! [`plugin`] loads one component, [`link`] links it for its compiler tier's engine, [`capabilities`] judges its imports, [`preflight`] reads them from the bytes before compiling, [`spec`]
//! bounds and converts its tool list, [`args`] compiles and applies argument
//! schemas, [`standard`] makes them standard JSON Schema, [`registry`] holds every tool by name, [`inspect`] looks at a
//! component without registering it, [`builtins`] are the embedded components, [`typed`] makes tools of a component's exported functions.

pub(crate) mod args;
pub(crate) mod builtins;
pub(crate) mod capabilities;
pub(crate) mod inspect;
pub(crate) mod link;
pub(crate) mod plugin;
pub(crate) mod preflight;
pub(crate) mod registry;
pub(crate) mod spec;
mod standard;
pub(crate) mod typed;
