"""`csv_summary`: a toolhost tool written in Python (and `py_echo`, a trivial one).

Summarises a CSV file in the work directory: row and column counts, and per
column its inferred type (integer, number or text), how many cells are empty,
min / max / mean for numeric columns and the most common values of text
columns.

Built with componentize-py against `wit/plugin.wit` (world `plugin`):

    componentize-py -d wit -w plugin componentize csv_summary -o csv_summary.wasm

The file is read with plain `open()`: CPython's WASI build goes through the
preopened work directory, the only directory the sandbox lets the tool see.

componentize-py snapshots the interpreter after importing this module, and a
module first imported during a call is not found: every module the tool
needs, including ones the standard library imports lazily (`heapq` for
`Counter.most_common`), is imported here at the top.
"""

import csv
import heapq  # noqa: F401 -- Counter.most_common imports it lazily; see below
import io
import itertools
import json
import os
import statistics
from collections import Counter

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log, types

NAME = "csv_summary"

DESCRIPTION = (
    "Summarise a CSV file: number of rows and columns, and for each column its type "
    "(integer, number or text), how many cells are empty, min/max/mean of numeric columns "
    "and the most common values of text columns. The first row is the header. The delimiter "
    "is detected (comma, semicolon, tab or pipe) unless given. Paths are relative to the "
    "work directory."
)

PARAMETERS = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "The CSV file: relative to the work directory, or absolute inside it.",
        },
        "delimiter": {
            "type": "string",
            "description": "One character that separates fields. Default: detected.",
        },
        "top": {
            "type": "integer",
            "minimum": 1,
            "maximum": 20,
            "description": "How many most common values to show per text column. Default 3.",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}

# `py_echo` does no work at all: what a call to it costs is what any call to
# this component costs (a fresh instance of the interpreter snapshot, the
# arguments in, the output out), measured apart from `csv_summary`'s work.
ECHO_NAME = "py_echo"

ECHO_DESCRIPTION = "Return `text` unchanged. A trivial tool: it measures what a call to a Python tool costs."

ECHO_PARAMETERS = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "What to return."}},
    "required": ["text"],
    "additionalProperties": False,
}

# What `detect_delimiter` chooses from, in order of preference, and how much of
# the file it looks at.
DELIMITERS = ",;\t|"
SNIFF_ROWS = 20
SNIFF_BYTES = 8192

# Larger files are refused: the whole file is held in memory.
MAX_BYTES = 8 * 1024 * 1024


class ToolFailure(Exception):
    """A failure the model can act on: a stable code and a message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def resolve(work_dir, path):
    """`path` inside `work_dir` (lexically), or `path_escape`."""
    if work_dir is None:
        raise ToolFailure("no_filesystem", "this tool has no filesystem access in this call")
    if "\0" in path:
        raise ToolFailure("invalid_args", "path contains a NUL byte")
    root = os.path.normpath(work_dir)
    full = os.path.normpath(os.path.join(root, path))
    if full != root and not full.startswith(root.rstrip("/") + "/"):
        raise ToolFailure("path_escape", f"{path} is outside the work directory")
    return full


def read_text(full, shown):
    """The file's text; each failure mapped to a code the model can act on."""
    try:
        if os.path.isdir(full):
            raise ToolFailure("is_directory", f"{shown} is a directory, not a CSV file")
        size = os.stat(full).st_size
        if size > MAX_BYTES:
            raise ToolFailure("too_large", f"{shown} is {size} bytes; at most {MAX_BYTES} are summarised")
        with open(full, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ToolFailure("not_found", f"{shown} does not exist") from None
    except PermissionError:
        raise ToolFailure("access_denied", f"{shown}: the sandbox refused access") from None
    except OSError as e:
        raise ToolFailure("io_error", f"{shown}: {e.strerror or e}") from None
    if b"\0" in data[:8192]:
        raise ToolFailure("binary_file", f"{shown} is a binary file, not CSV")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a UTF-8 byte order mark, as spreadsheets write
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolFailure("binary_file", f"{shown} is not UTF-8 text (byte {e.start})") from None


def pick_delimiter(text, given):
    if given is not None:
        if len(given) != 1 or given in "\r\n\"":
            raise ToolFailure(
                "invalid_args", f"delimiter must be one character other than a quote or newline, got {given!r}"
            )
        return given
    return detect_delimiter(text)


def detect_delimiter(text):
    """The candidate delimiter that splits the first rows most consistently.

    Each of `DELIMITERS` parses the first `SNIFF_ROWS` rows with the csv module's
    C parser (so quoted fields count right); the winner splits the header into
    more than one field and the most rows into as many fields as the header,
    the earlier candidate on a tie; a comma when none does. (`csv.Sniffer`,
    used before, tallies all 127 ASCII characters line by line in Python: on a
    200-row file that was 15 million fuel, about 3 ms of every call.)
    """
    sample = text[: text.rfind("\n", 0, SNIFF_BYTES) + 1] or text[:SNIFF_BYTES]
    best, best_score = ",", 0
    for delimiter in DELIMITERS:
        try:
            reader = csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter)
            rows = [row for row in itertools.islice(reader, SNIFF_ROWS) if row]
        except csv.Error:
            continue
        if not rows or len(rows[0]) < 2:
            continue
        score = sum(1 for row in rows if len(row) == len(rows[0]))
        if score > best_score:
            best, best_score = delimiter, score
    return best


def number(cell):
    """The cell as an int or float, or None when it is not a number."""
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def numeric_cells(cells):
    """The cells as numbers, or None as soon as one is not a number.

    A text column stops at its first cell: each cell that is not a number costs
    two raised exceptions, which is most of the work on a text column otherwise.
    """
    numbers = []
    for cell in cells:
        value = number(cell.strip())
        if value is None:
            return None
        numbers.append(value)
    return numbers


def fmt(value):
    return str(value) if isinstance(value, int) else f"{value:.6g}"


def summarise_column(name, cells, top):
    """Facts about one column: a line for the model and a dict for metadata."""
    present = [c for c in cells if c.strip() != ""]
    empty = len(cells) - len(present)
    numbers = numeric_cells(present)
    facts = {"name": name, "empty": empty}
    if present and numbers is not None:
        kind = "integer" if all(isinstance(n, int) for n in numbers) else "number"
        lo, hi, mean = min(numbers), max(numbers), statistics.fmean(numbers)
        facts.update(type=kind, min=lo, max=hi, mean=round(mean, 6))
        detail = f"min {fmt(lo)}, max {fmt(hi)}, mean {fmt(mean)}"
    else:
        counts = Counter(present)
        common = counts.most_common(top)
        facts.update(type="text", distinct=len(counts), top=[[v, n] for v, n in common])
        shown = ", ".join(f"{json.dumps(v, ensure_ascii=False)} ({n})" for v, n in common)
        detail = f"{len(counts)} distinct" + (f"; most common: {shown}" if shown else "")
    empties = f", {empty} empty" if empty else ""
    return f"- {name}: {facts['type']}{empties}, {detail}", facts


def summarise(args, work_dir):
    path = args["path"]
    top = args.get("top", 3)
    if not isinstance(top, int) or not 1 <= top <= 20:
        raise ToolFailure("invalid_args", f"top must be an integer from 1 to 20, got {top!r}")
    full = resolve(work_dir, path)
    shown = os.path.relpath(full, os.path.normpath(work_dir))
    text = read_text(full, shown)
    delimiter = pick_delimiter(text, args.get("delimiter"))
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    except csv.Error as e:
        raise ToolFailure("invalid_csv", f"{shown}: {e}") from None
    rows = [r for r in rows if r]
    if not rows:
        raise ToolFailure("empty_file", f"{shown} has no header row")
    header, body = rows[0], rows[1:]
    ragged = sum(1 for r in body if len(r) != len(header))
    lines = [f"{shown}: {len(body)} rows, {len(header)} columns (delimiter {json.dumps(delimiter)})"]
    columns = []
    for i, name in enumerate(header):
        line, facts = summarise_column(name, [r[i] if i < len(r) else "" for r in body], top)
        lines.append(line)
        columns.append(facts)
    if ragged:
        lines.append(f"note: {ragged} rows do not have {len(header)} fields")
    log.log(log.Level.DEBUG, f"summarised {shown}: {len(body)} rows")
    metadata = {"path": shown, "rows": len(body), "ragged_rows": ragged, "columns": columns}
    return "\n".join(lines) + "\n", metadata


def read_only_spec(name, description, parameters):
    """The spec of a tool that only reads."""
    return types.ToolSpec(
        name=name,
        description=description,
        parameters=json.dumps(parameters),
        read_only=True,
        destructive=False,
        timeout_ms=None,
    )


class Tools(exports.Tools):
    """The `toolhost:plugin/tools` export."""

    def list_tools(self):
        return [
            read_only_spec(NAME, DESCRIPTION, PARAMETERS),
            read_only_spec(ECHO_NAME, ECHO_DESCRIPTION, ECHO_PARAMETERS),
        ]

    def call(self, name, args_json, context):
        try:
            if name not in (NAME, ECHO_NAME):
                raise ToolFailure("unknown_tool", name)
            try:
                args = json.loads(args_json)
            except json.JSONDecodeError as e:
                raise ToolFailure("invalid_args", f"arguments are not JSON: {e}") from None
            if name == ECHO_NAME:
                if not isinstance(args.get("text"), str):
                    raise ToolFailure("invalid_args", "text must be a string")
                return types.ToolOutput(content=args["text"], display=None, metadata=None)
            content, metadata = summarise(args, context.work_dir)
        except ToolFailure as failure:
            raise Err(types.ToolError(code=failure.code, message=failure.message)) from None
        return types.ToolOutput(content=content, display=None, metadata=json.dumps(metadata))
