// Node client tests of the capgraph server, run by server/node_test.go
// (TestNodeClients), which starts the server over a scripted agent and
// passes its URL and key in CAPGRAPH_URL and CAPGRAPH_KEY.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { VERSION as openaiVersion } from "openai/version";
import { HttpAgent } from "@ag-ui/client";

const url = process.env.CAPGRAPH_URL;
const key = process.env.CAPGRAPH_KEY;
assert.ok(url && key, "CAPGRAPH_URL and CAPGRAPH_KEY must be set (run through go test)");

const client = (apiKey = key) => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });

test("openai 6.x: models", async () => {
  assert.match(openaiVersion, /^6\./);
  const page = await client().models.list();
  assert.deepEqual(page.data.map((m) => m.id), ["capgraph"]);
});

test("openai: non-stream", async () => {
  const r = await client().chat.completions.create({
    model: "capgraph",
    messages: [{ role: "user", content: "What is the beam current?" }],
    temperature: 1, top_p: 1, user: "someone",
  });
  assert.equal(r.choices[0].message.content, "Beam current is 500 mA.");
  assert.equal(r.choices[0].finish_reason, "stop");
  assert.equal(r.usage.total_tokens, 14);
});

test("openai: stream with reasoning, status frames and usage", async () => {
  const stream = await client().chat.completions.create({
    model: "capgraph", stream: true, stream_options: { include_usage: true },
    messages: [{ role: "user", content: [{ type: "text", text: "What is the beam current?" }] }],
  });
  let content = "", reasoning = "", usage = null, finish = null, statuses = 0;
  for await (const chunk of stream) {
    if (chunk.event) statuses++;
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices?.[0];
    if (!c) continue;
    content += c.delta?.content ?? "";
    reasoning += c.delta?.reasoning_content ?? "";
    finish = c.finish_reason ?? finish;
  }
  assert.equal(content, "Beam current is 500 mA.");
  assert.equal(finish, "stop");
  assert.equal(usage.total_tokens, 14);
  assert.match(reasoning, /Plan:\n1\. channel_read/);
  assert.ok(statuses > 0);
});

test("openai: error classes", async () => {
  await assert.rejects(client("sk-wrong").models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  await assert.rejects(
    client().chat.completions.create({ model: "nope", messages: [{ role: "user", content: "hi" }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.code === "model_not_found");
  await assert.rejects(async () => {
    const s = await client().chat.completions.create({ model: "capgraph", stream: true, messages: [{ role: "user", content: "fail" }] });
    for await (const _ of s) { /* drain */ }
  }, (e) => e instanceof OpenAI.APIError && /internal server error \(reference [0-9a-f]{8}/.test(e.message) && !/unreachable/.test(e.message));
});

function agent(threadId) {
  return new HttpAgent({ url: `${url}/agui`, threadId, headers: { Authorization: `Bearer ${key}` } });
}

test("ag-ui: a run with plan state, tool calls and the answer", async () => {
  const a = agent("node-read");
  a.addMessage({ id: "u1", role: "user", content: "What is the beam current?" });
  const seen = [];
  await a.runAgent({ runId: "r1" }, {
    onEvent: ({ event }) => { seen.push(event.type); },
    onRunFinishedEvent: ({ outcome }) => { assert.equal(outcome, "success"); },
  });
  assert.equal(seen[0], "RUN_STARTED");
  assert.equal(seen.at(-1), "RUN_FINISHED");
  for (const t of ["STATE_SNAPSHOT", "STATE_DELTA", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_STARTED", "STEP_FINISHED"]) {
    assert.ok(seen.includes(t), `missing ${t} in ${seen.join(",")}`);
  }
  const last = a.messages.filter((m) => m.role === "assistant" && m.content).at(-1);
  assert.equal(last.content, "Beam current is 500 mA.");
  assert.deepEqual(a.state.plan.map((s) => s.status), ["done", "done"]);
  assert.deepEqual(a.pendingInterrupts, []);
});

test("ag-ui: approval interrupt, then resume", async () => {
  const a = agent("node-write");
  a.addMessage({ id: "u1", role: "user", content: "write 1.5 A to SR:HCM1" });
  let outcome;
  await a.runAgent({ runId: "r1" }, { onRunFinishedEvent: (e) => { outcome = e; } });
  assert.equal(outcome.outcome, "interrupt");
  assert.equal(a.pendingInterrupts.length, 1);
  const intr = a.pendingInterrupts[0];
  assert.equal(intr.id, "approval-1");
  assert.match(intr.message, /SR:HCM1/);
  assert.equal(a.state.pendingApproval.id, "approval-1");

  await a.runAgent({ runId: "r2", resume: [{ interruptId: intr.id, status: "resolved", payload: { approved: true } }] },
    { onRunFinishedEvent: (e) => { outcome = e; } });
  assert.equal(outcome.outcome, "success");
  assert.deepEqual(a.pendingInterrupts, []);
  const last = a.messages.filter((m) => m.role === "assistant" && m.content).at(-1);
  assert.equal(last.content, "SR:HCM1 is now 1.5 A.");
  assert.equal(a.state.plan[1].status, "done");
  assert.equal(a.state.pendingApproval, undefined);
});

test("ag-ui: a stale resume is refused with RUN_ERROR", async () => {
  const a = agent("node-stale");
  a.addMessage({ id: "u1", role: "user", content: "What is the beam current?" });
  await a.runAgent({ runId: "r1" });
  let err;
  await a.runAgent({ runId: "r2", resume: [{ interruptId: "approval-1", status: "resolved", payload: { approved: true } }] },
    { onRunErrorEvent: ({ event }) => { err = event; } }).catch(() => {});
  assert.equal(err?.code, "invalid_resume");
});

test("ag-ui: a fatal failure is RUN_ERROR", async () => {
  const a = agent("node-fail");
  a.addMessage({ id: "u1", role: "user", content: "fail" });
  let err;
  await a.runAgent({ runId: "r1" }, { onRunErrorEvent: ({ event }) => { err = event; } }).catch(() => {});
  assert.equal(err?.code, "run_failed");
  // A server fault: a reference to the log, never the Go error.
  assert.match(err.message, /internal server error \(reference [0-9a-f]{8}/);
  assert.doesNotMatch(err.message, /unreachable/);
});
