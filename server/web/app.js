// The built-in capgraph page: a chat over AG-UI (POST /agui, SSE), with the
// plan (STATE_SNAPSHOT/STATE_DELTA), steps (TOOL_CALL_*) and approvals
// (RUN_FINISHED with an interrupt outcome, answered through "resume").
// Plain JS, no build step. Stable hooks for tests: #q, #send, #status,
// .assistant[data-done="1"], [data-approval-id], #examples .example.
"use strict";

const $ = (s) => document.querySelector(s);
const chat = $("#chat"), planEl = $("#plan"), stepsEl = $("#steps"), statusEl = $("#status");
const keyEl = $("#key"), rememberEl = $("#remember");

// The API key stays in this tab (sessionStorage: gone when the tab
// closes) unless the user ticks "Remember on this device"; only then is it
// in localStorage. Unticking removes it from there.
const KEY = "capgraph-key";
const remembered = localStorage.getItem(KEY);
keyEl.value = remembered || sessionStorage.getItem(KEY) || "";
rememberEl.checked = remembered !== null;
function storeKey() {
  const [keep, drop] = rememberEl.checked ? [localStorage, sessionStorage] : [sessionStorage, localStorage];
  drop.removeItem(KEY);
  if (keyEl.value) keep.setItem(KEY, keyEl.value); else keep.removeItem(KEY);
}
keyEl.addEventListener("change", storeKey);
rememberEl.addEventListener("change", storeKey);

let threadId = newId();
let messages = [];
let state = {};
let busy = false;

function newId() {
  return (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random().toString(16).slice(2));
}

function add(cls, text) {
  const d = document.createElement("div");
  d.className = "msg " + cls;
  d.textContent = text;
  chat.appendChild(d);
  chat.scrollTop = chat.scrollHeight;
  return d;
}

function renderPlan() {
  planEl.textContent = "";
  for (const s of (state.plan || [])) {
    const li = document.createElement("li");
    li.dataset.status = s.status;
    li.textContent = s.capability + (s.objective ? " — " + s.objective : "");
    planEl.appendChild(li);
  }
}

// applyPatch applies the JSON Patch operations the server sends (replace,
// add, remove on object/array paths).
function applyPatch(doc, ops) {
  for (const op of ops) {
    const parts = op.path.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
    const last = parts.pop();
    let target = doc;
    for (const p of parts) target = target[p];
    if (op.op === "remove") {
      Array.isArray(target) ? target.splice(Number(last), 1) : delete target[last];
    } else if (op.op === "add" && Array.isArray(target)) {
      last === "-" ? target.push(op.value) : target.splice(Number(last), 0, op.value);
    } else {
      target[last] = op.value;
    }
  }
  return doc;
}

async function run(input) {
  busy = true;
  $("#send").disabled = true;
  const body = { threadId, runId: newId(), state, messages, tools: [], context: [], ...input };
  const headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
  if (keyEl.value) headers.Authorization = "Bearer " + keyEl.value;
  let answer = null, finished = false;
  try {
    const res = await fetch("agui", { method: "POST", headers, body: JSON.stringify(body) });
    if (!res.ok) {
      let msg = res.status + " " + res.statusText;
      try { msg = (await res.json()).error.message; } catch (e) { /* not JSON */ }
      add("error", res.status === 401 ? "Enter a valid API key above. (" + msg + ")" : msg);
      return;
    }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        for (const line of frame.split("\n")) {
          if (!line.startsWith("data:")) continue;
          const ev = JSON.parse(line.slice(5));
          const r = handle(ev, answer);
          if (r && r.answer !== undefined) answer = r.answer;
          if (ev.type === "RUN_FINISHED" || ev.type === "RUN_ERROR") finished = true;
        }
      }
    }
  } catch (e) {
    add("error", "Connection failed: " + e.message);
  } finally {
    if (!finished) add("error", "The stream ended early.");
    if (answer) answer.dataset.done = "1";
    busy = false;
    $("#send").disabled = false;
  }
}

function handle(ev, answer) {
  switch (ev.type) {
    case "RUN_STARTED":
      stepsEl.textContent = "";
      break;
    case "STEP_STARTED":
      statusEl.textContent = ev.stepName + "…";
      break;
    case "CUSTOM":
      if (ev.name === "status") statusEl.textContent = ev.value.text;
      if (ev.name === "retry") statusEl.textContent = "Retrying " + retryWhat(ev.value) + " (attempt " + ev.value.attempt + " of " + ev.value.max + " failed: " + ev.value.reason + ")";
      if (ev.name === "answer_reset") {
        // A failed attempt's partial answer is void: remove it.
        const stale = document.querySelector('[data-message-id="' + ev.value.messageId + '"]');
        if (stale) stale.remove();
        messages = messages.filter((m) => m.id !== ev.value.messageId);
        return { answer: null };
      }
      break;
    case "STATE_SNAPSHOT":
      state = ev.snapshot || {};
      renderPlan();
      break;
    case "STATE_DELTA":
      state = applyPatch(state, ev.delta);
      renderPlan();
      break;
    case "TOOL_CALL_START": {
      const li = document.createElement("li");
      li.id = "call-" + ev.toolCallId;
      li.textContent = "▶ " + ev.toolCallName;
      stepsEl.appendChild(li);
      break;
    }
    case "TOOL_CALL_RESULT": {
      const li = document.getElementById("call-" + ev.toolCallId);
      if (li) {
        li.textContent = li.textContent.replace("▶", ev.content.startsWith("failed") ? "✖" : "✔") + " — " + ev.content;
        if (ev.content.startsWith("failed")) li.className = "failed";
      }
      break;
    }
    case "TEXT_MESSAGE_START": {
      const d = add("assistant", "");
      d.dataset.messageId = ev.messageId;
      return { answer: d };
    }
    case "TEXT_MESSAGE_CONTENT":
      if (answer) answer.textContent += ev.delta;
      chat.scrollTop = chat.scrollHeight;
      break;
    case "TEXT_MESSAGE_END":
      if (answer) {
        messages.push({ id: ev.messageId, role: "assistant", content: answer.textContent });
        answer.dataset.done = "1";
      }
      break;
    case "RUN_FINISHED":
      statusEl.textContent = "";
      if (ev.outcome && ev.outcome.type === "interrupt") {
        for (const it of ev.outcome.interrupts) showApproval(it);
        return { answer: answer };
      }
      break;
    case "RUN_ERROR":
      statusEl.textContent = "";
      add("error", "The run failed: " + ev.message);
      break;
  }
  return null;
}

// retryWhat names what a retry event retries: the plan step and its
// capability, or the infrastructure node.
function retryWhat(r) {
  return r.capability && r.step >= 0 ? "step " + (r.step + 1) + " (" + r.capability + ")" : r.node;
}

function showApproval(it) {
  const d = add("assistant approval", (it.message || "Approval needed.") + "\n");
  d.dataset.approvalId = it.id;
  d.dataset.done = "1";
  for (const [label, approved] of [["Approve", true], ["Reject", false]]) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.className = approved ? "approve" : "reject";
    b.addEventListener("click", () => {
      if (busy) return;
      d.querySelectorAll("button").forEach((x) => (x.disabled = true));
      d.dataset.answered = approved ? "approved" : "rejected";
      run({ resume: [{ interruptId: it.id, status: "resolved", payload: { approved } }] });
    });
    d.appendChild(b);
  }
}

function ask(q) {
  if (!q || busy) return;
  $("#q").value = "";
  $("#examples")?.remove();
  add("user", q);
  messages.push({ id: newId(), role: "user", content: q });
  run({});
}

$("#form").addEventListener("submit", (e) => {
  e.preventDefault();
  ask($("#q").value.trim());
});

// showExamples offers the server's demo questions on an empty chat.
async function showExamples() {
  if (chat.childElementCount > 0) return;
  const headers = keyEl.value ? { Authorization: "Bearer " + keyEl.value } : {};
  let examples = [];
  try {
    const res = await fetch("api/info", { headers });
    if (res.ok) examples = (await res.json()).examples || [];
  } catch (e) { /* the page works without suggestions */ }
  if (examples.length === 0 || chat.childElementCount > 0) return;
  const box = document.createElement("div");
  box.id = "examples";
  box.textContent = "Try:";
  for (const q of examples) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "example";
    b.textContent = q;
    b.addEventListener("click", () => ask(q));
    box.appendChild(b);
  }
  chat.appendChild(box);
}
keyEl.addEventListener("change", showExamples);
showExamples();

$("#new").addEventListener("click", () => {
  threadId = newId();
  messages = [];
  state = {};
  chat.textContent = "";
  planEl.textContent = "";
  stepsEl.textContent = "";
  showExamples();
});
