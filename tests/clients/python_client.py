"""An independent MCP client for toolhost's tests: the official Python SDK.

    python_client.py MODE TARGET

MODE is "auto" (server/discover, so 2026-07-28 against toolhost) or "legacy"
(the initialize handshake). TARGET is an http:// URL (Streamable HTTP) or a
JSON list, the command line of a stdio server. Against the hostile test
plugin and the builtins, it lists the tools, reads a file, reads a failure
and cancels a call that would spin forever, then prints one JSON object of
what it saw. Any exception fails the run (exit 1) with its traceback.
"""

import json
import sys
import time

import anyio
from mcp import Client, StdioServerParameters


def target(arg: str):
    if arg.startswith("http://"):
        return arg
    command = json.loads(arg)
    return StdioServerParameters(command=command[0], args=command[1:])


def text_of(result) -> str:
    return "".join(part.text for part in result.content if getattr(part, "type", "") == "text")


async def main(mode: str, server: str) -> None:
    seen = {}
    async with Client(target(server), mode=mode, read_timeout_seconds=60) as client:
        seen["protocol"] = client.protocol_version
        seen["server"] = client.server_info.name if client.server_info else None
        tools = await client.list_tools()
        seen["tools"] = sorted(tool.name for tool in tools.tools)
        read = await client.call_tool("read_file", {"path": "hello.txt"})
        seen["read"] = {
            "is_error": read.is_error,
            "text": text_of(read),
            "structured": read.structured_content,
        }
        failed = await client.call_tool("read_file", {"path": "missing.txt"})
        seen["failure"] = {"is_error": failed.is_error, "text": text_of(failed)}
        # Cancellation: the SDK sends notifications/cancelled (stdio, legacy
        # HTTP) or drops the request (2026-07-28 HTTP) when the task is
        # cancelled; the server must stop the spinning guest.
        started = time.monotonic()
        with anyio.move_on_after(1.0) as scope:
            await client.call_tool("spin", {})
        seen["cancelled"] = scope.cancelled_caught
        seen["cancelled_after_s"] = round(time.monotonic() - started, 2)
        after = await client.call_tool("noop", {})
        seen["after_cancel"] = {"is_error": after.is_error}
    print(json.dumps(seen))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
