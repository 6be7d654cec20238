//! WASI p2 as wasmtime-wasi provides it: args, the environment, stdio, streams,
//! clocks and random numbers need no grant (what a call's context holds is
//! empty or captured: the sandbox gives it only the plugin's granted variables
//! and capped pipes). [`link`] adds all of wasmtime-wasi's p2; the filesystem
//! is then linked again behind the host's checks ([`super::wasi_fs`]) and
//! every socket operation refused ([`super::sockets`]).

use wasmtime::component::Linker;

use super::CallStore;
use super::capability::Capability;

/// `wasi:cli/environment`: the plugin's granted variables only.
pub(crate) const ENV: Capability =
    Capability { name: "env", interfaces: &["wasi:cli/environment"], needs: None };

/// The rest of WASI's base: args and stdio, streams, clocks, random numbers.
pub(crate) const CAPABILITY: Capability = Capability {
    name: "wasi",
    interfaces: &["wasi:cli/", "wasi:io/", "wasi:clocks/", "wasi:random/"],
    needs: None,
};

/// Link all of wasmtime-wasi's p2 interfaces, asynchronous.
pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)
}
