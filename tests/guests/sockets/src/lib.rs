//! A plugin that tries to open a TCP socket itself. Touching `std::net`
//! makes the component import `wasi:sockets`, which the host refuses at load.

use toolhost_guest::prelude::*;

/// Where to connect.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Target {
    /// `host:port`.
    addr: String,
}

fn connect(args: Target, _: &Context) -> Result<Output, ToolError> {
    match std::net::TcpStream::connect(args.addr.as_str()) {
        Ok(_) => Ok(Output::text("connected")),
        Err(e) => Err(ToolError::new("connect_failed", e.to_string())),
    }
}

fn tools() -> Vec<Tool> {
    vec![tool("connect", "Opens a TCP connection.", connect)]
}

toolhost_guest::export_tools!(tools);
