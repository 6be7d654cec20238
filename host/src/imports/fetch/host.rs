//! The WIT-facing glue: `toolhost:plugin/fetch` on the per-call state, turning the WIT
//! records into the client's types and back. The capability is what the call's state
//! holds: a plugin that does not import fetch gets no [`super::NetAccess`] and could not
//! call this anyway.

use std::time::Duration;

use wasmtime::component::{HasData, Linker};

use super::{FetchError, FetchRequest, FetchResponse, NetAccess};
use crate::bindings::toolhost::plugin::fetch as wit;
use crate::imports::capability::{Capability, Need};
use crate::imports::{CallInfo, CallStore, StoreParts};

/// The pinned fetch: granted only to a plugin whose network grant lists hosts.
pub(crate) const CAPABILITY: Capability =
    Capability { name: "fetch", interfaces: &["toolhost:plugin/fetch"], needs: Some(NETWORK) };

/// The network grant, which `wasi:http` needs too.
pub(crate) const NETWORK: Need = Need {
    key: "network",
    example: "[\"HOST\", …]",
    flag: "--allow-host PATTERN",
    refusal: "no network hosts are granted to this plugin (grant some with {how})",
};

/// What the fetch import works on: the call's network access (`None`: it has
/// none) and the call.
pub(crate) struct FetchView<'a> {
    /// The call's network access.
    pub net: Option<&'a NetAccess>,
    /// The call.
    pub call: &'a CallInfo,
}

struct HasFetch;

impl HasData for HasFetch {
    type Data<'a> = FetchView<'a>;
}

/// Link `toolhost:plugin/fetch` over each store's network access.
pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wit::add_to_linker::<T, HasFetch>(linker, |store| {
        let StoreParts { access, .. } = store.parts();
        FetchView { net: access.net.as_ref(), call: &access.call }
    })
}

impl wit::Host for FetchView<'_> {
    async fn fetch(&mut self, req: wit::Request) -> Result<wit::Response, wit::FetchError> {
        let Some(net) = self.net else {
            return Err(wit::FetchError::HostNotAllowed("this plugin is granted no network access: grant hosts with --allow-host PATTERN (a --plugin \
                 component) or `network` in its [plugins.NAME] entry of the policy file"
                    .into()));
        };
        let (client, grant, deadline) = (net.client.clone(), net.grant.clone(), self.call.deadline);
        let (plugin, call) = (self.call.plugin.to_string(), self.call.call_id.to_string());
        // The host only: the URL's user info and query stay out of the log.
        let host = url::Url::parse(&req.url).ok().and_then(|u| u.host_str().map(str::to_owned));
        let (method, host) = (req.method.clone(), host.unwrap_or_default());
        let outcome = client.fetch(&grant, from_wit(req), Some(deadline)).await;
        match &outcome {
            Ok(r) => tracing::debug!(plugin, call, method, host, status = r.status, "fetch"),
            Err(e) => tracing::info!(plugin, call, method, host, error = %e, "fetch refused or failed"),
        }
        outcome.map(to_wit).map_err(error_to_wit)
    }
}

fn from_wit(req: wit::Request) -> FetchRequest {
    FetchRequest {
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: req.body,
        timeout: req.timeout_ms.map(|ms| Duration::from_millis(ms.into())),
        max_bytes: req.max_bytes,
    }
}

fn to_wit(r: FetchResponse) -> wit::Response {
    wit::Response {
        status: r.status,
        headers: r.headers,
        body: r.body,
        final_url: r.final_url,
        truncated: r.truncated,
    }
}

fn error_to_wit(e: FetchError) -> wit::FetchError {
    match e {
        FetchError::BlockedUrl(m) => wit::FetchError::BlockedUrl(m),
        FetchError::InvalidUrl(m) => wit::FetchError::InvalidUrl(m),
        FetchError::HostNotAllowed(m) => wit::FetchError::HostNotAllowed(m),
        FetchError::MethodNotAllowed(m) => wit::FetchError::MethodNotAllowed(m),
        FetchError::TooManyRedirects(m) => wit::FetchError::TooManyRedirects(m),
        FetchError::Timeout(m) => wit::FetchError::Timeout(m),
        FetchError::TooLarge(m) => wit::FetchError::TooLarge(m),
        FetchError::Transport(m) => wit::FetchError::Transport(m),
    }
}
