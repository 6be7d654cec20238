// `get_page`: a typed-export tool written in JavaScript that calls `fetch()`,
// the way tools for other wasm hosts are written. No toolhost contract: the
// world in `wit/` exports one function, and toolhost makes it a tool.
//
// Built by `scripts/examples` with componentize-js *without* `-d http`, so
// StarlingMonkey's `fetch()` goes out through the wasi:http imports, and
// toolhost sends each request through its pinned client: the hosts the
// policy grants, private and loopback addresses refused after resolution,
// bounded bodies, the call's deadline.
//
// StarlingMonkey's `fetch()` (componentize-js 0.23) hands a 3xx back as it is,
// whatever `redirect` says, so the tool follows redirects itself, at most
// five: each hop is a new request that toolhost vets again.
//
// An async export: componentize-js runs the event loop until the promise
// settles. Returning is `ok`, throwing a string is `err`.

// What a rejection says: its name and message, and its cause if it has one.
function describe(e) {
  if (!(e instanceof Error)) {
    return String(e);
  }
  let text = `${e.name}: ${e.message}`;
  if (e.cause !== undefined) {
    text += ` (cause: ${describe(e.cause)})`;
  }
  return text;
}

const MAX_REDIRECTS = 5;

// GET `url`, following up to MAX_REDIRECTS redirects.
async function follow(url) {
  for (let hops = 0; ; hops++) {
    let response;
    try {
      response = await fetch(url);
    } catch (e) {
      throw `fetch(${JSON.stringify(url)}) rejected: ${describe(e)}`;
    }
    const location = response.headers.get('location');
    if (response.status < 300 || response.status > 399 || location === null) {
      return { response, url };
    }
    if (hops === MAX_REDIRECTS) {
      throw `${url}: more than ${MAX_REDIRECTS} redirects`;
    }
    url = new URL(location, url).href;
  }
}

export const page = {
  async getPage(url, previewChars) {
    const chars = previewChars ?? 200;
    const { response, url: last } = await follow(url);
    let body;
    try {
      body = new Uint8Array(await response.arrayBuffer());
    } catch (e) {
      throw `reading the body of ${last} (status ${response.status}) failed: ${describe(e)}`;
    }
    const text = new TextDecoder().decode(body.subarray(0, chars * 4));
    return {
      url: last,
      status: response.status,
      contentType: response.headers.get('content-type') ?? undefined,
      bytes: BigInt(body.length),
      preview: text.slice(0, chars),
    };
  },
};
