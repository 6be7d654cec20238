//! `wasi:sockets`: never real sockets (networking is only through the host's
//! pinned fetch). A component that imports them loads only when its grants
//! stub them, for runtimes that import sockets whether a tool uses them or not
//! (componentize-py's CPython); every operation is then refused at run time
//! ([`deny_all`]: no TCP, UDP, name lookups or addresses). wasmtime-wasi's own
//! interfaces are linked with the rest of WASI ([`super::wasi`]). Its grant:
//! [`Sockets`].

use super::capability::{Capability, Need};

/// Linked only when the plugin's grants stub them.
pub(crate) const CAPABILITY: Capability = Capability {
    name: "sockets",
    interfaces: &["wasi:sockets/"],
    needs: Some(Need {
        key: "sockets",
        example: "\"stub\"",
        flag: "--stub-sockets",
        refusal: "plugins get no sockets; network access is only through the host's pinned fetch. A runtime \
                  that imports sockets without using them can be linked with every socket operation refused: {how}",
    }),
};

/// What happens to a component that imports `wasi:sockets`. Real sockets are
/// never granted: networking goes through the host's pinned fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sockets {
    /// Refuse the component at load (`capability_denied`).
    #[default]
    Refuse,
    /// Link the imports, and refuse every socket operation at run time
    /// (`access-denied`): no TCP, no UDP, no name lookup, no address allowed.
    /// For toolchains whose runtime imports sockets whether a tool uses them
    /// or not (componentize-py's CPython).
    Stub,
}

/// Refuse, in `wasi`, every socket operation a call could try.
pub(crate) fn deny_all(wasi: &mut wasmtime_wasi::WasiCtxBuilder) {
    wasi.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    wasi.socket_addr_check(|_, _| Box::pin(async { false }));
}
