"""One tools/call through the official MCP Python SDK (PyPI `mcp`), answering
the server's approval question with a fixed decision. tests/tests/mcp_approvals.rs
runs it against `toolhost serve` (stdio or Streamable HTTP), in both protocol
eras: mode "auto" negotiates 2026-07-28 (the SDK drives the
InputRequiredResult / retry loop), mode "legacy" initializes a 2025-11-25
session (the server sends elicitation/create).

    mcp_approve.py --mode auto|legacy --decision once|always|deny|decline \
        --tool NAME --args JSON (--url URL | --stdio COMMAND ARG...)

Prints one JSON object: the negotiated version, each question as the SDK
handed it to the callback, and the tool's result (or the error).
"""

import argparse
import asyncio
import json
import os

import mcp.types as types
from mcp import Client, MCPError, StdioServerParameters


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True)
    parser.add_argument("--decision", required=True)
    parser.add_argument("--tool", required=True)
    parser.add_argument("--args", required=True)
    parser.add_argument("--url")
    parser.add_argument("--stdio", nargs=argparse.REMAINDER)
    opts = parser.parse_args()

    asked = []

    async def on_elicit(context, params):
        asked.append(params.model_dump(by_alias=True, mode="json", exclude_none=True))
        if opts.decision == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": opts.decision})

    if opts.url:
        server = opts.url
    else:
        # The SDK starts the server with a minimal environment: hand on toolhost's own.
        env = {k: v for k, v in os.environ.items() if k.startswith("TOOLHOST_")}
        server = StdioServerParameters(command=opts.stdio[0], args=opts.stdio[1:], env=env)
    out = {"asked": asked}
    async with Client(server, mode=opts.mode, elicitation_callback=on_elicit) as client:
        out["version"] = client.protocol_version
        try:
            result = await client.call_tool(opts.tool, json.loads(opts.args))
            out["result"] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        except MCPError as e:
            out["error"] = {"code": e.error.code, "message": e.error.message}
    print(json.dumps(out))


asyncio.run(main())
