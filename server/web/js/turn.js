// One turn of a conversation as the page shows it: the question, what the
// agent did (the plan, each step with its inputs, outputs, attempts and the
// route taken after a failure, a timeline of node durations and LLM calls),
// the artifacts, and the answer (Markdown), error card or approval card.
// A Turn is built from a run's events as they arrive (handle), from the
// thread's state after a reload (fromState), or both: events give timing,
// the state gives the context data each step read and wrote.
import { el, icon } from "./icons.js";
import { markdown, renderInto } from "./markdown.js";
import { artifactView } from "./artifacts.js";
import { outcomeBadge, outcomeItem, outcomeSentence, changeText } from "./outcomes.js";
import { clock } from "./time.js";

const NS = 1e6; // nanoseconds per millisecond (Go durations are nanoseconds)
const INFRA = new Set(["respond", "clarify"]);
const PREVIEW = 600; // characters of a value shown before "Show all"

let uid = 0;
const nextID = (p) => p + "-" + (++uid);

// duration formats milliseconds for people.
export function duration(ms) {
  if (ms === null || ms === undefined || isNaN(ms)) return "";
  if (ms < 1) return "<1 ms";
  if (ms < 100) return Math.round(ms) + " ms";
  if (ms < 1000) return Math.round(ms / 10) * 10 + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s";
  const m = Math.floor(ms / 60000), s = Math.round((ms % 60000) / 1000);
  return m + " min" + (s ? " " + s + " s" : "");
}

export { clock };

const ms = (t) => (t ? new Date(t).getTime() : NaN);

// Turn renders one turn; app is the page (copy feedback, approvals, who
// the user is).
export class Turn {
  constructor(app, question) {
    this.app = app;
    this.steps = [];        // current plan's steps
    this.oldPlans = [];     // replaced plans: [{number, steps}]
    this.planNumber = 0;
    this.nodes = [];        // timeline rows: {node, start, end, calls: [], error}
    this.open = new Map();  // node → open timeline row
    this.failure = null;    // the last failure whose route is not known yet
    this.streamed = "";
    this.finished = false;
    this.runs = new Set();
    this.outcomes = new Map(); // "plan:step" → the step's latest outcome record

    this.root = el("article", { class: "turn" });
    if (question !== undefined) this.setQuestion(question);
    this.activity = el("details", { class: "activity", hidden: true });
    this.summary = el("summary", {}, el("span", { class: "act-title", text: "What the agent did" }), el("span", { class: "act-meta" }));
    this.planEl = el("ol", { class: "plan", "aria-label": "Plan" });
    this.oldPlansEl = el("div", { class: "old-plans" });
    this.timelineEl = el("div", { class: "timeline" });
    this.activity.append(this.summary, this.oldPlansEl, this.planEl, this.timelineEl);
    this.summary.addEventListener("click", () => { this.activity.dataset.touched = "1"; });
    this.artifactsEl = el("div", { class: "artifacts" });
    // What became of each change, in view whether or not the steps are.
    this.outcomesEl = el("ul", { class: "outcomes", "aria-label": "Changes to the machine", hidden: true });
    this.answerEl = null;
    this.cards = el("div", { class: "cards" });
    this.noteEl = el("p", { class: "turn-note", hidden: true });
    this.root.append(this.activity, this.artifactsEl, this.outcomesEl, this.cards, this.noteEl);
  }

  setQuestion(q) {
    if (this.userEl) this.userEl.remove();
    this.question = q;
    this.userEl = el("div", { class: "msg user", text: q });
    this.root.prepend(this.userEl);
  }

  // ---- live events ----

  handle(ev) {
    const t = ms(ev.time);
    if (!this.start || t < this.start) this.start = t;
    this.last = Math.max(this.last || 0, t);
    if (ev.run_id) this.runs.add(ev.run_id);
    switch (ev.type) {
      case "run_start":
        this.finished = false;
        this.noteEl.hidden = true;
        break;
      case "node_start":
        this.nodeStart(ev.node, t);
        if (this.failure && ev.node !== this.failure.node) this.route(routeOfNode(ev.node));
        if (INFRA.has(ev.node)) this.stepStatusByCapability(ev.node, "running");
        break;
      case "node_end": {
        const interrupted = ev.error && /interrupted the run/.test(ev.error);
        this.nodeEnd(ev.node, t, ev.duration / NS, interrupted ? "" : ev.error);
        if (ev.error && /context canceled/.test(ev.error)) this.nodes[this.nodes.length - 1].canceled = true;
        if (INFRA.has(ev.node)) this.stepStatusByCapability(ev.node, ev.error && !interrupted ? "failed" : "done");
        if (ev.error && !interrupted && !this.stepNode(ev.node)) this.failure = { node: ev.node, infra: true };
        break;
      }
      case "model_call":
        this.modelCall(ev, t);
        break;
      case "task":
        this.task = ev.text;
        break;
      case "capabilities":
        this.selected = ev.capabilities;
        break;
      case "plan":
        if (ev.plan) this.setPlan(ev.plan);
        break;
      case "step_start": {
        const s = this.step(ev.step || 0, ev.capability);
        s.status = "running";
        s.attempts.push({ attempt: ev.attempt || s.attempts.length + 1, capability: ev.capability, start: t });
        this.renderStep(s);
        break;
      }
      case "step_end": {
        const s = this.step(ev.step || 0, ev.capability);
        let a = [...s.attempts].reverse().find((x) => x.attempt === (ev.attempt || x.attempt) && x.end === undefined);
        if (!a) { a = { attempt: ev.attempt || s.attempts.length + 1, capability: ev.capability }; s.attempts.push(a); }
        a.end = t;
        a.duration = ev.duration / NS;
        if (ev.error) {
          a.error = ev.error;
          s.status = "failed";
          this.failure = { node: ev.node, step: s.index, attempt: a };
        } else {
          s.status = "done";
        }
        this.renderStep(s);
        break;
      }
      case "retry":
        if (ev.retry) this.retry(ev.retry);
        break;
      case "denied": {
        if (ev.step !== undefined && ev.step >= 0 && this.steps[ev.step || 0]) {
          const s = this.steps[ev.step || 0];
          s.status = "failed";
          s.attempts.push({ attempt: s.attempts.length + 1, capability: ev.capability, start: t, end: t, error: ev.text, refused: true });
          this.failure = { node: ev.node, step: s.index, attempt: s.attempts[s.attempts.length - 1] };
          this.renderStep(s);
        }
        break;
      }
      case "token":
        this.streamed += ev.text || "";
        this.showStreaming();
        break;
      case "answer_reset":
        this.streamed = "";
        if (this.answerEl && !this.answerEl.dataset.done) { this.answerEl.remove(); this.answerEl = null; }
        break;
      case "approval_required":
        if (ev.approval) {
          this.showApproval(ev.approval, "pending");
          this.markWaiting(ev.approval);
        }
        break;
      case "message":
        if (ev.message) this.showMessage(ev.message);
        break;
      case "usage":
        this.tokens = ev.usage && ev.usage.total_tokens;
        break;
      case "artifact":
        if (ev.artifact) this.addArtifact(ev.artifact);
        break;
      case "audit":
        if (ev.audit && ev.audit.outcome) this.addOutcome(ev.audit);
        break;
      case "done":
        this.finish(ev.status, t);
        break;
    }
    this.renderSummary();
  }

  nodeStart(node, t) {
    const row = { node, start: t, calls: [] };
    this.nodes.push(row);
    this.open.set(node, row);
    this.renderTimeline();
    // A node that runs long grows on the timeline while it runs.
    if (!this.ticker) {
      this.ticker = setInterval(() => {
        if (this.finished || !this.root.isConnected) { clearInterval(this.ticker); this.ticker = 0; return; }
        if (this.open.size) this.renderTimeline();
      }, 1000);
    }
  }

  nodeEnd(node, t, dur, error) {
    let row = this.open.get(node);
    if (!row) { row = { node, start: t - (dur || 0), calls: [] }; this.nodes.push(row); }
    this.open.delete(node);
    row.end = t;
    if (dur) row.start = Math.min(row.start, t - dur);
    if (error) row.error = error;
    this.renderTimeline();
  }

  modelCall(ev, t) {
    const dur = (ev.duration || 0) / NS;
    const call = { start: t - dur, end: t, role: ev.call && ev.call.role, model: ev.call && ev.call.model, tokens: ev.call && ev.call.usage ? ev.call.usage.total_tokens : 0, error: ev.error };
    let row = this.open.get(ev.node) || [...this.nodes].reverse().find((r) => r.node === ev.node);
    if (!row) { row = { node: ev.node, start: call.start, end: t, calls: [] }; this.nodes.push(row); }
    row.calls.push(call);
    this.renderTimeline();
  }

  stepNode(node) {
    return this.steps.some((s) => s.capability === node || s.attempts.some((a) => a.capability === node));
  }

  retry(r) {
    const delay = (r.delay || 0) / NS;
    if (r.step !== undefined && r.step >= 0 && r.capability) {
      const s = this.steps[r.step];
      if (s) {
        const a = [...s.attempts].reverse().find((x) => x.attempt === r.attempt) || s.attempts[s.attempts.length - 1];
        if (a) {
          a.route = "retried";
          a.delay = delay;
          if (!a.error) a.error = r.reason;
        }
        s.status = "retrying";
        this.renderStep(s);
      }
      this.failure = null;
    } else {
      this.infraRetries = (this.infraRetries || []).concat([{ node: r.node, attempt: r.attempt, max: r.max, delay, reason: r.reason }]);
    }
  }

  // route records where the turn went after the last failure.
  route(what) {
    const f = this.failure;
    this.failure = null;
    if (!f || !what) return;
    if (f.attempt) {
      f.attempt.route = f.attempt.route || what;
      const s = this.steps[f.step];
      if (s) this.renderStep(s);
    } else {
      this.infraRoute = (this.infraRoute || []).concat([{ node: f.node, route: what }]);
    }
  }

  step(i, capability) {
    if (!this.steps[i]) {
      this.steps[i] = newStep(i, { capability, task_objective: "" }, this.planNumber || 1);
      this.renderPlan();
    }
    return this.steps[i];
  }

  stepStatusByCapability(cap, status) {
    const s = this.steps.find((x) => x.capability === cap);
    if (!s) return;
    if (status === "running" && s.status === "done") return;
    s.status = status;
    this.renderStep(s);
  }

  setPlan(plan) {
    if (this.planNumber && plan.number && plan.number !== this.planNumber && this.steps.length) {
      this.oldPlans.push({ number: this.planNumber, steps: this.steps });
      this.route("replanned");
    }
    this.planNumber = plan.number || this.planNumber || 1;
    this.steps = (plan.steps || []).map((ps, i) => {
      const s = newStep(i, ps, this.planNumber);
      const prev = this.steps[i];
      if (prev && prev.capability === ps.capability && this.oldPlans.every((p) => p.steps !== this.steps)) {
        s.attempts = prev.attempts;
      }
      return s;
    });
    this.renderPlan();
  }

  finish(status, t) {
    this.finished = true;
    this.status = status;
    for (const row of this.open.values()) if (row.end === undefined) row.end = t;
    this.open.clear();
    if (this.failure && status === "answered" && this.hasReport) this.route("error node");
    if (status === "canceled") this.note("Stopped. Nothing more runs in this turn; ask again to continue.");
    if (status === "failed") this.note("The run failed: the server could not finish this turn.");
    for (const s of this.steps) if (s.status === "running" && status !== "interrupted") s.status = status === "answered" ? s.status : "stopped";
    if (this.answerEl) this.answerEl.dataset.done = "1";
    // Answered: the answer is what matters now; the steps stay one click
    // away. Anything else keeps them in view.
    if (status === "answered" && !this.hasReport && !this.activity.dataset.touched) this.activity.open = false;
    this.renderPlan();
    this.renderTimeline();
  }

  note(text) {
    this.noteEl.textContent = text;
    this.noteEl.hidden = false;
  }

  // ---- from the thread's state (after a reload, and after each run) ----

  // fromState fills the turn from the thread's latest state: the plan with
  // each step's attempts (the turn's results), the context data steps read
  // and wrote, approvals, and, unless events showed it already, the answer.
  fromState(st, status) {
    const turn = st.turn || {};
    if (this.turnNumber && turn.number !== this.turnNumber) return; // the state has moved on to another turn
    this.context = st.context || {};
    this.turnNumber = turn.number;
    if (turn.task && turn.task.text) this.task = turn.task.text;
    if (turn.control) {
      this.reclassified = turn.control.reclassifications;
      this.tokens = this.tokens || turn.control.tokens;
    }
    const results = turn.results || [];
    const plan = turn.plan;
    if (plan) {
      const have = this.planNumber === plan.number && this.steps.length === (plan.steps || []).length;
      if (!have) {
        this.oldPlans = [];
        for (let n = 1; n < plan.number; n++) {
          const rs = results.filter((r) => r.plan === n);
          if (!rs.length) continue;
          const steps = [];
          for (const r of rs) {
            if (!steps[r.step_index]) steps[r.step_index] = newStep(r.step_index, { capability: r.capability, task_objective: r.task_objective, status: r.success ? "done" : "failed" }, n);
            steps[r.step_index].attempts.push(attemptOf(r));
          }
          this.oldPlans.push({ number: n, steps: steps.filter(Boolean) });
        }
        this.planNumber = plan.number;
        this.steps = (plan.steps || []).map((ps, i) => newStep(i, ps, plan.number));
      }
      plan.steps.forEach((ps, i) => {
        const s = this.steps[i];
        Object.assign(s, { params: ps.parameters, inputs: ps.inputs, dependsOn: ps.depends_on, contextKey: ps.context_key, fallback: ps.fallback, recovered: ps.recovered, approved: ps.approved, pendingError: ps.error });
        if (ps.task_objective) s.objective = ps.task_objective;
        if (ps.status && ps.status !== "pending" || s.status === "pending") s.status = ps.status === "pending" && s.status === "running" ? "running" : ps.status;
        const rs = results.filter((r) => r.plan === plan.number && r.step_index === i);
        if (rs.length && rs.length >= s.attempts.filter((a) => a.end !== undefined).length) {
          const live = s.attempts;
          s.attempts = rs.map((r) => {
            const a = attemptOf(r);
            const l = live.find((x) => x.attempt === a.attempt && x.capability === a.capability);
            if (l) Object.assign(a, { route: l.route, delay: l.delay, refused: l.refused });
            return a;
          });
        }
      });
      // Routes the events did not show: the next attempt of the step, a
      // later plan, the error node.
      const lastMsg = (st.messages || []).filter((m) => m.turn === turn.number && m.role === "assistant").pop();
      const endedInReport = lastMsg && lastMsg.kind === "error_report";
      const all = [...this.oldPlans.flatMap((p) => p.steps.map((s) => [p.number, s])), ...this.steps.map((s) => [plan.number, s])];
      for (const [n, s] of all) {
        s.attempts.forEach((a, k) => {
          if (!a.error || a.route) return;
          const next = s.attempts[k + 1];
          if (next) {
            a.route = "retried";
            if (a.delay === undefined && next.start && a.end) a.delay = Math.max(0, next.start - a.end);
          } else if (n < plan.number) a.route = "replanned";
          else if (endedInReport) a.route = "error node";
        });
      }
    }
    for (const r of results) for (const a of r.artifacts || []) this.addArtifact(a);
    if (st.messages) {
      const mine = st.messages.filter((m) => m.turn === turn.number);
      const q = mine.find((m) => m.role === "user");
      if (q && !this.userEl) this.setQuestion(q.content);
      const answer = mine.filter((m) => m.role === "assistant").pop();
      if (answer && !this.messageShown) this.showMessage(answer);
    }
    this.showDecisions(turn.approvals || [], turn.pending_approval, status);
    this.status = status;
    this.finished = status !== "running";
    if (!this.start && turn.started_at) this.start = ms(turn.started_at);
    if (!this.nodes.length) this.timelineFromResults(results);
    this.renderPlan();
    this.renderTimeline();
    this.renderSummary();
  }

  // timelineFromResults draws the capability steps' durations when the
  // run's events are gone (a restart since): infrastructure nodes are not
  // in the state.
  timelineFromResults(results) {
    for (const r of results) {
      if (!r.duration) continue;
      const end = ms(r.at);
      this.nodes.push({ node: r.capability, start: end - r.duration / NS, end, calls: [], error: r.error, fromState: true });
    }
  }

  // ---- rendering ----

  renderSummary() {
    const visible = this.steps.length > 0 || this.nodes.length > 0;
    this.activity.hidden = !visible;
    if (!visible) return;
    const meta = this.summary.querySelector(".act-meta");
    const parts = [];
    if (this.steps.length) parts.push(this.steps.length + (this.steps.length === 1 ? " step" : " steps"));
    const span = this.span();
    if (span) parts.push(duration(span));
    if (this.planNumber > 1) parts.push("plan " + this.planNumber);
    if (this.tokens) parts.push(this.tokens + " tokens");
    meta.textContent = parts.length ? " · " + parts.join(" · ") : "";
    if (!this.finished && !this.activity.dataset.touched) this.activity.open = true;
  }

  span() {
    const ends = this.nodes.map((n) => n.end).filter((x) => x !== undefined);
    if (!this.start || !ends.length) return 0;
    return Math.max(...ends) - Math.min(this.start, ...this.nodes.map((n) => n.start));
  }

  renderPlan() {
    this.planEl.replaceChildren(...this.steps.map((s) => this.stepView(s)));
    this.oldPlansEl.replaceChildren(...this.oldPlans.map((p) => el("details", { class: "old-plan" },
      el("summary", { text: "Plan " + p.number + " (replaced after a failure)" }),
      el("ol", { class: "plan" }, ...p.steps.map((s) => this.stepView(s))))));
    this.renderSummary();
  }

  renderStep(s) {
    const li = this.planEl.querySelector('li[data-index="' + s.index + '"]');
    if (!li) return this.renderPlan();
    const open = li.querySelector(".step-head").getAttribute("aria-expanded") === "true";
    const fresh = this.stepView(s, open);
    li.replaceWith(fresh);
  }

  stepView(s, open) {
    const id = s.domID || (s.domID = nextID("step"));
    const total = s.attempts.reduce((n, a) => n + (a.duration || 0), 0);
    let status = s.status || "pending";
    // A turn that ended (an error report, a stop) did not run what was left.
    if (status === "pending" && this.finished && this.status !== "interrupted") status = "not-run";
    const outcome = this.outcomes.get(s.plan + ":" + s.index);
    const head = el("button", { type: "button", class: "step-head", "aria-expanded": open ? "true" : "false", "aria-controls": id },
      icon(statusIcon(status), statusLabel(status)),
      el("span", { class: "step-obj" }, s.objective || s.capability, outcome ? " " : null, outcome ? outcomeBadge(outcome) : null),
      el("span", { class: "step-cap", text: s.capability + (s.fallback ? " → " + s.fallback : "") }),
      el("span", { class: "step-dur", text: total ? duration(total) : "" }));
    const body = el("div", { class: "step-body", id, hidden: !open });
    head.addEventListener("click", () => {
      const o = head.getAttribute("aria-expanded") !== "true";
      head.setAttribute("aria-expanded", o ? "true" : "false");
      body.hidden = !o;
      if (o && !body.childElementCount) this.fillStep(body, s);
    });
    if (open) this.fillStep(body, s);
    return el("li", { class: "step", dataset: { status, index: String(s.index), capability: s.capability, outcome: outcome ? outcome.outcome : undefined } }, head, body);
  }

  fillStep(body, s) {
    body.replaceChildren();
    const dl = el("dl");
    const row = (term, ...dd) => { dl.append(el("dt", { text: term }), el("dd", {}, ...dd)); };
    row("Capability", s.capability + (s.fallback ? " (stood in for by " + s.fallback + ")" : ""));
    if (s.dependsOn && s.dependsOn.length) row("After", "step " + s.dependsOn.map((d) => d + 1).join(", step "));
    if (s.params && Object.keys(s.params).length) row("Parameters", valueView(s.params));
    const ctx = this.context || {};
    if (s.inputs && s.inputs.length) {
      row("Inputs", el("ul", { class: "ctx" }, ...s.inputs.map((r) => contextItem(r.type, r.key, ctx[r.type] && ctx[r.type][r.key]))));
    }
    const outs = [];
    for (const [type, m] of Object.entries(ctx)) {
      for (const [key, e] of Object.entries(m || {})) {
        if (s.contextKey && key === s.contextKey && (!this.turnNumber || !e.turn || e.turn === this.turnNumber)) outs.push(contextItem(type, key, e));
      }
    }
    if (outs.length) row("Outputs", el("ul", { class: "ctx" }, ...outs));
    else if (!this.context && !INFRA.has(s.capability)) row("Outputs", el("span", { class: "muted", text: this.finished ? "—" : "shown when the turn ends" }));
    if (s.attempts.length) row("Attempts", attemptsTable(s.attempts));
    const lastError = s.attempts.length ? s.attempts[s.attempts.length - 1].error : "";
    if (s.pendingError && s.pendingError.message && !(lastError || "").startsWith(s.pendingError.message)) row("Unresolved failure", s.pendingError.message);
    if (s.approved) row("Approval", "approved by a human before it ran");
    const outcome = this.outcomes.get(s.plan + ":" + s.index);
    if (outcome) row("Outcome", outcomeBadge(outcome), " " + outcomeSentence(outcome));
    body.appendChild(dl);
  }

  renderTimeline() {
    const rows = this.nodes.filter((n) => n.end !== undefined || this.open.get(n.node) === n);
    if (!rows.length) { this.timelineEl.replaceChildren(); return; }
    const now = this.finished ? 0 : Date.now();
    const t0 = Math.min(...rows.map((r) => r.start));
    const t1 = Math.max(...rows.map((r) => (r.end !== undefined ? r.end : Math.max(now, r.start))), t0 + 1);
    const scale = (x) => ((x - t0) / (t1 - t0)) * 100;
    const list = el("ol", { class: "tl-rows" });
    for (const r of rows) {
      const end = r.end !== undefined ? r.end : Math.max(now, r.start);
      const d = end - r.start;
      const bar = el("span", { class: "tl-bar" + (r.canceled ? " tl-canceled" : r.error ? " tl-error" : "") + (r.end === undefined ? " tl-open" : ""), "aria-hidden": "true" });
      bar.style.left = scale(r.start) + "%";
      bar.style.width = Math.max(scale(end) - scale(r.start), 0.4) + "%";
      const track = el("span", { class: "tl-track", "aria-hidden": "true" }, bar);
      for (const c of r.calls) {
        const cb = el("span", { class: "tl-call" + (c.error ? " tl-error" : ""), title: callText(c) });
        cb.style.left = scale(c.start) + "%";
        cb.style.width = Math.max(scale(c.end) - scale(c.start), 0.4) + "%";
        track.appendChild(cb);
      }
      const calls = r.calls.length ? " · " + r.calls.length + (r.calls.length === 1 ? " LLM call" : " LLM calls") + " (" + r.calls.map(callText).join("; ") + ")" : "";
      list.appendChild(el("li", { class: "tl-row", dataset: { node: r.node } },
        el("span", { class: "tl-label", text: r.node }),
        track,
        el("span", { class: "tl-dur", text: r.end === undefined ? "running" : duration(d) }),
        el("span", { class: "visually-hidden", text: (r.error ? " failed: " + r.error : "") + calls })));
    }
    const legend = el("p", { class: "tl-legend muted" }, el("span", { class: "tl-key tl-key-node", "aria-hidden": "true" }), " node ",
      el("span", { class: "tl-key tl-key-call", "aria-hidden": "true" }), " LLM call",
      rows.some((r) => r.fromState) ? " · infrastructure nodes are shown while the server keeps the run's events" : "");
    this.timelineEl.replaceChildren(el("h4", { text: "Timeline" }), list, legend);
  }

  showStreaming() {
    if (!this.answerEl || this.answerEl.dataset.done) {
      this.answerEl = el("div", { class: "msg assistant streaming", dataset: { kind: "answer" } }, el("div", { class: "md" }));
      this.noteEl.before(this.answerEl);
    }
    if (this.pendingRender) return;
    this.pendingRender = requestAnimationFrame(() => {
      this.pendingRender = 0;
      if (this.answerEl && !this.answerEl.dataset.done) renderInto(this.answerEl.querySelector(".md"), this.streamed);
    });
  }

  showMessage(m) {
    this.messageShown = true;
    if (m.turn) this.turnNumber = m.turn;
    if (this.pendingRender) { cancelAnimationFrame(this.pendingRender); this.pendingRender = 0; }
    const kind = m.kind || "answer";
    let view;
    if (kind === "error_report" && m.report) {
      this.hasReport = true;
      if (this.failure) this.route("error node");
      view = errorCard(m);
    } else {
      view = el("div", { class: "msg assistant", dataset: { kind } }, el("div", { class: "md" }, markdown(m.content)));
    }
    view.dataset.done = "1";
    view.appendChild(this.app.messageTools(m));
    if (this.answerEl) this.answerEl.replaceWith(view); else this.noteEl.before(view);
    this.answerEl = view;
    this.streamed = "";
  }

  // addOutcome shows how an attempt of a side-effecting step ended: a badge
  // on its step, and a line in the turn's list of changes (the step's
  // latest attempt).
  addOutcome(r) {
    const key = r.plan + ":" + r.step;
    this.outcomes.set(key, r);
    this.outcomesEl.replaceChildren(...[...this.outcomes.values()].map(outcomeItem));
    this.outcomesEl.hidden = false;
    const s = [...this.steps, ...this.oldPlans.flatMap((p) => p.steps)].find((x) => x && x.plan === r.plan && x.index === r.step);
    if (s) this.renderStep(s);
  }

  addArtifact(a) {
    const old = a.id ? this.artifactsEl.querySelector('[data-artifact-id="' + CSS.escape(a.id) + '"]') : null;
    const view = artifactView(a);
    if (old) old.replaceWith(view); else this.artifactsEl.appendChild(view);
  }

  // showApproval shows the approval card; state is pending, approved,
  // rejected or expired (with decision: who and when).
  showApproval(ap, state, decision) {
    let card = this.cards.querySelector('[data-approval-id="' + CSS.escape(ap.id) + '"]');
    const fresh = approvalCard(ap, this.app);
    if (card) card.replaceWith(fresh); else this.cards.appendChild(fresh);
    card = fresh;
    if (state === "pending" && ap.expires && ms(ap.expires) < Date.now()) state = "expired";
    setApprovalState(card, state, decision);
    return card;
  }

  // markWaiting shows the step a pending approval holds back.
  markWaiting(ap) {
    const s = ap.kind === "step" && this.steps[ap.step_index || 0];
    if (s && s.status !== "done") {
      s.status = "waiting";
      this.renderStep(s);
    }
  }

  showDecisions(decisions, pending, status) {
    for (const d of decisions) {
      const ap = { id: d.id, kind: d.kind, summary: d.summary, created: d.asked };
      const ended = d.approved ? "approved" : /^expired/.test(d.answer || "") ? "expired" : /^superseded/.test(d.answer || "") ? "superseded" : "rejected";
      this.showApproval(ap, ended, d);
    }
    if (pending && status === "interrupted") {
      this.showApproval(pending, "pending");
      this.markWaiting(pending);
    }
  }
}

function newStep(i, ps, plan) {
  return { index: i, plan, capability: ps.capability, objective: ps.task_objective || "", status: ps.status || "pending", attempts: [],
    params: ps.parameters, inputs: ps.inputs, dependsOn: ps.depends_on, contextKey: ps.context_key };
}

function attemptOf(r) {
  const end = ms(r.at), dur = (r.duration || 0) / NS;
  return { attempt: r.attempt, capability: r.capability, start: end - dur, end, duration: dur, error: r.success ? undefined : r.error || "failed", severity: r.severity };
}

function routeOfNode(node) {
  return { orchestrator: "replanned", classifier: "reclassified", error: "error node" }[node] || null;
}

function statusIcon(s) {
  return { done: "check", failed: "cross", running: "running", retrying: "retry", skipped: "skipped", "not-run": "skipped", stopped: "stop", waiting: "hand" }[s] || "pending";
}

function statusLabel(s) {
  return { done: "done", failed: "failed", running: "running", retrying: "retrying", skipped: "skipped", "not-run": "not run", stopped: "stopped", waiting: "waiting for approval" }[s] || "pending";
}

function routeText(a) {
  switch (a.route) {
    case "retried": return "retried" + (a.delay ? " after " + duration(a.delay) : "");
    case "replanned": return "replanned";
    case "reclassified": return "capabilities selected again";
    case "error node": return "error report";
    default: return a.route || "";
  }
}

function attemptsTable(attempts) {
  const t = el("table", { class: "attempts" },
    el("thead", {}, el("tr", {}, ...["#", "started", "took", "result", "then"].map((h) => el("th", { scope: "col", text: h })))));
  const tb = el("tbody");
  for (const a of attempts) {
    tb.appendChild(el("tr", { class: a.error ? "failed" : "" },
      el("td", { text: String(a.attempt || "") }),
      el("td", { text: a.start ? clock(a.start) : "" }),
      el("td", { text: a.duration !== undefined ? duration(a.duration) : a.end === undefined ? "running" : "" }),
      el("td", {}, a.error ? icon("cross", "failed") : a.end !== undefined ? icon("check", "ok") : icon("running", "running"), " ",
        a.error ? (a.refused ? "refused: " : "") + a.error + (a.severity ? " (" + a.severity + ")" : "") : a.end !== undefined ? "ok" : "",
        a.capability ? el("span", { class: "muted", text: " · " + a.capability }) : null),
      el("td", { text: routeText(a) })));
  }
  t.appendChild(tb);
  return el("div", { class: "table-scroll" }, t);
}

function callText(c) {
  return (c.role || "model") + (c.model ? " (" + c.model + ")" : "") + " " + duration(c.end - c.start) + (c.tokens ? ", " + c.tokens + " tokens" : "") + (c.error ? ", failed: " + c.error : "");
}

// valueView shows a JSON value, cut at PREVIEW characters with a button
// that shows it all.
function valueView(v) {
  const text = typeof v === "string" ? v : JSON.stringify(v, null, 2);
  const pre = el("pre", { class: "value" });
  if (text.length <= PREVIEW) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = text.slice(0, PREVIEW) + "…";
  const more = el("button", { type: "button", class: "link show-all", text: "Show all (" + text.length.toLocaleString() + " characters)" });
  more.addEventListener("click", () => { pre.textContent = text; more.remove(); });
  return el("div", {}, pre, more);
}

function contextItem(type, key, e) {
  const li = el("li", {}, el("span", { class: "ctx-type", text: type }), " ", el("span", { class: "muted", text: key }));
  if (!e) { li.appendChild(el("span", { class: "muted", text: " (not in the context any more)" })); return li; }
  if (e.summary) li.appendChild(el("p", { class: "ctx-summary", text: e.summary }));
  if (e.value !== undefined) li.appendChild(valueView(e.value));
  return li;
}

// ---- error report ----

const SEVERITY_TEXT = { critical: "Critical", fatal: "Fatal", retriable: "Retriable", replanning: "Replanning", reclassification: "Reclassification" };

// errorCard builds the card of an error report from its structured fields
// (never from the Markdown).
export function errorCard(m) {
  const r = m.report;
  const f = r.failure || {};
  const sev = String(f.severity || "critical");
  const card = el("section", { class: "msg assistant error-card", dataset: { kind: "error_report", severity: sev }, "aria-label": "Error report" });
  card.appendChild(el("header", {}, icon("error"), el("h3", { text: "Your request could not be completed" }),
    el("span", { class: "badge sev", text: SEVERITY_TEXT[sev] || sev })));
  if (r.explanation) card.appendChild(el("p", { class: "explanation", text: r.explanation }));
  const dl = el("dl");
  const row = (t, ...dd) => dl.append(el("dt", { text: t }), el("dd", {}, ...dd));
  if (r.asked) row("You asked", r.asked);
  const steps = r.steps || [];
  // A change whose outcome is in doubt is never shown as merely failed.
  const meta = ((r.details || {}).classification || {}).metadata || {};
  const doubt = { mismatch: "carried out, but the machine does not read what was asked", unconfirmed: "may or may not have changed the machine" }[meta.outcome];
  if (steps.length) {
    row("What was done", el("ul", { class: "report-steps" }, ...steps.map((s) => {
      const inDoubt = doubt && s.step === f.step && s.status === "failed";
      return el("li", { dataset: { status: s.status } },
        icon(statusIcon(s.status), statusLabel(s.status)), " ",
        el("span", { text: "Step " + (s.step + 1) + " (" + (s.objective || s.capability) + ")" + (inDoubt ? ": " + doubt : s.outcome ? ": " + s.outcome : s.status === "done" ? "" : ": " + statusLabel(s.status)) }),
        inDoubt ? " " : null, inDoubt ? outcomeBadge({ outcome: meta.outcome }) : null,
        s.side_effect && s.status === "done" ? el("span", { class: "badge changed", text: "changed the machine" }) : null);
    })));
  } else {
    row("What was done", "Nothing was carried out.");
  }
  const failed = [f.operation ? f.operation + ": " : "", f.reason || ""].join("");
  const extra = [];
  if (f.attempts) extra.push(f.attempts + (f.attempts === 1 ? " attempt" : " attempts"));
  if (f.limit) extra.push("limit reached: " + f.limit);
  if (f.safety_stop) extra.push("stopped for safety: " + f.safety_stop);
  row("What failed", el("span", { text: failed }), extra.length ? el("span", { class: "muted", text: " (" + extra.join("; ") + ")" }) : null);
  card.appendChild(dl);
  if (r.suggestions && r.suggestions.length) {
    card.append(el("h4", { text: "What you can do" }), el("ul", { class: "suggestions" }, ...r.suggestions.map((s) => el("li", { text: s }))));
  }
  const d = r.details || {};
  const facts = [["cause", d.cause], ["error", d.error], ["kind", f.kind], ["node", f.node], ["plans", d.plans], ["retries", d.retry_attempts],
    ["node steps", d.node_steps], ["tokens", d.tokens], ["elapsed", d.elapsed ? duration(d.elapsed / NS) : ""], ["explained by", r.explained_by]].filter(([, v]) => v !== undefined && v !== "" && v !== 0);
  if (facts.length) {
    card.appendChild(el("details", { class: "report-details" }, el("summary", { text: "Details" }),
      el("dl", {}, ...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]))));
  }
  return card;
}

// ---- approvals ----

function approvalCard(ap, app) {
  const card = el("section", { class: "msg approval", dataset: { approvalId: ap.id, done: "1" }, "aria-label": "Approval" });
  const kind = ap.kind === "plan" ? "Approve the plan" : ap.kind === "escalation" ? "A decision is needed" : "Approval needed";
  card.appendChild(el("header", {}, icon("hand"), el("h3", { class: "approval-title", text: kind, dataset: { pending: kind } })));
  if (reasked(ap)) {
    // The machine moved beyond the tolerance since the human approved:
    // the same change is asked again against the values now.
    card.appendChild(el("p", { class: "approval-moved", role: "note" }, icon("warning"),
      el("strong", { text: "The machine moved since your approval." }), " Check the values now before you answer again."));
  }
  card.appendChild(el("p", { class: "approval-summary", text: ap.summary || "The agent asks before it goes on." }));
  const changes = ap.action && ap.action.changes;
  if (changes && changes.length) {
    // Each change beside the value its target had when this was asked.
    card.appendChild(el("ul", { class: "changes", "aria-label": "Changes (now → asked)" }, ...changes.map((c) => {
      // What the application says the target is: the human judges the
      // device, not only its name.
      const what = c.description ? [el("span", { class: "muted", text: " — " + c.description })] : [];
      return el("li", { dataset: { target: c.target } }, el("strong", { text: c.target }), changeText(c, ap.before).slice(c.target.length), ...what);
    })));
  }
  if (ap.plan && ap.plan.steps) {
    card.appendChild(el("ol", { class: "approval-plan" }, ...ap.plan.steps.map((s) => el("li", { text: (s.task_objective || s.capability) + " (" + s.capability + ")" }))));
  }
  const meta = [];
  if (ap.created) meta.push("asked " + clock(ap.created));
  if (ap.expires) meta.push("expires " + clock(ap.expires));
  if (meta.length) card.appendChild(el("p", { class: "muted approval-meta", text: meta.join(" · ") }));
  const buttons = el("div", { class: "approval-buttons" });
  for (const [label, approved] of [["Approve", true], ["Reject", false]]) {
    const b = el("button", { type: "button", class: approved ? "approve" : "reject" }, icon(approved ? "check" : "cross"), label);
    b.addEventListener("click", () => app.answerApproval(ap, approved, card));
    buttons.appendChild(b);
  }
  card.appendChild(buttons);
  card.appendChild(el("p", { class: "approval-outcome", role: "status" }));
  return card;
}

// reasked reports whether an approval is a question asked again after the
// machine moved (its id is the first question's, which ends in the turn's
// secret, then "/" and 8 hex digits of the machine state now).
function reasked(ap) {
  return ap.kind === "step" && /:[0-9a-f]{12}(\/[0-9a-f]{8})+$/.test(ap.id || "");
}

// setApprovalState ends (or reopens) a card: pending shows the buttons;
// approved, rejected and expired say so, with who and when.
export function setApprovalState(card, state, decision) {
  card.dataset.state = state;
  card.dataset.answered = state === "pending" ? "" : state;
  const buttons = card.querySelector(".approval-buttons");
  buttons.hidden = state !== "pending";
  for (const b of buttons.querySelectorAll("button")) b.disabled = state !== "pending";
  const out = card.querySelector(".approval-outcome");
  out.replaceChildren();
  const title = card.querySelector(".approval-title");
  title.textContent = state === "pending" || state === "answering" ? title.dataset.pending : "Approval";
  if (state === "pending") return;
  // Who answered; an expired or superseded approval was answered by nobody.
  const who = decision && decision.by && (state === "approved" || state === "rejected") ? " by " + decision.by : "";
  const when = decision && decision.at ? " at " + clock(decision.at) : "";
  const text = { approved: "Approved", rejected: "Rejected", expired: "Expired", superseded: "Cancelled by a new message", answering: "Sending your answer…" }[state] || state;
  out.append(icon({ approved: "check", rejected: "cross", expired: "clock", superseded: "skipped", answering: "running" }[state] || "info"), " ",
    el("strong", { text }), state === "expired" ? when + " — no answer came in time; nothing was done" : state === "superseded" ? when + " — nothing was done" : who + when);
}
