// Safety tests with real clients, run by server/node_test.go
// (TestNodeClientsSafety) against a real agent whose configuration has
// writes disabled and selective approval: a request may only tighten it.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { HttpAgent } from "@ag-ui/client";

const url = process.env.CAPGRAPH_URL;
const key = process.env.CAPGRAPH_KEY;
assert.ok(url && key, "CAPGRAPH_URL and CAPGRAPH_KEY must be set (run through go test)");

const client = () => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
const set = "Set the Q1 current to 105 A";

test("openai: a model profile that loosens is PermissionDenied (403) naming the setting", async () => {
  for (const [model, setting] of [["capgraph-writes", "writes_enabled"], ["capgraph-no-approval", "approval_mode"]]) {
    await assert.rejects(
      client().chat.completions.create({ model, messages: [{ role: "user", content: set }] }),
      (e) => e instanceof OpenAI.PermissionDeniedError && e.status === 403 && e.code === "option_not_allowed" &&
        e.param === "model" && e.message.includes(setting));
    await assert.rejects(async () => {
      const s = await client().chat.completions.create({ model, stream: true, messages: [{ role: "user", content: set }] });
      for await (const _ of s) { /* drain */ }
    }, (e) => e instanceof OpenAI.PermissionDeniedError && e.message.includes(setting));
  }
});

test("openai: a tightening profile runs", async () => {
  const r = await client().chat.completions.create({ model: "capgraph-strict", messages: [{ role: "user", content: "What is the beam current?" }] });
  assert.match(r.choices[0].message.content, /AP-[A-Z2-7]{8}/); // all_capabilities: even the read asks first
});

test("ag-ui: loosening forwardedProps options are refused with 403", async () => {
  for (const [options, setting] of [[{ writes_enabled: true }, "writes_enabled"], [{ skip_classification: true }, "skip_classification"]]) {
    const a = new HttpAgent({ url: `${url}/agui`, threadId: `agui-${setting}`, headers: { Authorization: `Bearer ${key}` } });
    a.addMessage({ id: "u1", role: "user", content: set });
    let started = false;
    await assert.rejects(
      a.runAgent({ runId: "r1", forwardedProps: { options } }, { onRunStartedEvent: () => { started = true; } }),
      (e) => e?.status === 403 && e.payload?.error?.code === "option_not_allowed" && e.payload.error.message.includes(setting));
    assert.equal(started, false);
  }
});

test("native: loosening options are 403 in the OpenAI error shape", async () => {
  const h = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
  await fetch(`${url}/api/threads`, { method: "POST", headers: h, body: JSON.stringify({ id: "native-w" }) });
  const r = await fetch(`${url}/api/threads/native-w/runs`, { method: "POST", headers: h,
    body: JSON.stringify({ input: set, options: { writes_enabled: true, approval_mode: "disabled" } }) });
  assert.equal(r.status, 403);
  const body = await r.json();
  assert.equal(body.error.code, "option_not_allowed");
  assert.equal(body.error.param, "options.writes_enabled");
});
