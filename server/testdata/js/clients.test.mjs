// Node client tests of the capgraph server, run by server/node_test.go
// (TestNodeClients), which starts the server over a scripted agent and
// passes its URL and key in CAPGRAPH_URL and CAPGRAPH_KEY.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { VERSION as openaiVersion } from "openai/version";
import { HttpAgent } from "@ag-ui/client";
import { generateText, streamText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createOpenAI } from "@ai-sdk/openai";

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
  // Status frames only for Open WebUI (server.status_frames: auto): this
  // request says it is one through its forwarded-user header.
  const stream = await client().chat.completions.create({
    model: "capgraph", stream: true, stream_options: { include_usage: true },
    messages: [{ role: "user", content: [{ type: "text", text: "What is the beam current?" }] }],
  }, { headers: { "X-OpenWebUI-User-Id": "u-1" } });
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
  }, (e) => e instanceof OpenAI.APIError && /checkpoint store is unreachable/.test(e.message));
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
  assert.match(err.message, /checkpoint store is unreachable/);
});

test("openai: a plain SDK stream carries no status frames", async () => {
  const stream = await client().chat.completions.create({
    model: "capgraph", stream: true, messages: [{ role: "user", content: "What is the beam current?" }],
  });
  let content = "", statuses = 0, noChoices = 0;
  for await (const chunk of stream) {
    if (chunk.event) statuses++;
    if (!chunk.choices?.length) noChoices++;
    content += chunk.choices?.[0]?.delta?.content ?? "";
  }
  assert.equal(content, "Beam current is 500 mA.");
  assert.equal(statuses, 0);
  assert.equal(noChoices, 0);
});

// ---- Vercel AI SDK (ai 6): Chat Completions through @ai-sdk/openai-compatible 2

const compatible = (headers) => createOpenAICompatible({ name: "capgraph", baseURL: `${url}/v1`, apiKey: key, includeUsage: true, headers });

// streamAI streams one prompt and collects the text, the error parts and
// the onError calls.
async function streamAI(model, args) {
  const errors = [], onError = [];
  const r = streamText({ model, maxRetries: 0, onError: ({ error }) => onError.push(error), ...args });
  let text = "";
  for await (const part of r.fullStream) {
    if (part.type === "text-delta") text += part.text;
    if (part.type === "error") errors.push(part.error);
  }
  return { r, text, errors, onError };
}

test("ai-sdk openai-compatible: stream with 0 error parts, the answer intact", async () => {
  const { r, text, errors, onError } = await streamAI(compatible()("capgraph"), { prompt: "What is the beam current?" });
  assert.equal(errors.length, 0, `error parts: ${errors.map(String).join("; ")}`);
  assert.equal(onError.length, 0);
  assert.equal(text, "Beam current is 500 mA.");
  assert.equal(await r.finishReason, "stop");
  assert.equal((await r.totalUsage).totalTokens, 14);
  assert.match(await r.reasoningText, /Plan:\n1\. channel_read/);
});

test("ai-sdk openai-compatible: the status frames are what broke it (forced by an Open WebUI header)", async () => {
  // Without auto-detection every status frame became an error part; this
  // keeps the test above honest: it would see them.
  const { text, errors } = await streamAI(compatible({ "X-OpenWebUI-User-Id": "u-1" })("capgraph"), { prompt: "What is the beam current?" });
  assert.ok(errors.length > 0, "status frames pass the AI SDK's chunk schema now; revisit server.status_frames auto");
  assert.equal(text, "Beam current is 500 mA.");
});

test("ai-sdk openai-compatible: non-stream", async () => {
  const r = await generateText({ model: compatible()("capgraph"), prompt: "What is the beam current?", maxRetries: 0 });
  assert.equal(r.text, "Beam current is 500 mA.");
  assert.equal(r.finishReason, "stop");
  assert.equal(r.usage.totalTokens, 14);
});

test("ai-sdk openai-compatible: an approval round trip", async () => {
  const model = compatible()("capgraph");
  const ask = await generateText({ model, prompt: "write 1.5 A to SR:HCM1", maxRetries: 0 });
  assert.match(ask.text, /SR:HCM1/);
  assert.match(ask.text, /Approval ID: AP-[A-Z2-7]{8}/);
  const messages = [{ role: "user", content: "write 1.5 A to SR:HCM1" }, ...ask.response.messages, { role: "user", content: "yes" }];
  const done = await streamAI(model, { messages });
  assert.equal(done.errors.length, 0);
  assert.equal(done.text, "SR:HCM1 is now 1.5 A.");
});

// ---- The Responses API: npm openai and the AI SDK's default openai(model)

test("openai: responses, non-stream and stream, continued by previous_response_id", async () => {
  const c = client();
  const r = await c.responses.create({ model: "capgraph", input: "What is the beam current?", instructions: "Be brief." });
  assert.equal(r.status, "completed");
  assert.equal(r.output_text, "Beam current is 500 mA.");
  assert.equal(r.usage.total_tokens, 14);
  assert.equal((await c.responses.retrieve(r.id)).output_text, r.output_text);

  const ask = await c.responses.create({ model: "capgraph", input: "write 1.5 A to SR:HCM1" });
  assert.match(ask.output_text, /Approval ID: AP-/);
  const stream = await c.responses.create({ model: "capgraph", input: "yes", previous_response_id: ask.id, stream: true });
  const types = [];
  let deltas = "", final;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === "response.output_text.delta") deltas += ev.delta;
    if (ev.type === "response.completed") final = ev.response;
  }
  assert.equal(deltas, "SR:HCM1 is now 1.5 A.");
  assert.equal(types[0], "response.created");
  assert.equal(types.at(-1), "response.completed");
  assert.equal(final.previous_response_id, ask.id);
  await assert.rejects(c.responses.create({ model: "capgraph", input: "hi", tools: [{ type: "function", name: "f", parameters: {} }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "tools");
  await assert.rejects(c.responses.create({ model: "capgraph", input: "hi", previous_response_id: "resp_00_00" }),
    (e) => e instanceof OpenAI.NotFoundError);
});

// sent records the request bodies the AI SDK sends.
const sent = [];
const recordingFetch = async (input, init) => {
  if (init?.body) sent.push(JSON.parse(init.body));
  return fetch(input, init);
};
const responsesProvider = () => createOpenAI({ baseURL: `${url}/v1`, apiKey: key, fetch: recordingFetch });

test("ai-sdk openai(model): the Responses API, stream and non-stream", async () => {
  const openai = responsesProvider();
  const r = await generateText({ model: openai("capgraph"), prompt: "What is the beam current?", maxRetries: 0 });
  assert.equal(r.text, "Beam current is 500 mA.");
  assert.equal(r.finishReason, "stop");
  assert.equal(r.usage.totalTokens, 14);
  const s = await streamAI(openai("capgraph"), { prompt: "What is the beam current?" });
  assert.equal(s.errors.length, 0, `error parts: ${s.errors.map(String).join("; ")}`);
  assert.equal(s.onError.length, 0);
  assert.equal(s.text, "Beam current is 500 mA.");
  assert.equal(await s.r.finishReason, "stop");
});

test("ai-sdk openai(model): an approval round trip over the Responses API", async () => {
  const openai = responsesProvider();
  const ask = await generateText({ model: openai("capgraph"), prompt: "write 1.5 A to SR:HCM1", maxRetries: 0 });
  assert.match(ask.text, /Approval ID: AP-/);
  // The SDK sends our reply back as an item_reference to its message id.
  const messages = [{ role: "user", content: "write 1.5 A to SR:HCM1" }, ...ask.response.messages, { role: "user", content: "yes" }];
  const done = await streamAI(openai("capgraph"), { messages });
  assert.equal(done.errors.length, 0, `error parts: ${done.errors.map(String).join("; ")}`);
  assert.equal(done.text, "SR:HCM1 is now 1.5 A.");
  const refs = sent.at(-1).input.filter((it) => it.type === "item_reference");
  assert.equal(refs.length, 1);
  assert.match(refs[0].id, /^msg_/);
  // And by previous_response_id.
  const ask2 = await generateText({ model: openai("capgraph"), prompt: "write 1.5 A to SR:HCM1", maxRetries: 0 });
  const done2 = await generateText({ model: openai("capgraph"), prompt: "yes", maxRetries: 0,
    providerOptions: { openai: { previousResponseId: ask2.providerMetadata.openai.responseId } } });
  assert.equal(done2.text, "SR:HCM1 is now 1.5 A.");
});

test("ai-sdk openai(model): a refused option is a clear error, not retried", async () => {
  const openai = responsesProvider();
  await assert.rejects(generateText({ model: openai("capgraph"), prompt: "hi", maxRetries: 0,
    providerOptions: { openai: { store: false } } }), (e) => /store/.test(e.message) && e.statusCode === 400);
});
