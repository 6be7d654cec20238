// `{{tool}}`: a toolhost tool. Counts the lines, words and bytes of a text
// file in the work directory, like `wc`.
//
// Build with `./build.sh` (componentize-js against `wit/`). JavaScript has no
// `open()` here: the file is read with the WASI 0.2 filesystem interface,
// through the preopened work directory, the only directory the tool can see.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';
import { log } from 'toolhost:plugin/log@0.1.0';

const NAME = '{{tool}}';

const DESCRIPTION = 'Count the lines, words and bytes of a text file, like `wc`. Paths are relative to the work directory.';

// JSON Schema of the arguments: give every property a type and a description.
const PARAMETERS = {
  type: 'object',
  properties: {
    path: {
      type: 'string',
      description: 'The file to count: relative to the work directory, or absolute inside it.',
    },
  },
  required: ['path'],
  additionalProperties: false,
};

/** A failure the model can act on: a stable snake_case code and a message. */
class ToolFailure {
  constructor(code, message) {
    this.code = code;
    this.message = message;
  }
}

/** The path segments of `path` below `workDir`, resolved lexically, or `path_escape`. */
function resolve(workDir, path) {
  const root = workDir.split('/').filter((s) => s !== '' && s !== '.');
  const parts = path.startsWith('/') ? [] : [...root];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg !== '..') parts.push(seg);
    else if (parts.pop() === undefined) throw new ToolFailure('path_escape', `${path} is outside the work directory`);
  }
  if (parts.length < root.length || root.some((seg, i) => parts[i] !== seg)) {
    throw new ToolFailure('path_escape', `${path} is outside the work directory`);
  }
  return parts.slice(root.length);
}

/** A WASI filesystem error (thrown by the bindings) as a tool error about `shown`. */
function fsFailure(err, shown) {
  const code = typeof err === 'string' ? err : err?.payload ?? String(err);
  if (code === 'no-entry') return new ToolFailure('not_found', `${shown} does not exist`);
  if (code === 'is-directory') return new ToolFailure('is_directory', `${shown} is a directory, not a file`);
  if (code === 'access' || code === 'not-permitted') {
    return new ToolFailure('access_denied', `${shown}: the sandbox refused access`);
  }
  return new ToolFailure('io_error', `${shown}: ${code}`);
}

/** The bytes of the file at `segments` below the preopened work dir. */
function readBytes(workDir, segments, shown) {
  const preopen = getDirectories().find(([, guestPath]) => guestPath === workDir);
  if (!preopen) throw new ToolFailure('no_filesystem', 'the work directory is not open in this call');
  try {
    const file = preopen[0].openAt({ symlinkFollow: true }, segments.join('/') || '.', {}, { read: true });
    if (file.stat().type === 'directory') throw 'is-directory';
    const chunks = [];
    let size = 0;
    for (;;) {
      const [bytes, eof] = file.read(65536n, BigInt(size));
      chunks.push(bytes);
      size += bytes.length;
      if (eof || bytes.length === 0) break;
    }
    const all = new Uint8Array(size);
    chunks.reduce((at, chunk) => (all.set(chunk, at), at + chunk.length), 0);
    return all;
  } catch (err) {
    throw fsFailure(err, shown);
  }
}

/** Lines (a last line without a newline counts), words and UTF-8 bytes. */
function counts(bytes, shown) {
  let text;
  try {
    if (bytes.includes(0)) throw new Error('NUL byte');
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ToolFailure('binary_file', `${shown} is not a text file`);
  }
  const lines = (text.match(/\n/g) ?? []).length + (text && !text.endsWith('\n') ? 1 : 0);
  const words = text.split(/\s+/).filter((w) => w !== '').length;
  return { lines, words, bytes: bytes.length };
}

function run(args, context) {
  if (context.workDir === undefined) throw new ToolFailure('no_filesystem', 'this tool has no filesystem access');
  const segments = resolve(context.workDir, args.path);
  const shown = segments.join('/') || '.';
  const { lines, words, bytes } = counts(readBytes(context.workDir, segments, shown), shown);
  log('debug', `counted ${shown}`);
  return {
    content: `${shown}: ${lines} lines, ${words} words, ${bytes} bytes`,
    display: undefined,
    metadata: JSON.stringify({ path: shown, lines, words, bytes }),
  };
}

/** The `toolhost:plugin/tools` export: list the tools, run one by name. */
export const tools = {
  listTools() {
    return [
      {
        name: NAME,
        description: DESCRIPTION,
        parameters: JSON.stringify(PARAMETERS),
        // Changes nothing: may run in parallel, gets a read-only work dir.
        readOnly: true,
        destructive: false,
        timeoutMs: undefined,
      },
    ];
  },

  call(name, argsJson, context) {
    try {
      if (name !== NAME) throw new ToolFailure('unknown_tool', name);
      return run(JSON.parse(argsJson), context);
    } catch (err) {
      // A thrown value becomes the `err` case of the WIT result.
      if (err instanceof ToolFailure) throw { code: err.code, message: err.message };
      throw { code: 'internal_error', message: String(err?.stack ?? err) };
    }
  },
};
