//! Serving the host's tools to agents: [`mcp`], the Model Context Protocol over
//! stdio.

pub(crate) mod mcp;
