// The AG-UI shared state and the native plan agree at the end of every run
// (@ag-ui/client over a real agent): a read, an approved and a rejected
// write, a failure and a retried step. Run by server/aguiplan_node_test.go
// (TestNodeAGUIPlanAgrees) with CAPGRAPH_URL and CAPGRAPH_KEY set.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HttpAgent } from "@ag-ui/client";

const url = process.env.CAPGRAPH_URL;
const key = process.env.CAPGRAPH_KEY;
assert.ok(url && key, "CAPGRAPH_URL and CAPGRAPH_KEY must be set (run through go test)");

const agent = (threadId) => new HttpAgent({ url: `${url}/agui`, threadId, headers: { Authorization: `Bearer ${key}` } });

// nativePlan is GET /api/threads/{id}/plan as [capability, status] pairs.
async function nativePlan(threadId) {
  const r = await fetch(`${url}/api/threads/${encodeURIComponent(threadId)}/plan`, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(r.status, 200);
  const body = await r.json();
  return body.plan.steps.map((s) => [s.capability, s.status]);
}

// agree asserts the client's state is the native plan, step by step.
async function agree(a) {
  const native = await nativePlan(a.threadId);
  assert.deepEqual(a.state.plan.map((s) => [s.capability, s.status]), native);
  return native;
}

async function run(a, input, resume) {
  let outcome;
  if (input) a.addMessage({ id: `u${a.messages.length}`, role: "user", content: input });
  await a.runAgent({ runId: `r${a.messages.length}-${Date.now()}`, resume }, { onRunFinishedEvent: (e) => { outcome = e.outcome; } });
  return outcome;
}

test("a read: every step, respond too, is done in the shared state", async () => {
  const a = agent("plan-read");
  assert.equal(await run(a, "What is the beam current?"), "success");
  const plan = await agree(a);
  assert.equal(plan.at(-1)[0], "respond");
  assert.ok(plan.every(([, st]) => st === "done"), JSON.stringify(plan));
});

test("an approved write: pending at the interrupt, done after the resume", async () => {
  const a = agent("plan-approve");
  assert.equal(await run(a, "Set the Q1 current to 105 A"), "interrupt");
  const waiting = await agree(a);
  assert.ok(waiting.some(([, st]) => st === "pending"), JSON.stringify(waiting));
  const intr = a.pendingInterrupts[0];
  assert.equal(await run(a, null, [{ interruptId: intr.id, status: "resolved", payload: { approved: true } }]), "success");
  const plan = await agree(a);
  assert.ok(plan.every(([, st]) => st === "done"), JSON.stringify(plan));
});

// After a rejection or a failure the turn ends without running respond:
// the native plan closes it as skipped, and so does the shared state.
test("a rejected write: rejected in the shared state as in the native plan", async () => {
  const a = agent("plan-reject");
  assert.equal(await run(a, "Set the Q1 current to 106 A"), "interrupt");
  await agree(a);
  const intr = a.pendingInterrupts[0];
  assert.equal(await run(a, null, [{ interruptId: intr.id, status: "resolved", payload: { approved: false } }]), "success");
  const plan = await agree(a);
  assert.ok(plan.some(([, st]) => st === "rejected"), JSON.stringify(plan));
  assert.ok(plan.every(([, st]) => st !== "running" && st !== "pending"), JSON.stringify(plan));
  assert.ok(plan.some(([, st]) => st === "skipped"), JSON.stringify(plan));
});

test("a failed step: failed in the shared state as in the native plan", async () => {
  const a = agent("plan-fail");
  await run(a, "what is the vacuum gauge pressure?");
  const plan = await agree(a);
  assert.ok(plan.some(([, st]) => st === "failed"), JSON.stringify(plan));
  assert.ok(plan.every(([, st]) => st !== "running" && st !== "pending"), JSON.stringify(plan));
});

test("a retried step: done once it succeeds", async () => {
  const a = agent("plan-retry");
  assert.equal(await run(a, "how did the beam lifetime change in the last hour?"), "success");
  const plan = await agree(a);
  assert.ok(plan.every(([, st]) => st === "done"), JSON.stringify(plan));
});
