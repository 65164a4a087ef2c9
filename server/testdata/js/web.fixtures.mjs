// Fixture run events for the page's chart test: the events the control-room
// example's history question produces, with the artifacts in the shape
// docs/frontends.md ("Artifacts") defines — a time series of four RF cavity
// voltages, 120 archived samples each, and a table of their last values.

export const HISTORY_CHANNELS = ["SR:RF:CAV1:VOLT", "SR:RF:CAV2:VOLT", "SR:RF:CAV3:VOLT", "SR:RF:CAV4:VOLT"];
export const HISTORY_POINTS = 120;

export function historyEvents() {
  const t0 = Date.now() - 2000;
  let seq = 0;
  const at = (ms) => new Date(t0 + ms).toISOString();
  const frames = [];
  const ev = (ms, e) => {
    seq++;
    frames.push(`id: ${seq}\nevent: ${e.type}\ndata: ${JSON.stringify({ thread: "fixture", run_id: "run-fixture", time: at(ms), seq, ...e })}\n\n`);
  };
  const q = "Show me the RF cavity voltage over the last 2 hours";
  const plan = { number: 1, steps: [
    { context_key: "channel_finding_1", capability: "channel_finding", task_objective: "Find the control-system channel names for: " + q, status: "pending" },
    { context_key: "archiver_retrieval_1", capability: "archiver_retrieval", task_objective: q, status: "pending", depends_on: [0], inputs: [{ type: "CHANNEL_ADDRESSES", key: "channel_finding_1" }] },
    { context_key: "user_response", capability: "respond", task_objective: "Answer the user: " + q, status: "pending", depends_on: [0, 1] },
  ] };
  ev(0, { type: "run_start" });
  ev(1, { type: "node_start", node: "task_extraction" });
  ev(2, { type: "task", node: "task_extraction", text: q });
  ev(3, { type: "node_end", node: "task_extraction", duration: 2e6 });
  ev(4, { type: "node_start", node: "classifier" });
  ev(5, { type: "capabilities", node: "classifier", capabilities: ["channel_finding", "archiver_retrieval"] });
  ev(6, { type: "node_end", node: "classifier", duration: 2e6 });
  ev(7, { type: "node_start", node: "orchestrator" });
  ev(8, { type: "plan", node: "orchestrator", plan, total: 3 });
  ev(9, { type: "node_end", node: "orchestrator", duration: 2e6 });
  ev(10, { type: "node_start", node: "channel_finding" });
  ev(11, { type: "step_start", node: "channel_finding", capability: "channel_finding", total: 3, attempt: 1, text: plan.steps[0].task_objective });
  ev(15, { type: "step_end", node: "channel_finding", capability: "channel_finding", total: 3, attempt: 1, duration: 4e6 });
  ev(16, { type: "node_end", node: "channel_finding", duration: 6e6 });
  ev(17, { type: "node_start", node: "archiver_retrieval" });
  ev(18, { type: "step_start", node: "archiver_retrieval", step: 1, capability: "archiver_retrieval", total: 3, attempt: 1, text: q });
  const end = Date.now() - 5 * 60000;
  const series = HISTORY_CHANNELS.map((name, c) => {
    const times_ms = [], values = [];
    for (let i = 0; i < HISTORY_POINTS; i++) {
      times_ms.push(end - (HISTORY_POINTS - 1 - i) * 60000);
      values.push(Math.round((600 + c * 1.5 + Math.sin(i / 9 + c) * 1.2) * 10) / 10);
    }
    return { name, units: "kV", times_ms, values };
  });
  ev(40, { type: "artifact", node: "archiver_retrieval", step: 1, capability: "archiver_retrieval", artifact: {
    id: "t1.p1.s1.0", kind: "timeseries", title: "RF cavity voltages, last 2 hours", turn: 1, step: 1, capability: "archiver_retrieval", timeseries: { series } } });
  ev(41, { type: "artifact", node: "archiver_retrieval", step: 1, capability: "archiver_retrieval", artifact: {
    id: "t1.p1.s1.1", kind: "table", title: "Last archived values", turn: 1, step: 1, capability: "archiver_retrieval",
    table: { columns: [{ name: "Channel" }, { name: "Value", units: "kV" }, { name: "Time" }],
      rows: series.map((s) => [s.name, s.values[s.values.length - 1], new Date(s.times_ms[s.times_ms.length - 1]).toISOString()]) } } });
  ev(42, { type: "step_end", node: "archiver_retrieval", step: 1, capability: "archiver_retrieval", total: 3, attempt: 1, duration: 24e6 });
  ev(43, { type: "node_end", node: "archiver_retrieval", duration: 26e6 });
  ev(44, { type: "node_start", node: "respond" });
  const answer = "The four RF cavity voltages stayed between 598.8 and 605.7 kV over the last 2 hours.";
  ev(45, { type: "token", node: "respond", text: answer });
  ev(46, { type: "node_end", node: "respond", duration: 2e6 });
  ev(47, { type: "message", message: { role: "assistant", content: answer, kind: "answer", turn: 1 } });
  ev(48, { type: "usage", usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } });
  ev(49, { type: "done", status: "answered" });
  frames.push(`event: end\ndata: ${JSON.stringify({ run_id: "run-fixture", status: "answered", shutdown: false })}\n\n`);
  return frames.join("");
}
