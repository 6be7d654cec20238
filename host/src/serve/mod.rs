//! Serving the host's tools to agents: [`mcp`], the Model Context Protocol
//! (rmcp's server), on [`stdio`] behind [`framing`], a newline-delimited
//! JSON-RPC front that answers malformed input and batches as JSON-RPC 2.0
//! requires ([`jsonrpc`]) and hands rmcp the rest already parsed
//! ([`outgoing`]: rmcp's transport, the lines to the client); [`result`]
//! shapes a call's outcome; [`http`] serves the same server over Streamable
//! HTTP; [`approve`] asks the client's user about calls the permissions leave
//! open ([`approve_question`]: the form and its answers; [`approve_state`]: the
//! sealed `requestState`; [`approve_spent`]: answers used once).

pub(crate) mod approve;
mod approve_question;
mod approve_spent;
pub(crate) mod approve_state;
mod framing;
pub(crate) mod http;
mod jsonrpc;
pub(crate) mod mcp;
mod outgoing;
mod result;
pub(crate) mod stdio;
