// `markdown_outline`: a toolhost tool written in JavaScript (and `js_echo`, a
// trivial one).
//
// Lists the headings of a Markdown file (ATX `# …` and setext underlined
// ones, skipping fenced code blocks and front matter) with their line
// numbers, indented by level.
//
// Built with componentize-js against the world in `wit/` (toolhost's
// `plugin` world plus the WASI filesystem imports). The file is read through
// the preopened work directory, the only directory the sandbox lets the tool
// see: JavaScript has no `open()` here, so the tool uses the WASI 0.2
// filesystem interface directly.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';
import { log } from 'toolhost:plugin/log@0.1.0';

const NAME = 'markdown_outline';

const DESCRIPTION =
  'List the headings of a Markdown file as an outline: one line per heading with its line number, ' +
  'indented by level (ATX `#` headings and setext `===`/`---` underlined ones; fenced code blocks and ' +
  'front matter are skipped). Use it to find your way around long documents before reading a section. ' +
  'Paths are relative to the work directory.';

const PARAMETERS = {
  type: 'object',
  properties: {
    path: {
      type: 'string',
      description: 'The Markdown file: relative to the work directory, or absolute inside it.',
    },
    max_depth: {
      type: 'integer',
      minimum: 1,
      maximum: 6,
      description: 'Deepest heading level to list, 1 to 6. Default 6.',
    },
  },
  required: ['path'],
  additionalProperties: false,
};

// `js_echo` does no work at all: what a call to it costs is what any call to
// this component costs (a fresh instance of the engine snapshot, the arguments
// in, the output out), measured apart from `markdown_outline`'s work.
const ECHO_NAME = 'js_echo';

const ECHO_DESCRIPTION = 'Return `text` unchanged. A trivial tool: it measures what a call to a JavaScript tool costs.';

const ECHO_PARAMETERS = {
  type: 'object',
  properties: { text: { type: 'string', description: 'What to return.' } },
  required: ['text'],
  additionalProperties: false,
};

// Larger files are refused: the whole file is held in memory.
const MAX_BYTES = 8 * 1024 * 1024;

/** A failure the model can act on: a stable code and a message. */
class ToolFailure {
  constructor(code, message) {
    this.code = code;
    this.message = message;
  }
}

/** The path segments of `path` below `workDir`, resolved lexically, or `path_escape`. */
function resolve(workDir, path) {
  if (path.includes('\0')) throw new ToolFailure('invalid_args', 'path contains a NUL byte');
  const root = workDir.split('/').filter((s) => s !== '' && s !== '.');
  const parts = path.startsWith('/') ? [] : [...root];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (parts.length === 0) throw new ToolFailure('path_escape', `${path} is outside the work directory`);
      parts.pop();
    } else {
      parts.push(seg);
    }
  }
  const inside = parts.length >= root.length && root.every((seg, i) => parts[i] === seg);
  if (!inside) throw new ToolFailure('path_escape', `${path} is outside the work directory`);
  return parts.slice(root.length);
}

/** Map a WASI filesystem error code to a tool error about `shown`. */
function fsFailure(err, shown) {
  const code = typeof err === 'string' ? err : (err && (err.payload ?? err.code)) || String(err);
  switch (code) {
    case 'no-entry':
      return new ToolFailure('not_found', `${shown} does not exist`);
    case 'is-directory':
      return new ToolFailure('is_directory', `${shown} is a directory, not a Markdown file`);
    case 'access':
    case 'not-permitted':
    case 'read-only':
      return new ToolFailure('access_denied', `${shown}: the sandbox refused access`);
    default:
      return new ToolFailure('io_error', `${shown}: ${code}`);
  }
}

/** The text of the file at `segments` below the preopened work dir. */
function readText(workDir, segments, shown) {
  const preopen = getDirectories().find(([, guestPath]) => guestPath === workDir);
  if (!preopen) throw new ToolFailure('no_filesystem', 'the work directory is not open in this call');
  const rel = segments.length ? segments.join('/') : '.';
  let file;
  try {
    file = preopen[0].openAt({ symlinkFollow: true }, rel, {}, { read: true });
  } catch (err) {
    throw fsFailure(err, shown);
  }
  const chunks = [];
  let total = 0;
  try {
    const stat = file.stat();
    if (stat.type === 'directory') throw new ToolFailure('is_directory', `${shown} is a directory, not a Markdown file`);
    if (stat.type !== 'regular-file') throw new ToolFailure('invalid_args', `${shown} is not a regular file`);
    if (stat.size > BigInt(MAX_BYTES)) {
      throw new ToolFailure('too_large', `${shown} is ${stat.size} bytes; at most ${MAX_BYTES} are read`);
    }
    for (;;) {
      const [bytes, eof] = file.read(65536n, BigInt(total));
      chunks.push(bytes);
      total += bytes.length;
      if (eof || bytes.length === 0) break;
      if (total > MAX_BYTES) throw new ToolFailure('too_large', `${shown} grew past ${MAX_BYTES} bytes`);
    }
  } catch (err) {
    throw err instanceof ToolFailure ? err : fsFailure(err, shown);
  }
  const all = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  if (all.subarray(0, 8192).includes(0)) throw new ToolFailure('binary_file', `${shown} is a binary file`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(all);
  } catch {
    throw new ToolFailure('binary_file', `${shown} is not UTF-8 text`);
  }
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const ATX = /^ {0,3}(#{1,6})(?:[ \t]+|$)(.*)$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const OTHER_BLOCK = /^ {0,3}([-*+>|]|\d+[.)])([ \t]|$)/;

/** The headings of `text`: `{ level, text, line }`, in order. */
function outline(text) {
  const lines = text.split(/\r\n|\n|\r/);
  const headings = [];
  let fence = null; // the opening fence while inside a code block
  let paragraph = null; // { line, text } of the paragraph being read
  let i = 0;
  if (lines[0] === '---') {
    // YAML front matter: up to the next `---` or `...` line.
    const end = lines.findIndex((l, n) => n > 0 && (l === '---' || l === '...'));
    if (end > 0) i = end + 1;
  }
  for (; i < lines.length; i++) {
    const line = lines[i];
    if (fence) {
      const close = line.match(FENCE);
      if (close && close[1][0] === fence[0] && close[1].length >= fence.length && line.trim() === close[1]) fence = null;
      continue;
    }
    const open = line.match(FENCE);
    if (open) {
      fence = open[1];
      paragraph = null;
      continue;
    }
    const atx = line.match(ATX);
    if (atx) {
      const title = atx[2].replace(/[ \t]+#+[ \t]*$/, '').replace(/^#+[ \t]*$/, '').trim();
      headings.push({ level: atx[1].length, text: title, line: i + 1 });
      paragraph = null;
      continue;
    }
    const under = line.match(SETEXT);
    if (under) {
      // Under a plain paragraph it makes a heading; anywhere else it is a
      // thematic break (or text that does not matter for an outline).
      if (paragraph && !paragraph.other) {
        headings.push({ level: under[1][0] === '=' ? 1 : 2, text: paragraph.text, line: paragraph.line });
      }
      paragraph = null;
      continue;
    }
    if (line.trim() === '' || (!paragraph && /^( {4}|\t)/.test(line))) {
      paragraph = null; // a blank line, or indented code
    } else if (paragraph) {
      paragraph.text += ' ' + line.trim();
    } else {
      // List items, quotes and tables are not paragraphs a setext line can underline.
      paragraph = { line: i + 1, text: line.trim(), other: OTHER_BLOCK.test(line) };
    }
  }
  return headings;
}

function run(args, context) {
  if (context.workDir === undefined) {
    throw new ToolFailure('no_filesystem', 'this tool has no filesystem access in this call');
  }
  if (typeof args.path !== 'string') throw new ToolFailure('invalid_args', 'path must be a string');
  const maxDepth = args.max_depth ?? 6;
  if (!Number.isInteger(maxDepth) || maxDepth < 1 || maxDepth > 6) {
    throw new ToolFailure('invalid_args', `max_depth must be an integer from 1 to 6, got ${maxDepth}`);
  }
  const segments = resolve(context.workDir, args.path);
  const shown = segments.length ? segments.join('/') : '.';
  const headings = outline(readText(context.workDir, segments, shown)).filter((h) => h.level <= maxDepth);
  log('debug', `${shown}: ${headings.length} headings`);
  const width = String(headings.reduce((m, h) => Math.max(m, h.line), 1)).length;
  const rows = headings.map(
    (h) => `${String(h.line).padStart(width)}  ${'  '.repeat(h.level - 1)}${'#'.repeat(h.level)} ${h.text}`,
  );
  const count = headings.length === 1 ? '1 heading' : `${headings.length} headings`;
  return {
    content: [`${shown}: ${count}`, ...rows].join('\n') + '\n',
    display: undefined,
    metadata: JSON.stringify({ path: shown, headings }),
  };
}

/** The `toolhost:plugin/tools` export. */
export const tools = {
  listTools() {
    return [
      {
        name: NAME,
        description: DESCRIPTION,
        parameters: JSON.stringify(PARAMETERS),
        readOnly: true,
        destructive: false,
        timeoutMs: undefined,
      },
      {
        name: ECHO_NAME,
        description: ECHO_DESCRIPTION,
        parameters: JSON.stringify(ECHO_PARAMETERS),
        readOnly: true,
        destructive: false,
        timeoutMs: undefined,
      },
    ];
  },

  call(name, argsJson, context) {
    try {
      if (name !== NAME && name !== ECHO_NAME) throw new ToolFailure('unknown_tool', name);
      let args;
      try {
        args = JSON.parse(argsJson);
      } catch (err) {
        throw new ToolFailure('invalid_args', `arguments are not JSON: ${err.message}`);
      }
      if (name === ECHO_NAME) {
        if (typeof args.text !== 'string') throw new ToolFailure('invalid_args', 'text must be a string');
        return { content: args.text, display: undefined, metadata: undefined };
      }
      return run(args, context);
    } catch (err) {
      // A thrown value becomes the `err` of the WIT result.
      if (err instanceof ToolFailure) throw { code: err.code, message: err.message };
      throw { code: 'internal_error', message: String(err && err.stack ? err.stack : err) };
    }
  },
};
