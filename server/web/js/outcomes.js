// How an attempt of a side-effecting step ended (capabilities.Outcome), as
// the page shows it: a badge whose text says the outcome (never colour
// alone) and a sentence an operator acts on, from the agent's audit record
// that the run's events carry ("audit" events: outcome, changes, the
// values before, the readback, the message).
import { el, icon } from "./icons.js";

// The outcomes, in the vocabulary of the server and the audit log; the two
// a human must act on in capitals.
export const OUTCOMES = {
  confirmed: { label: "confirmed", icon: "check" },
  failed: { label: "failed: not applied", icon: "cross" },
  mismatch: { label: "MISMATCH", icon: "warning" },
  unconfirmed: { label: "UNCONFIRMED", icon: "unknown" },
  refused: { label: "refused", icon: "lock" },
  unrequested: { label: "unrequested", icon: "skipped" },
};

// outcomeBadge is the badge of an outcome record.
export function outcomeBadge(r) {
  const o = OUTCOMES[r.outcome] || { label: r.outcome, icon: "info" };
  return el("span", { class: "badge outcome", dataset: { outcome: r.outcome } }, icon(o.icon), o.label);
}

// quantity writes a value as an operator reads it: two decimals unless it
// is very large or small, then its unit.
export function quantity(v, unit) {
  let s;
  if (typeof v === "number") {
    const a = Math.abs(v);
    s = a === 0 || (a >= 0.01 && a < 1e6) ? v.toFixed(2) : String(v);
  } else if (typeof v === "string") s = v;
  else if (v === undefined || v === null) s = "?";
  else s = JSON.stringify(v);
  return unit ? s + " " + unit : s;
}

export function readingOf(readings, target) {
  return (readings || []).find((r) => r.target === target);
}

// changeText says what a change does, from the value before when known:
// "BTS:MAG:Q1:CURRENT 92.00 A → 105.00 A".
export function changeText(c, before) {
  const b = readingOf(before, c.target);
  return c.target + " " + (b ? quantity(b.value, b.unit) + " → " : "→ ") + quantity(c.value, c.unit);
}

function readbackText(rs) {
  if (!rs || !rs.length) return "";
  if (rs.length === 1) return quantity(rs[0].value, rs[0].unit);
  return rs.map((r) => r.target + " " + quantity(r.value, r.unit)).join("; ");
}

// outcomeSentence says what became of the change and, for the outcomes a
// human must act on, what to check; it names the target system the change
// went to, when the server has targets ("on the simulator target: …").
export function outcomeSentence(r) {
  const s = outcomeWords(r);
  return r.target ? "on the " + r.target + " target: " + s : s;
}

function outcomeWords(r) {
  const changes = r.changes || [];
  const what = changes.length ? "set " + changes.map((c) => changeText(c, r.before)).join("; ") : r.summary || r.capability;
  const targets = changes.map((c) => c.target).join(", ") || "the result of " + r.capability;
  const msg = (r.message || "").trim().replace(/\.$/, "");
  const rb = readbackText(r.readback);
  switch (r.outcome) {
    case "confirmed":
      return what + (rb ? " (readback " + rb + ")" : "") + (r.reconciled ? ", established by a readback after the run was interrupted" : "") + ".";
    case "failed":
      return what + " was not applied" + (msg ? ": " + msg : "") + ".";
    case "mismatch":
      return what + " was carried out, but the readback differs from what was asked" + (rb ? " (readback " + rb + ")" : "") + ". It was not retried: check " + targets + " on the machine.";
    case "unconfirmed":
      return what + " may or may not have been applied" + (msg ? " (" + msg + ")" : "") + ". It was not retried: check " + targets + " on the machine before asking for the change again.";
    case "unrequested":
      return what + " was not carried out: " + (r.reason === "intent_mismatch" ? "it is not the change the request asked for." : "the request did not ask for this change.");
    default:
      return what + " was not carried out" + (msg ? ": " + msg : "") + ".";
  }
}

// outcomeItem is one outcome as a list item: the badge, the step, what
// became of it.
export function outcomeItem(r) {
  return el("li", { class: "outcome-item", dataset: { outcome: r.outcome, step: String(r.step), target: r.target || "" } },
    outcomeBadge(r), " ", el("span", { class: "outcome-text", text: "Step " + (r.step + 1) + ": " + outcomeSentence(r) }));
}
