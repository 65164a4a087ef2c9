// The built-in capgraph page: the caller's conversations (threads) beside
// a chat over the native API — runs started with POST …/runs and followed
// as event streams (reconnected with Last-Event-ID), stopped with …/cancel,
// approvals answered with …/approval, a conversation restored from its
// state. Plain ES modules, no build step; marked, DOMPurify and uPlot are
// vendored (vendor/). Stable hooks for tests: #q, #send, #stop, #status,
// #key, #remember, #new, .assistant[data-done="1"], [data-approval-id],
// #examples .example, #thread-list [data-thread-id], .plan .step[data-status].
import { api, follow, keys, setKey, AuthError, APIError, onUnauthorized, threadPath } from "./js/api.js";
import { el, icon } from "./js/icons.js";
import { Turn, setApprovalState } from "./js/turn.js";
import { setZone, timeZone, date, stamp } from "./js/time.js";
import { showTargets, showTimelines, targetOptions } from "./js/timetravel.js";

const $ = (s) => document.querySelector(s);
const chat = $("#chat"), statusEl = $("#status"), q = $("#q"), sendBtn = $("#send"), stopBtn = $("#stop");
const keyEl = $("#key"), rememberEl = $("#remember"), keybar = $("#keybar"), keyMessage = $("#key-message");
const threadList = $("#thread-list"), moreBtn = $("#more-threads"), threadsEmpty = $("#threads-empty");

const app = {
  info: null,
  threadId: null,
  run: null,          // {thread, id, ctrl}: the run this page follows
  turns: new WeakMap(), // article → Turn
  threads: new Map(), // id → thread as listed
  cursor: "",
  openSeq: 0,         // counts openThread calls: a slower, older one gives way
};

// ---- chrome: icons, key, writes indicator ----

$("#threads-toggle").appendChild(icon("menu"));
$("#key-toggle").appendChild(icon("key"));
sendBtn.append(icon("send"), el("span", { class: "label", text: "Send" }));
stopBtn.append(icon("stop"), el("span", { class: "label", text: "Stop" }));
$("#new").append(icon("plus"), " New chat");

{
  const k = keys.load();
  keyEl.value = k.key;
  rememberEl.checked = k.remember;
}
function storeKey() {
  keys.store(keyEl.value, rememberEl.checked);
  setKey(keyEl.value);
}
keyEl.addEventListener("input", storeKey);
keyEl.addEventListener("change", () => { storeKey(); start(); });
rememberEl.addEventListener("change", storeKey);
keyEl.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); storeKey(); start(); } });
$("#key-save").addEventListener("click", () => { storeKey(); start(); });

function toggle(button, panel, open) {
  const o = open === undefined ? button.getAttribute("aria-expanded") !== "true" : open;
  button.setAttribute("aria-expanded", o ? "true" : "false");
  if (panel) panel.hidden = !o;
  return o;
}
$("#key-toggle").addEventListener("click", () => { if (toggle($("#key-toggle"), keybar)) keyEl.focus(); });
$("#threads-toggle").addEventListener("click", () => {
  const o = toggle($("#threads-toggle"));
  document.body.classList.toggle("threads-open", o);
  document.body.classList.toggle("threads-closed", !o);
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && document.body.classList.contains("threads-open") && matchMedia("(max-width: 799px)").matches) closeThreadsOverlay();
});
function closeThreadsOverlay() {
  if (!matchMedia("(max-width: 799px)").matches) return;
  toggle($("#threads-toggle"), null, false);
  document.body.classList.remove("threads-open");
}

// One clear message on 401, the key field opened; nothing is sent again
// by itself.
onUnauthorized((err) => {
  toggle($("#key-toggle"), keybar, true);
  keyMessage.textContent = (keyEl.value ? "The server refused this API key" : "This server needs an API key") +
    ". Enter a valid key and press Use key." + (err.message && !/api key/i.test(err.message) ? " (" + err.message + ")" : "");
  keybar.classList.add("needed");
  // Focus the key field, unless the user is typing somewhere else.
  const a = document.activeElement;
  if (!a || a === document.body || a.closest("#keybar, #top")) keyEl.focus();
});

function showWrites(info) {
  const pill = $("#writes");
  if (typeof info.writes_enabled !== "boolean") { pill.hidden = true; return; }
  pill.hidden = false;
  pill.replaceChildren(icon(info.writes_enabled ? "bolt" : "lock"), info.writes_enabled ? " Writes enabled" : " Read-only");
  pill.dataset.writes = info.writes_enabled ? "on" : "off";
  pill.title = info.writes_enabled
    ? "This server may change the machine: every change asks for approval first" + (info.approval_mode ? " (approval mode: " + info.approval_mode + ")" : "") + "."
    : "Writes are disabled by the server's configuration: nothing on the machine can be changed from here.";
}

// ---- status and busy state ----

function status(text) { statusEl.textContent = text || ""; }

function setBusy(b) {
  sendBtn.hidden = b;
  stopBtn.hidden = !b;
  stopBtn.disabled = false;
  chat.setAttribute("aria-busy", b ? "true" : "false");
}

function statusOf(ev) {
  switch (ev.type) {
    case "status": return ev.text;
    case "step_start": return "Step " + ((ev.step || 0) + 1) + (ev.total ? " of " + ev.total : "") + ": " + (ev.text || ev.capability) + "…";
    case "retry": {
      const r = ev.retry || {};
      return "Retrying " + (r.capability ? "step " + (r.step + 1) + " (" + r.capability + ")" : r.node) + " — attempt " + r.attempt + " of " + r.max + " failed: " + r.reason;
    }
    case "approval_required": return "Waiting for your approval.";
    default: return null;
  }
}

// ---- threads ----

function ago(t) {
  const d = new Date(t);
  const s = (Date.now() - d.getTime()) / 1000;
  if (isNaN(s)) return "";
  if (s < 60) return "just now";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return date(d);
}

function titleOf(th) {
  return (th.metadata && th.metadata.title) || "Conversation " + th.id.slice(0, 8);
}

async function loadThreads(more) {
  let page;
  try {
    page = await api("api/threads?limit=50" + (more && app.cursor ? "&cursor=" + encodeURIComponent(app.cursor) : ""));
  } catch (e) {
    if (!(e instanceof AuthError)) status("The conversations could not be listed: " + e.message);
    return;
  }
  if (!more) app.threads.clear();
  for (const th of page.threads || []) app.threads.set(th.id, th);
  app.cursor = page.has_more ? page.next_cursor || "" : "";
  moreBtn.hidden = !page.has_more;
  renderThreads();
}

function renderThreads() {
  const items = [...app.threads.values()];
  if (app.threadId && !app.threads.has(app.threadId) && app.pendingTitle) {
    items.unshift({ id: app.threadId, metadata: { title: app.pendingTitle }, updated_at: new Date().toISOString(), status: "running" });
  }
  threadsEmpty.hidden = items.length > 0;
  threadList.replaceChildren(...items.map(threadItem));
}

function threadItem(th) {
  const current = th.id === app.threadId;
  const badges = [];
  if (th.status === "interrupted") badges.push(el("span", { class: "badge waiting" }, icon("hand"), " Waiting for approval"));
  else if (th.status === "running") badges.push(el("span", { class: "badge running" }, icon("running"), " Running"));
  else if (th.status === "failed") badges.push(el("span", { class: "badge failed" }, icon("cross"), " Failed"));
  else if (th.status === "canceled") badges.push(el("span", { class: "badge" }, icon("stop"), " Stopped"));
  const title = titleOf(th);
  const link = el("a", { href: "#/t/" + encodeURIComponent(th.id), class: "thread-link", "aria-current": current ? "page" : null },
    el("span", { class: "thread-title", text: title }),
    el("span", { class: "thread-meta" }, el("time", { datetime: th.updated_at, text: ago(th.updated_at) }), ...badges));
  link.addEventListener("click", closeThreadsOverlay);
  const rename = el("button", { type: "button", class: "icon-button rename", "aria-label": "Rename " + title }, icon("pencil"));
  const del = el("button", { type: "button", class: "icon-button delete", "aria-label": "Delete " + title }, icon("trash"));
  const li = el("li", { class: "thread" + (current ? " current" : ""), dataset: { threadId: th.id, status: th.status || "" } }, link, rename, del);
  rename.addEventListener("click", () => startRename(li, th));
  del.addEventListener("click", () => deleteThread(th));
  return li;
}

function startRename(li, th) {
  const input = el("input", { type: "text", class: "rename-input", value: titleOf(th), "aria-label": "New title", maxlength: "200" });
  li.replaceChildren(input);
  input.focus();
  input.select();
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = input.value.trim();
    if (save && title && title !== titleOf(th)) {
      try {
        const updated = await api(threadPath(th.id), { method: "PATCH", body: { metadata: { title } } });
        app.threads.set(th.id, { ...th, ...updated, status: updated.status || th.status });
      } catch (e) {
        if (!(e instanceof AuthError)) status("Could not rename: " + e.message);
      }
    }
    renderThreads();
    threadList.querySelector('[data-thread-id="' + CSS.escape(th.id) + '"] .rename')?.focus();
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); finish(true); }
    if (e.key === "Escape") { e.preventDefault(); finish(false); }
  });
  input.addEventListener("blur", () => finish(true));
}

async function deleteThread(th) {
  if (!confirm("Delete “" + titleOf(th) + "”? Its messages and state are removed from the server.")) return;
  try {
    await api(threadPath(th.id), { method: "DELETE" });
  } catch (e) {
    if (!(e instanceof AuthError)) status(e.status === 409 ? "Stop the run first: " + e.message : "Could not delete: " + e.message);
    return;
  }
  app.threads.delete(th.id);
  if (th.id === app.threadId) location.hash = "";
  renderThreads();
}

moreBtn.addEventListener("click", () => loadThreads(true));
$("#new").addEventListener("click", () => {
  closeThreadsOverlay();
  if (location.hash) location.hash = ""; else newChat();
  q.focus();
});

// ---- conversation ----

function stopFollowing() {
  if (app.run) app.run.ctrl.abort();
  app.run = null;
  setBusy(false);
  status("");
}

function clearChat() {
  chat.replaceChildren();
  delete chat.dataset.loaded;
  app.pendingTitle = "";
}

function newChat() {
  stopFollowing();
  app.openSeq++;
  app.threadId = null;
  clearChat();
  renderThreads();
  showExamples();
}

function showExamples() {
  const examples = (app.info && app.info.examples) || [];
  if (examples.length === 0 || chat.childElementCount > 0) return;
  const box = el("div", { id: "examples" }, el("p", { text: "Try one of these:" }));
  for (const text of examples) {
    const b = el("button", { type: "button", class: "example", text });
    b.addEventListener("click", () => ask(text));
    box.appendChild(b);
  }
  chat.appendChild(box);
}

function addTurn(question) {
  const t = new Turn(app, question);
  app.turns.set(t.root, t);
  $("#examples")?.remove();
  chat.appendChild(t.root);
  return t;
}

function scrollDown() { chat.scrollTop = chat.scrollHeight; }

// openThread shows a conversation from its state: every turn's question and
// answer, the latest turn in full (plan, steps, approvals), and a run still
// going is followed again.
async function openThread(id) {
  stopFollowing();
  const seq = ++app.openSeq;
  app.threadId = id;
  clearChat();
  renderThreads();
  let ts;
  try {
    // The thread says whether a run goes on (the state's status is that of
    // its last checkpoint); the state has the conversation.
    const [th, st] = await Promise.all([api(threadPath(id)), api(threadPath(id, "state"))]);
    ts = st;
    if (th.status === "running") ts.status = "running";
  } catch (e) {
    if (e instanceof AuthError || seq !== app.openSeq) return;
    chat.appendChild(el("p", { class: "notice", text: e.status === 404 ? "There is no such conversation for this key. It may have been deleted." : "The conversation could not be loaded: " + e.message }));
    return;
  }
  if (seq !== app.openSeq) return; // another conversation was opened meanwhile
  const st = ts.state;
  if (!st || !st.turn || !st.turn.number) { showExamples(); chat.dataset.loaded = id; return; }
  const byTurn = new Map();
  for (const m of st.messages || []) {
    if (!byTurn.has(m.turn)) byTurn.set(m.turn, []);
    byTurn.get(m.turn).push(m);
  }
  let question = st.turn.input || "";
  // What became of each turn's changes, from the audit log: the badges
  // outlive the runs' events and a restart.
  const outcomes = await api(threadPath(id, "outcomes")).then((p) => p.outcomes || [], () => []);
  if (seq !== app.openSeq) return;
  const showOutcomes = (t, n) => { for (const r of outcomes) if (r.turn === n) t.addOutcome(r); };
  for (const [n, ms] of [...byTurn.entries()].sort((a, b) => a[0] - b[0])) {
    const user = ms.find((m) => m.role === "user");
    if (n === st.turn.number) { question = user ? user.content : question; continue; }
    const t = addTurn(user ? user.content : "");
    t.root.dataset.turn = String(n);
    const answer = ms.filter((m) => m.role === "assistant").pop();
    if (answer) t.showMessage(answer);
    showOutcomes(t, n);
    t.finished = true;
    earlierArtifacts(id, n, t, seq);
  }
  // The latest turn: from its runs' events when the server still has them
  // (the timeline, each attempt's route), completed by the state (the
  // context data, the approvals' decisions).
  const { events, live } = await latestRuns(id, ts.status);
  if (seq !== app.openSeq) return;
  const latest = addTurn(question);
  latest.root.dataset.turn = String(st.turn.number);
  showOutcomes(latest, st.turn.number);
  for (const ev of events) if (ev.type !== "token") latest.handle(ev);
  if (live) {
    chat.dataset.loaded = id;
    scrollDown();
    return followRun(id, latest, live.id, 0);
  }
  latest.fromState(st, ts.status);
  chat.dataset.loaded = id;
  scrollDown();
  if (ts.status === "running") pollRunning(id);
  else showTimelines(chat, id, () => loadThreads());
}

// earlierArtifacts shows an earlier turn's artifacts (charts, tables) once
// the turn scrolls into view: GET …/artifacts?turn=N, kept with the turn's
// checkpoints (a 404 when they were pruned, or a server without artifacts).
const seen = window.IntersectionObserver ? new IntersectionObserver((entries) => {
  for (const e of entries) {
    if (!e.isIntersecting) continue;
    seen.unobserve(e.target);
    e.target.loadArtifacts?.();
  }
}, { rootMargin: "400px" }) : null;

function earlierArtifacts(id, n, turn, seq) {
  turn.root.loadArtifacts = async () => {
    try {
      const page = await api(threadPath(id, "artifacts") + "?turn=" + n);
      if (seq !== app.openSeq) return;
      for (const a of page.artifacts || []) turn.addArtifact(a);
    } catch { /* none kept */ }
  };
  if (seen) seen.observe(turn.root); else turn.root.loadArtifacts();
}

// runsOf lists the thread's runs, newest first, when the server keeps them
// (GET …/runs); null when it does not.
async function runsOf(id, limit) {
  try {
    const page = await api(threadPath(id, "runs") + "?limit=" + limit);
    return page.runs || [];
  } catch (e) {
    if (e instanceof AuthError) throw e;
    return null;
  }
}

// latestRuns returns the events of the runs of the thread's latest turn
// that have ended (the turn's first run and the resumes after its
// approvals), oldest first, and the run still going, if any.
async function latestRuns(id, status) {
  let runs = await runsOf(id, 5).catch(() => []);
  if (runs === null) {
    // A server without the run list: this tab's own run, if any.
    const own = sessionStorage.getItem("capgraph-run:" + id);
    runs = own ? [{ id: own, finished: status !== "running" }] : [];
  }
  const events = [];
  for (const r of runs) {
    if (!r.finished) continue;
    const evs = [];
    try {
      await follow(id, r.id, { onEvent: (ev) => evs.push(ev), signal: AbortSignal.timeout(5000) });
    } catch { break; }
    events.unshift(...evs);
    if (evs.some((e) => e.type === "task")) break; // the run that started the turn
  }
  return { events, live: runs.find((r) => !r.finished) };
}

// pollRunning watches a thread whose run this page cannot follow (a server
// without the run list, another tab's run) until the run ends.
async function pollRunning(id) {
  status("A run is in progress on this conversation…");
  setBusy(true);
  stopBtn.hidden = true;
  sendBtn.hidden = false;
  sendBtn.disabled = true;
  while (app.threadId === id) {
    await new Promise((r) => setTimeout(r, 1500));
    let th;
    try { th = await api(threadPath(id)); } catch { break; }
    if (th.status !== "running") break;
  }
  sendBtn.disabled = false;
  if (app.threadId === id) openThread(id);
}

async function followRun(id, turn, runId, after) {
  const ctrl = new AbortController();
  app.run = { thread: id, id: runId, ctrl };
  sessionStorage.setItem("capgraph-run:" + id, runId);
  setBusy(true);
  let result;
  try {
    result = await follow(id, runId, {
      after: after || 0, signal: ctrl.signal,
      onEvent: (ev) => {
        turn.handle(ev);
        const s = statusOf(ev);
        if (s) status(s);
        scrollDown();
      },
    });
  } catch (e) {
    if (e.name === "AbortError") return;
    if (!(e instanceof AuthError)) turn.note("Lost the run: " + e.message + ". Reload the page to see how it ended.");
  } finally {
    if (app.run && app.run.ctrl === ctrl) {
      app.run = null;
      setBusy(false);
      status("");
    }
  }
  if (!result) return;
  if (result.failure) turn.note("The run failed: " + result.failure);
  if (result.end && result.end.status === "canceled" && !turn.finished) turn.finish("canceled", Date.now());
  // The state has what the events do not carry: the context data each
  // step read and wrote, the approvals' decisions.
  try {
    const ts = await api(threadPath(id, "state"));
    if (app.threadId === id && ts.state && ts.state.turn && ts.state.turn.number) turn.fromState(ts.state, ts.status);
  } catch { /* the answer is shown already */ }
  loadThreads();
}

async function ask(text) {
  if (!text || app.run) return;
  $("#examples")?.remove();
  q.value = "";
  autosize();
  let id = app.threadId;
  const turn = addTurn(text);
  scrollDown();
  try {
    if (!id) {
      id = crypto.randomUUID();
      app.pendingTitle = text.length > 80 ? text.slice(0, 77) + "…" : text;
      await api("api/threads", { method: "POST", body: { id, metadata: { title: app.pendingTitle } } });
      app.threadId = id;
      app.opening = id;
      location.hash = "#/t/" + encodeURIComponent(id);
      renderThreads();
    }
    // A message while an approval is pending answers it (a clear yes or no)
    // or cancels it: the thread's state says which, once the run ends.
    const pending = chat.querySelector('[data-approval-id][data-state="pending"]');
    const r = await api(threadPath(id, "runs"), { method: "POST", body: { input: text, options: targetOptions() } });
    await followRun(id, turn, r.run.id, 0);
    if (pending && app.threadId === id && !app.run) await openThread(id);
  } catch (e) {
    turn.root.remove();
    q.value = text; // not sent: the question stays in the box, nothing is resent by itself
    autosize();
    if (!(e instanceof AuthError)) {
      const msg = e.status === 409 ? "A run is still in progress on this conversation: wait for it or stop it." : e.status === 429 ? "The server is busy: " + e.message : "Not sent: " + e.message;
      chat.appendChild(el("p", { class: "notice error", role: "alert", text: msg }));
    }
    if (!app.threadId) showExamples();
  }
}

app.answerApproval = async function (ap, approved, card) {
  if (app.run) return;
  const turnRoot = card.closest("article.turn");
  const turn = app.turns.get(turnRoot);
  setApprovalState(card, "answering");
  let r;
  try {
    r = await api(threadPath(app.threadId, "approval"), { method: "POST", body: { approval_id: ap.id, approved } });
  } catch (e) {
    if (e instanceof AuthError) { setApprovalState(card, "pending"); return; }
    // Answered elsewhere, expired, or the thread moved on: its state says.
    status(e.status === 409 ? "This approval is no longer pending: showing what became of it." : "Could not answer: " + e.message);
    return openThread(app.threadId);
  }
  setApprovalState(card, approved ? "approved" : "rejected", { by: app.info && app.info.principal, at: new Date().toISOString() });
  await followRun(app.threadId, turn, r.run.id, 0);
};

app.messageTools = function (m) {
  const copy = el("button", { type: "button", class: "icon-button copy", "aria-label": "Copy the answer" }, icon("copy"));
  const done = el("span", { class: "copied", role: "status" });
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(m.content);
    } catch {
      const ta = el("textarea", { class: "visually-hidden", "aria-hidden": "true" });
      ta.value = m.content;
      document.body.appendChild(ta);
      ta.select();
      document.execCommand("copy");
      ta.remove();
    }
    done.textContent = "Copied";
    setTimeout(() => { done.textContent = ""; }, 2000);
  });
  return el("div", { class: "tools" }, copy, done);
};

stopBtn.addEventListener("click", async () => {
  const r = app.run;
  if (!r) return;
  stopBtn.disabled = true;
  status("Stopping…");
  try {
    await api(threadPath(r.thread, "runs", r.id, "cancel"), { method: "POST" });
  } catch (e) {
    if (!(e instanceof AuthError)) status("Could not stop the run: " + e.message);
    stopBtn.disabled = false;
  }
});

// ---- the composer ----

// The skip link focuses the question box without touching the URL (which
// names the thread).
document.querySelector(".skip").addEventListener("click", (e) => {
  e.preventDefault();
  q.focus();
});

function autosize() {
  q.style.height = "auto";
  q.style.height = Math.min(q.scrollHeight, 200) + "px";
}
q.addEventListener("input", autosize);
q.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("#form").requestSubmit();
  }
});
$("#form").addEventListener("submit", (e) => {
  e.preventDefault();
  ask(q.value.trim());
});

// ---- routing: the URL names the thread ----

function route() {
  if (location.hash && !location.hash.startsWith("#/")) return; // an anchor on the page, not a route
  const m = /^#\/t\/(.+)$/.exec(location.hash);
  const id = m ? decodeURIComponent(m[1]) : null;
  if (id && id === app.opening) { app.opening = null; return; } // the page named it itself
  if (id) openThread(id); else newChat();
}
window.addEventListener("hashchange", route);

// start (again, after a key is entered) loads who we are, the threads, and
// the conversation the URL names.
let starting = null, startedKey = null;
async function start() {
  // One start at a time: a key entered once (its change event and the
  // button both fire) starts once; a different key starts again after.
  if (starting) {
    await starting;
    if (keyEl.value === startedKey) return;
  }
  startedKey = keyEl.value;
  starting = startOnce();
  try { await starting; } finally { starting = null; }
}

async function startOnce() {
  keyMessage.textContent = "";
  keybar.classList.remove("needed");
  try {
    app.info = await api("api/info");
  } catch (e) {
    if (!(e instanceof AuthError)) status("The server could not be reached: " + e.message);
    return;
  }
  toggle($("#key-toggle"), keybar, false);
  showWrites(app.info);
  showTargets();
  await loadThreads();
  loadEvaluations();
  route();
}

// loadEvaluations lists the last evaluation runs recorded in the store
// (capgraph eval --record) under the conversations: when, which suite,
// passed or not, and the cases that failed. Hidden when there are none.
async function loadEvaluations() {
  let page;
  try { page = await api("api/evaluations?limit=10"); } catch { return; }
  const runs = page.evaluations || [];
  const box = $("#evaluations");
  box.hidden = runs.length === 0;
  $("#evaluation-list").replaceChildren(...runs.map((r) => el("li", { class: "evaluation", dataset: { passed: String(!!r.passed) } },
    el("span", { class: "badge " + (r.passed ? "passed" : "failed") }, icon(r.passed ? "check" : "cross"), r.passed ? " passed" : " failed"),
    " ", el("strong", { text: r.suite || "(unnamed)" }),
    el("span", { class: "thread-meta" }, el("time", { datetime: r.started, text: stamp(r.started) }),
      el("span", { text: r.cases + " cases, " + r.runs + " runs" + (r.errors ? ", " + r.errors + " errors" : "") })),
    r.failed && r.failed.length ? el("span", { class: "evaluation-failed", text: "failed: " + r.failed.join(", ") }) : null)));
}

setInterval(() => { if (document.visibilityState === "visible" && app.info && !threadList.querySelector(".rename-input")) loadThreads(); }, 30000);
if (matchMedia("(min-width: 800px)").matches) toggle($("#threads-toggle"), null, true);

// loadPage applies the application's identity and clock (page.json, served
// without a key: its name and logo, the zone the page's times are in).
async function loadPage() {
  try {
    const r = await fetch("page.json");
    if (r.ok) {
      const p = await r.json();
      if (p.time_zone) setZone(p.time_zone);
      if (p.name) { document.title = p.name; $("#app-name").textContent = p.name; }
      if (p.logo) $("#app-logo").src = p.logo;
    }
  } catch { /* the defaults: capgraph, UTC */ }
  $("#zone").replaceChildren(icon("clock"), " " + timeZone());
}
loadPage().finally(start);
