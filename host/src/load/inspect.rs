//! Looking at a component without registering it, the way `toolhost inspect` and
//! `toolhost add` do: its hash, imports, what they ask for, its tools, and why the
//! host would refuse it.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::capabilities::{Requested, check_identity, check_imports, imports_of};
use super::plugin::Plugin;
use crate::engine::Engine;
use crate::error::LoadError;
use crate::load::spec::ToolSpec;
use crate::policy::grants::{GrantSource, PluginGrants, Sockets};
use crate::sandbox::CallState;
use wasmtime::component::Linker;

/// Largest component file read.
pub(crate) const MAX_COMPONENT_BYTES: u64 = 512 << 20;

/// The bytes of the component file at `path`: a regular file (followed through
/// links, never a FIFO or device), at most [`MAX_COMPONENT_BYTES`].
pub(crate) fn read_component(path: &Path) -> Result<Vec<u8>, LoadError> {
    let err = |source| LoadError::Read { path: path.display().to_string(), source };
    confine::hostfs::read_regular_following(path, MAX_COMPONENT_BYTES)
        .map_err(err)?
        .ok_or_else(|| err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")))
}

/// What `toolhost inspect` shows about a component without registering it.
#[derive(Debug)]
pub struct Inspection {
    /// Hex sha256 of the bytes.
    pub sha256: String,
    /// Size of the component in bytes.
    pub size: usize,
    /// The imports, sorted.
    pub imports: Vec<String>,
    /// The exports, sorted.
    pub exports: Vec<String>,
    /// What the imports ask for.
    pub requested: Requested,
    /// The tools (listed with every stubbable import linked and no capability granted).
    pub tools: Vec<ToolSpec>,
    /// Whether it is a typed-export component (its functions are the tools).
    pub typed: bool,
    /// The exported functions of a typed-export component that are not tools, and why.
    pub skipped: Vec<crate::load::typed::Skipped>,
    /// Why the host would refuse it under the grants it was judged against.
    pub refused: Option<LoadError>,
}

/// Look at a component: hash, imports, what they ask for, its tools, and whether
/// `grants` would let it load. Fails only when the bytes are not a component at all.
pub(crate) async fn inspect(
    engine: &Engine,
    linker: &Linker<CallState>,
    name: &str,
    bytes: &[u8],
    grants: &PluginGrants,
) -> Result<Inspection, LoadError> {
    let sha256 = hex::encode(Sha256::digest(bytes));
    let loaded = engine.component_named(name, bytes, &sha256)?;
    let imports = imports_of(engine.wasmtime(), &loaded.component);
    let mut exports: Vec<String> = loaded
        .component
        .component_type()
        .exports(engine.wasmtime())
        .map(|(name, _)| name.to_string())
        .collect();
    exports.sort();
    let requested = Requested::from_imports(&imports);
    // Listing tools runs no call: no preopen, no env, no network client. Link what can
    // be linked so a component that needs grants still shows its tools.
    let mut listing = grants.clone();
    listing.sha256 = None;
    listing.sockets = Sockets::Stub;
    if listing.exec.is_empty() {
        listing.exec.shell = true;
    }
    if listing.net.is_empty() {
        listing.net.hosts = vec![crate::imports::fetch::HostPattern::any()];
    }
    let refused = check_identity(name, &sha256, grants).and_then(|()| check_imports(&imports, grants)).err();
    // One hash and one compile: the listing reuses the component compiled above.
    let plugin = Plugin::from_component(engine, linker, name, bytes, sha256.clone(), loaded, &listing).await;
    let (tools, typed, skipped, refused) = match plugin {
        Ok(plugin) => (plugin.tools().to_vec(), plugin.is_typed(), plugin.skipped().to_vec(), refused),
        Err(err) => (Vec::new(), false, Vec::new(), refused.or(Some(err))),
    };
    Ok(Inspection { sha256, size: bytes.len(), imports, exports, requested, tools, typed, skipped, refused })
}

/// Look at the component file at `path` the way `toolhost inspect` does, under
/// `grants` (default: a third-party plugin with nothing granted but the work dir).
pub async fn inspect_file(
    engine: &Engine,
    path: &Path,
    grants: Option<&PluginGrants>,
) -> Result<Inspection, LoadError> {
    let bytes = read_component(path)?;
    inspect_bytes(engine, &path.display().to_string(), &bytes, grants).await
}

/// [`inspect_file`] for a component already in memory (pulled from a registry),
/// named `label` in messages.
pub async fn inspect_bytes(
    engine: &Engine,
    label: &str,
    bytes: &[u8],
    grants: Option<&PluginGrants>,
) -> Result<Inspection, LoadError> {
    let default = PluginGrants::new(GrantSource::AdHoc, crate::limits::Limits::default());
    let grants = grants.unwrap_or(&default);
    let linker = crate::sandbox::linker(engine.wasmtime())?;
    inspect(engine, &linker, label, bytes, grants).await
}
