//! The capabilities the host provides to plugins, one module (or folder) each.
//! A capability holds everything about itself: its WIT interfaces and the grant
//! a plugin importing them must hold ([`Capability`], checked at load), its
//! grant type where it has one, its per-call state and view, and its `link`.
//! `capabilities!` below is the one list ([`CAPABILITIES`], [`link`]): the
//! load-time check, `inspect` and the sandbox's linker read it and name no
//! capability.
//!
//! Adding one: a module here with its `CAPABILITY` and `link`, its line in the
//! list, and, when it keeps state per call, that state in [`CallAccess`] (and in
//! [`Handed`] when the executor hands it something).

mod access;
pub(crate) mod capability;
pub(crate) mod config;
pub(crate) mod exec;
pub(crate) mod fetch;
pub(crate) mod files;
pub(crate) mod http;
pub(crate) mod log;
pub(crate) mod search;
pub(crate) mod sockets;
pub(crate) mod wasi;
pub(crate) mod wasi_fs;

use std::path::PathBuf;
use std::sync::Arc;

use wasmtime::component::{HasData, Linker};

pub(crate) use access::{CallAccess, CallStore, Handed, StoreParts};
use capability::Capability;
pub(crate) use config::ConfigValues;

/// What every import knows of the call it serves (defined with the children, which
/// never outlive it).
pub(crate) use confine::CallInfo;

/// Every capability, each with its `link` when it links interfaces of its own,
/// in the order they are linked (WASI first: the filesystem's checks shadow
/// wasmtime-wasi's). An import is matched to the capability naming it most
/// narrowly, whatever the order; one none of them provides is refused at load.
macro_rules! capabilities {
    ($($capability:path $(=> $link:path)?;)*) => {
        /// Every capability the host provides.
        pub(crate) const CAPABILITIES: &[&Capability] = &[$(&$capability),*];

        /// Link every capability's interfaces, each over its state in the store.
        pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
            $($($link(linker)?;)?)*
            Ok(())
        }
    };
}

capabilities! {
    wasi::CAPABILITY => wasi::link;
    wasi::ENV;
    sockets::CAPABILITY;
    wasi_fs::CAPABILITY => wasi_fs::link;
    CONTRACT => link_contract;
    log::CAPABILITY => log::link;
    files::CAPABILITY => files::link;
    search::CAPABILITY => search::link;
    fetch::CAPABILITY => fetch::link;
    exec::CAPABILITY => exec::link;
    http::CAPABILITY => http::link;
    config::CAPABILITY => config::link;
}

/// The contract's own types (`toolhost:plugin/types`), and any other interface
/// of the package a world may list.
const CONTRACT: Capability = Capability { name: "contract", interfaces: &["toolhost:plugin/"], needs: None };

/// `toolhost:plugin/types` holds no functions and no state.
struct Contract;

impl crate::bindings::toolhost::plugin::types::Host for Contract {}

impl HasData for Contract {
    type Data<'a> = Contract;
}

fn link_contract<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    crate::bindings::toolhost::plugin::types::add_to_linker::<T, Contract>(linker, |_| Contract)
}

/// The filesystem one call holds: the work dir (or not), and extra read-only dirs.
/// The default is nothing at all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FsAccess {
    /// The work dir (canonical host path; also the guest path), when granted.
    pub work_dir: Option<PathBuf>,
    /// Whether the guest may create, write and delete in the work dir.
    pub writable: bool,
    /// Directories preopened read-only under their own path.
    pub read_dirs: Arc<[PathBuf]>,
}

impl FsAccess {
    /// The guest path of the work dir, if any.
    pub(crate) fn guest_path(&self) -> Option<String> {
        self.work_dir.as_ref().map(|dir| dir.to_string_lossy().into_owned())
    }

    /// The work dir, when the call may write in it.
    pub(crate) fn writable_dir(&self) -> Option<&PathBuf> {
        self.work_dir.as_ref().filter(|_| self.writable)
    }
}
