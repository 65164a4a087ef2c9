// The page's client of the native API (/api/threads…): JSON requests with
// the API key, and run event streams read with fetch (EventSource cannot
// send the key) that reconnect with Last-Event-ID.

const KEY = "capgraph-key";

// The API key stays in this tab (sessionStorage: gone when the tab closes)
// unless the user ticks "Remember on this device"; only then is it in
// localStorage. Unticking removes it from there.
export const keys = {
  load() {
    const remembered = localStorage.getItem(KEY);
    return { key: remembered || sessionStorage.getItem(KEY) || "", remember: remembered !== null };
  },
  store(key, remember) {
    const [keep, drop] = remember ? [localStorage, sessionStorage] : [sessionStorage, localStorage];
    drop.removeItem(KEY);
    if (key) keep.setItem(KEY, key); else keep.removeItem(KEY);
  },
};

let apiKey = keys.load().key;
export function setKey(k) { apiKey = k; }

// AuthError: the server refused the key (401). Nothing is retried: the page
// asks for a key and the user decides what to send again.
export class AuthError extends Error {}

// APIError is any other error answer, in the server's shape
// {"error": {message, type, param, code}}.
export class APIError extends Error {
  constructor(status, e) {
    super((e && e.message) || "HTTP " + status);
    this.status = status;
    this.code = e && e.code;
    this.param = e && e.param;
  }
}

let unauthorized = () => {};
// onUnauthorized sets what happens on a 401 (once per refusal).
export function onUnauthorized(fn) { unauthorized = fn; }

function headers(extra) {
  const h = { Accept: "application/json", ...extra };
  if (apiKey) h.Authorization = "Bearer " + apiKey;
  return h;
}

async function fail(res) {
  let e = null;
  try { e = (await res.json()).error; } catch { /* not JSON */ }
  if (res.status === 401) {
    const err = new AuthError((e && e.message) || "The server needs a valid API key.");
    unauthorized(err);
    throw err;
  }
  throw new APIError(res.status, e);
}

// api sends one JSON request to path (relative to the page, so the page
// works under a path prefix) and returns the decoded answer.
export async function api(path, { method = "GET", body, signal } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  if (!res.ok) await fail(res);
  if (res.status === 204) return null;
  return res.json();
}

export const threadPath = (id, ...rest) => ["api/threads", encodeURIComponent(id), ...rest.map(encodeURIComponent)].join("/");

// follow reads a run's events from after (an event number) until its "end"
// frame, calling onEvent for each agent event in order. A connection that
// drops is resumed with Last-Event-ID, so no event is lost or repeated.
// It resolves with the end frame ({run_id, status, shutdown}) and an error
// frame's message, if the run failed.
export async function follow(thread, run, { after = 0, onEvent, signal }) {
  let delay = 500;
  let failure = null;
  for (;;) {
    if (signal && signal.aborted) throw new DOMException("aborted", "AbortError");
    let res;
    try {
      const h = headers({ Accept: "text/event-stream" });
      if (after > 0) h["Last-Event-ID"] = String(after);
      res = await fetch(threadPath(thread, "runs", run, "events"), { headers: h, signal });
    } catch (e) {
      if (e.name === "AbortError") throw e;
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 8000);
      continue;
    }
    if (res.status === 409 || res.status >= 500) {
      // The run is being recovered or runs elsewhere: try again shortly.
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 8000);
      continue;
    }
    if (!res.ok) await fail(res);
    delay = 500;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
          const frame = parseFrame(buf.slice(0, i));
          buf = buf.slice(i).replace(/^\r?\n\r?\n/, "");
          if (!frame) continue;
          if (frame.event === "end") return { end: JSON.parse(frame.data), failure };
          if (frame.event === "heartbeat") continue;
          if (frame.event === "error") {
            try { failure = JSON.parse(frame.data).error.message; } catch { failure = frame.data; }
            continue;
          }
          const ev = JSON.parse(frame.data);
          if (frame.id) after = Number(frame.id);
          onEvent(ev);
        }
      }
    } catch (e) {
      if (e.name === "AbortError") throw e;
    }
    // The stream ended without its end frame: reconnect after the last event.
  }
}

function parseFrame(text) {
  const f = { id: "", event: "message", data: "" };
  let any = false;
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (field === "id") f.id = value;
    else if (field === "event") f.event = value;
    else if (field === "data") { f.data += (f.data ? "\n" : "") + value; any = true; }
  }
  return any ? f : null;
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener("abort", () => { clearTimeout(t); reject(new DOMException("aborted", "AbortError")); }, { once: true });
  });
}
