//! `wasi:http/outgoing-handler` and `wasi:http/types` (wasmtime-wasi-http, built without
//! its own sender), every request sent through the **same pinned client and vetting as
//! `toolhost:plugin/fetch`** ([`FetchClient`]): the plugin's host allow-list, private,
//! loopback and link-local addresses refused after the one lookup, only a vetted address
//! connected, the body and time limits, and the call's deadline. Redirects are the
//! guest's to follow, each one a new request through the same checks. A GET, HEAD or
//! CONNECT that declares no body length goes without one, as hyper sends it; the host
//! still reads what the guest writes to its body, so a client that sends the head
//! before finishing an empty body (`wstd`) does not find it closed (`body::outgoing`).
//!
//! A component may import `wasi:http` only when its network grant lists hosts (the
//! `network` policy key, as for `fetch`); `wasi:http/incoming-handler` is never provided.
//! A call without network access has no [`HttpState`] sender at all: every request is
//! refused with `HTTP-request-denied`.
//!
//! Refusals reach the guest as `wasi:http` `error-code`s (`destination-ip-prohibited`,
//! `HTTP-request-denied`, `destination-not-found`, `connection-timeout`,
//! `HTTP-response-body-size`, …) and the host logs the rule that refused. A call may make
//! [`FetchLimits::max_requests_per_call`](crate::imports::fetch::FetchLimits) requests and
//! have `max_open_requests` open at once (`connection-limit-reached` past either).
//!
//! What wasmtime-wasi-http leaves unbounded is bounded per call ([`guard`]): the header
//! bytes a guest builds in all, the requests it creates, and each request body's buffer
//! ([`BODY_CHUNK`]); and a body the host cuts reaches the guest with its `error-code`.
//!
//! Per call, [`HttpState`] holds the context, the hooks and the header budget; the
//! store's resource table is shared with WASI. Dropping the store (the call ended, timed out or was cancelled)
//! aborts every request still running: wasmtime-wasi-http's tasks abort on drop.

mod body;
mod guard;
mod send;

use std::sync::Arc;

use wasmtime::component::Linker;
use wasmtime_wasi_http::p2::bindings::http::{outgoing_handler, types};
use wasmtime_wasi_http::{
    Error, RequestOptions, WasiBody, WasiHttp, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
};

use crate::imports::capability::Capability;
use crate::imports::fetch::{FetchLimits, NetAccess};
use crate::imports::{CallInfo, CallStore, StoreParts};
use send::{Budget, Sender};

/// Request headers of at most this many bytes (in memory) a guest may build in one set.
const FIELD_SIZE_LIMIT: usize = 64 << 10;

/// The most one write to an outgoing body may carry, and so what each body buffers
/// (wasmtime-wasi-http's default is 1 MiB a body, however many bodies a guest opens).
const BODY_CHUNK: usize = 64 << 10;

/// `wasi:http`'s client interfaces: granted, like fetch, only to a plugin whose
/// network grant lists hosts; every request goes through the pinned client.
pub(crate) const CAPABILITY: Capability = Capability {
    name: "http",
    interfaces: &["wasi:http/outgoing-handler", "wasi:http/types"],
    needs: Some(crate::imports::fetch::NETWORK),
};

/// One call's `wasi:http` state.
pub(crate) struct HttpState {
    ctx: WasiHttpCtx,
    hooks: PinnedHooks,
    built: guard::Built,
}

impl HttpState {
    /// The state of a call holding `net` (none: every request refused).
    pub(crate) fn new(net: Option<NetAccess>, call: CallInfo) -> Self {
        let mut ctx = WasiHttpCtx::new();
        ctx.set_field_size_limit(FIELD_SIZE_LIMIT);
        // Without network access every request is refused when sent, with its error code.
        let max_sent = net.as_ref().map_or(FetchLimits::default().max_requests_per_call, |n| {
            n.client.limits().max_requests_per_call
        });
        let hooks = PinnedHooks { net, call, budget: Arc::new(Budget::default()) };
        Self { ctx, hooks, built: guard::Built::new(max_sent) }
    }

    /// The view wasmtime-wasi-http works on, over the store's `table`.
    pub(crate) fn view<'a>(
        &'a mut self,
        table: &'a mut wasmtime::component::ResourceTable,
    ) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView { ctx: &mut self.ctx, table, hooks: &mut self.hooks }
    }
}

/// The hooks: requests go to the pinned client, nowhere else.
struct PinnedHooks {
    net: Option<NetAccess>,
    call: CallInfo,
    budget: Arc<Budget>,
}

type SendFuture = Box<dyn Future<Output = Result<(http::Response<WasiBody>, send::Io), Error>> + Send>;

impl WasiHttpHooks for PinnedHooks {
    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        BODY_CHUNK
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        let refuse = |call: &CallInfo, rule: &str, why: String, code: Error| -> SendFuture {
            tracing::info!(plugin = %call.plugin, call = %call.call_id, rule, why, "wasi:http request refused");
            Box::new(async move { Err(code) })
        };
        let Some(net) = &self.net else {
            let why = "this plugin is granted no network access".to_owned();
            return refuse(&self.call, "no network grant", why, Error::HttpRequestDenied);
        };
        let limits = net.client.limits();
        let slot = match self.budget.take(limits.max_requests_per_call, limits.max_open_requests) {
            Ok(slot) => slot,
            Err(why) => return refuse(&self.call, "request count", why, Error::ConnectionLimitReached),
        };
        let sender = Sender { client: net.client.clone(), grant: net.grant.clone(), call: self.call.clone() };
        Box::new(sender.send(request, slot))
    }
}

/// Link `wasi:http`'s client interfaces over each store's [`HttpState`] and
/// resource table, with its unbounded calls bounded ([`guard`]).
pub(crate) fn link<T: CallStore>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    fn get<T: CallStore>(store: &mut T) -> WasiHttpCtxView<'_> {
        let StoreParts { access, table, .. } = store.parts();
        access.http.view(table)
    }
    fn state<T: CallStore>(store: &mut T) -> &mut HttpState {
        let StoreParts { access, .. } = store.parts();
        &mut access.http
    }
    let get: fn(&mut T) -> WasiHttpCtxView<'_> = get::<T>;
    outgoing_handler::add_to_linker::<T, WasiHttp>(linker, get)?;
    types::add_to_linker::<T, WasiHttp>(linker, &Default::default(), get)?;
    guard::add_to_linker(linker, get, state::<T>)
}
