// Time travel on the page (docs/time-travel.md): the targets' posture in a
// chip in the header, a timeline of the kept checkpoints under each turn
// with a "Fork here" button, and the fork's replay set beside the original
// (GET …/history, POST …/fork, POST …/replay, GET api/compare). A fork's
// writes go to the simulated target unless a human names another; the page
// never names one for them.
import { api, threadPath } from "./api.js";
import { el, icon } from "./icons.js";
import { stamp } from "./time.js";

// showTargets shows the configured targets in a chip after the write pill:
// the default target, and each target's posture in its title. Hidden when
// the server configures none.
export async function showTargets() {
  let ts;
  try { ts = (await api("api/targets")).targets || []; } catch { return; }
  document.getElementById("targets")?.remove();
  document.getElementById("target-choice")?.remove();
  if (!ts.length) return;
  const def = ts.find((t) => t.default) || ts[0];
  const posture = (t) => t.name + (t.simulated ? " (simulated)" : "") + ": " + (t.writes ? "writes on" : "writes off") +
    (t.writes ? (t.approval === "none" ? ", no approval" : ", every write asks") : "") +
    (t.max_writes_per_turn ? ", at most " + t.max_writes_per_turn + " per turn" : "") +
    (t.rehearsal ? "; forks and replays write here" : "");
  const chip = el("span", { id: "targets", class: "pill", dataset: { target: def.name, writes: def.writes ? "on" : "off" },
    title: ts.map(posture).join("\n") }, icon(def.simulated ? "chart" : "bolt"), " Target: " + def.name + (def.writes ? "" : " (read-only)"));
  // A human may choose the target of the next questions: a dry run on the
  // simulator, or the live machine in a fork. Left as configured, a turn
  // names none (a fork's turns then stay on its rehearsal target).
  const choice = el("select", { id: "target-choice", "aria-label": "Target of the next questions" },
    el("option", { value: "", text: "as configured" }),
    ...ts.map((t) => el("option", { value: t.name, text: "on " + t.name })));
  choice.value = chosen;
  choice.addEventListener("change", () => { chosen = choice.value; });
  document.getElementById("writes").after(chip, choice);
}

let chosen = "";

// targetOptions are the run options of the next question: the target a
// human chose, or none.
export function targetOptions() {
  return chosen ? { target: chosen } : undefined;
}

// momentItem is one kept checkpoint in a turn's timeline.
function momentItem(m, onFork) {
  const li = el("li", { class: "moment", dataset: { kind: m.kind, checkpoint: m.checkpoint } },
    el("time", { datetime: m.time, text: stamp(m.time) }), " ",
    el("span", { class: "badge moment-kind", text: m.kind }), " ",
    el("span", { class: "moment-event", text: m.event }));
  if (m.target) li.append(" ", el("span", { class: "moment-target", text: "target " + m.target }));
  li.append(" ", el("button", { type: "button", class: "fork", text: "Fork here", onclick: () => onFork(m, li) }));
  return li;
}

// showTimelines puts under each turn of thread id (its article's
// data-turn) the checkpoints the thread keeps of it. onForked is told of
// each fork made (to list it among the conversations).
export async function showTimelines(chat, id, onForked) {
  let h;
  try { h = (await api(threadPath(id, "history"))).history || []; } catch { return; }
  const byTurn = new Map();
  for (const m of h) {
    if (!m.turn) continue;
    if (!byTurn.has(m.turn)) byTurn.set(m.turn, []);
    byTurn.get(m.turn).push(m);
  }
  for (const [n, ms] of byTurn) {
    const turn = chat.querySelector(`article.turn[data-turn="${n}"]`);
    if (!turn) continue;
    turn.querySelector("details.checkpoints")?.remove();
    const edit = el("input", { type: "text", class: "fork-input", "aria-label": "Another message for the fork (optional)",
      placeholder: "Another message for the fork (optional)" });
    const box = el("details", { class: "checkpoints", dataset: { turn: String(n) } },
      el("summary", { text: "Timeline: " + ms.length + " kept checkpoint" + (ms.length === 1 ? "" : "s") }),
      el("p", { class: "muted", text: "Fork a moment into a new conversation of yours; its changes go to the simulator, not the machine." }),
      edit,
      el("ol", { class: "moments" }, ...ms.map((m) => momentItem(m, (mm, li) => fork(chat, id, mm, edit.value.trim(), li, onForked)))));
    turn.append(box);
  }
}

// fork forks the moment, replays the fork and shows it beside the original.
async function fork(chat, id, m, input, li, onForked) {
  const note = el("p", { class: "fork-status", role: "status", text: "Forking…" });
  li.querySelector(".fork-status")?.remove();
  li.append(note);
  try {
    const body = { checkpoint: m.checkpoint };
    if (input) body.input = input;
    const f = await api(threadPath(id, "fork"), { method: "POST", body });
    let replay = null;
    if (f.input || f.resumable) {
      note.textContent = "Replaying on the " + (f.target || "no") + " target…";
      replay = await api(threadPath(f.thread.id, "replay"), { method: "POST", body: {} });
    }
    note.textContent = "";
    note.append("Forked into ", el("a", { href: "#/t/" + encodeURIComponent(f.thread.id), text: f.thread.id }),
      " — " + (f.writes ? "its changes go to the " + f.target + " target" : "its changes are off") +
      (replay ? "; replayed: " + replay.status : "") + ".");
    if (replay && replay.status === "interrupted") note.append(" It waits for an approval: open it to answer.");
    const cmp = await api("api/compare?left=" + encodeURIComponent(id) + "&right=" + encodeURIComponent(f.thread.id));
    chat.querySelector("section.compare")?.remove();
    chat.append(compareView(cmp));
    onForked?.(f.thread); // listed once its replay has ended
  } catch (e) {
    note.textContent = "The fork failed: " + e.message;
    note.dataset.error = "1";
  }
}

// The rows of a comparison, as capgraph compare prints them.
const ROWS = [
  ["input", (r) => r.input],
  ["status", (r) => r.status],
  ["route", (r) => (r.route || []).join(" → ")],
  ["severities", (r) => (r.severities || []).join(", ")],
  ["approvals", (r) => (r.approvals || []).join("; ")],
  ["answer", (r) => (r.answer || "").split("\n").find((l) => l.trim()) || ""],
  ["calls", (r) => String(r.calls)],
  ["tokens", (r) => String(r.tokens)],
  ["time", (r) => (r.duration / 1e6).toFixed(0) + " ms"],
  ["target", (r) => r.target || ""],
  ["writes", (r) => (r.writes || []).join(" ")],
];

// compareView sets the two threads' turns side by side, the rows that
// differ marked.
export function compareView(cmp) {
  const sec = el("section", { class: "compare", "aria-label": "Comparison" },
    el("h2", {}, icon("route"), " " + cmp.left + " and " + cmp.right + " side by side"));
  for (const p of cmp.pairs || []) {
    const diff = new Set(p.differences || []);
    const table = el("table", { class: "compare-table", dataset: { turn: String(p.turn) } },
      el("caption", { text: "Turn " + p.turn + (diff.size ? " — differs in: " + [...diff].join(", ") : " — the same") }),
      el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "" }), el("th", { scope: "col", text: cmp.left }), el("th", { scope: "col", text: cmp.right }))));
    const tbody = el("tbody");
    for (const [name, get] of ROWS) {
      const cell = (r) => el("td", { text: r ? get(r) || "–" : "—" });
      tbody.append(el("tr", { dataset: { row: name, differs: String(diff.has(name)) } }, el("th", { scope: "row", text: name }), cell(p.left), cell(p.right)));
    }
    table.append(tbody);
    sec.append(table);
  }
  return sec;
}
