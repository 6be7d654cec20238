// An independent MCP client for toolhost's tests: the official TypeScript SDK.
//
//   node ts_client.mjs SDK MODE TARGET
//
// SDK is "v2" (@modelcontextprotocol/client, which speaks 2026-07-28) or "v1"
// (@modelcontextprotocol/sdk, the 2025 line); MODE is "auto" (server/discover
// first: 2026-07-28 against toolhost) or "legacy" (the initialize handshake;
// the only one v1 has). TARGET is an http:// URL (Streamable HTTP) or a JSON
// list, the command line of a stdio server. Against the hostile test plugin
// and the builtins it lists the tools, reads a file, reads a failure and
// cancels a call that would spin forever (AbortSignal), then prints one JSON
// object of what it saw. Any exception fails the run (exit 1).

const [sdk, mode, target] = process.argv.slice(2);

async function load() {
    if (sdk === 'v2') {
        const client = await import('@modelcontextprotocol/client');
        const stdio = await import('@modelcontextprotocol/client/stdio');
        return { Client: client.Client, Http: client.StreamableHTTPClientTransport, Stdio: stdio.StdioClientTransport };
    }
    if (sdk === 'v1') {
        const client = await import('@modelcontextprotocol/sdk/client/index.js');
        const http = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
        const stdio = await import('@modelcontextprotocol/sdk/client/stdio.js');
        return { Client: client.Client, Http: http.StreamableHTTPClientTransport, Stdio: stdio.StdioClientTransport };
    }
    throw new Error(`unknown SDK ${sdk}: v1 or v2`);
}

function textOf(result) {
    return result.content.filter((part) => part.type === 'text').map((part) => part.text).join('');
}

const { Client, Http, Stdio } = await load();
const options = sdk === 'v2' ? { versionNegotiation: { mode } } : {};
const client = new Client({ name: `toolhost-tests-ts-${sdk}`, version: '0' }, options);
let transport;
if (target.startsWith('http://')) {
    transport = new Http(new URL(target));
} else {
    const [command, ...args] = JSON.parse(target);
    transport = new Stdio({ command, args, env: process.env, stderr: 'inherit' });
}
await client.connect(transport);
const seen = {};
seen.protocol = client.getNegotiatedProtocolVersion ? client.getNegotiatedProtocolVersion() : 'legacy (v1)';
seen.server = client.getServerVersion()?.name ?? null;
const tools = await client.listTools();
seen.tools = tools.tools.map((tool) => tool.name).sort();
const read = await client.callTool({ name: 'read_file', arguments: { path: 'hello.txt' } });
seen.read = { is_error: read.isError ?? false, text: textOf(read), structured: read.structuredContent ?? null };
const failed = await client.callTool({ name: 'read_file', arguments: { path: 'missing.txt' } });
seen.failure = { is_error: failed.isError ?? false, text: textOf(failed) };
// Cancellation: aborting the signal sends notifications/cancelled (or drops the
// request); the server must stop the spinning guest.
const abort = new AbortController();
const started = Date.now();
const timer = setTimeout(() => abort.abort(new Error('cancelled by the test')), 1000);
try {
    const spin = { name: 'spin', arguments: {} };
    // v1 takes a result schema before the options.
    await (sdk === 'v2' ? client.callTool(spin, { signal: abort.signal }) : client.callTool(spin, undefined, { signal: abort.signal }));
    seen.cancelled = false;
} catch (error) {
    seen.cancelled = abort.signal.aborted;
    seen.cancel_error = String(error?.message ?? error).slice(0, 200);
}
clearTimeout(timer);
seen.cancelled_after_s = (Date.now() - started) / 1000;
const after = await client.callTool({ name: 'noop', arguments: {} });
seen.after_cancel = { is_error: after.isError ?? false };
await client.close();
console.log(JSON.stringify(seen));
