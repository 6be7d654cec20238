"""`{{tool}}`: a toolhost tool. Counts the lines, words and bytes of a text
file in the work directory, like `wc`.

Build with `./build.sh` (componentize-py against `wit/plugin.wit`, world
`plugin`). The file is read with plain `open()`: CPython's WASI build goes
through the preopened work directory, the only directory the tool can see.
"""

import json
import os

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log, types

NAME = "{{tool}}"

DESCRIPTION = "Count the lines, words and bytes of a text file, like `wc`. Paths are relative to the work directory."

# JSON Schema of the arguments: give every property a type and a description.
PARAMETERS = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "The file to count: relative to the work directory, or absolute inside it.",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}


class ToolFailure(Exception):
    """A failure the model can act on: a stable snake_case code and a message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def resolve(work_dir, path):
    """`path` inside `work_dir` (lexically), or `path_escape`."""
    if work_dir is None:
        raise ToolFailure("no_filesystem", "this tool has no filesystem access in this call")
    root = os.path.normpath(work_dir)
    full = os.path.normpath(os.path.join(root, path))
    if full != root and not full.startswith(root.rstrip("/") + "/"):
        raise ToolFailure("path_escape", f"{path} is outside the work directory")
    return full


def read_text(full, shown):
    try:
        with open(full, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ToolFailure("not_found", f"{shown} does not exist") from None
    except IsADirectoryError:
        raise ToolFailure("is_directory", f"{shown} is a directory, not a file") from None
    except PermissionError:
        raise ToolFailure("access_denied", f"{shown}: the sandbox refused access") from None
    except OSError as e:
        raise ToolFailure("io_error", f"{shown}: {e.strerror or e}") from None
    if b"\0" in data:
        raise ToolFailure("binary_file", f"{shown} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolFailure("binary_file", f"{shown} is not UTF-8 text (byte {e.start})") from None


def counts(text):
    """Lines (a last line without a newline counts), words and UTF-8 bytes."""
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return lines, len(text.split()), len(text.encode("utf-8"))


def run(args, work_dir):
    full = resolve(work_dir, args["path"])
    shown = os.path.relpath(full, os.path.normpath(work_dir))
    lines, words, size = counts(read_text(full, shown))
    log.log(log.Level.DEBUG, f"counted {shown}")
    metadata = {"path": shown, "lines": lines, "words": words, "bytes": size}
    return f"{shown}: {lines} lines, {words} words, {size} bytes", metadata


class Tools(exports.Tools):
    """The `toolhost:plugin/tools` export: list the tools, run one by name."""

    def list_tools(self):
        spec = types.ToolSpec(
            name=NAME,
            description=DESCRIPTION,
            parameters=json.dumps(PARAMETERS),
            # Changes nothing: may run in parallel, gets a read-only work dir.
            read_only=True,
            destructive=False,
            timeout_ms=None,
        )
        return [spec]

    def call(self, name, args_json, context):
        try:
            if name != NAME:
                raise ToolFailure("unknown_tool", name)
            content, metadata = run(json.loads(args_json), context.work_dir)
        except ToolFailure as failure:
            # Raising Err(...) returns the `err` case of the WIT result.
            raise Err(types.ToolError(code=failure.code, message=failure.message)) from None
        return types.ToolOutput(content=content, display=None, metadata=json.dumps(metadata))
