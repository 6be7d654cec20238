//! Stage 3's caller: the [`host::Host`] every call goes through, built once by
//! [`builder::HostBuilder`], and the one call pipeline ([`executor`]):
//! lookup → cancelled? → args → [`authorize`] → run under deadline and
//! cancellation → redact → bound → store → clamp. [`batch`] runs a model turn's
//! calls; [`servers`] joins the MCP servers' tools as they are listed, [`late`] the
//! plugins compiled in the background.

pub(crate) mod authorize;
pub(crate) mod batch;
pub(crate) mod builder;
pub(crate) mod executor;
pub(crate) mod host;
pub(crate) mod ids;
pub(crate) mod late;
pub(crate) mod servers;
