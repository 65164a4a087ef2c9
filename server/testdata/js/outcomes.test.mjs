// The outcome of every change on the built-in page, in Debian Chromium
// through playwright-core, against a real agent whose one write ends each
// way a change can end (internal/outcometest; server/outcomes_test.go,
// TestWebPageOutcomes): the approval card shows the value before beside
// the change, and a badge per step and a line under the turn say what
// became of it.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { launch, watch, violations, shot, withKey, ask, answered, contrastProblems } from "./pagekit.mjs";

let browser, page;

before(async () => {
  browser = await launch();
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 1000 }, colorScheme: "light" });
  page = watch(await ctx.newPage());
  page.setDefaultTimeout(20000);
  await withKey(page);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(violations, [], "CSP violations or page errors");
});

function run(name, fn) {
  return async () => {
    try { await fn(); } catch (e) { await shot(page, name + "-failed").catch(() => {}); throw e; }
  };
}

// approve waits for the pending approval of the last turn, checks what it
// shows, approves it and returns the card.
async function approve(changes) {
  const pending = page.locator('[data-approval-id][data-state="pending"]').last();
  await pending.waitFor();
  const card = page.locator(`[data-approval-id="${await pending.getAttribute("data-approval-id")}"]`);
  assert.deepEqual(await card.locator(".changes li").allInnerTexts(), changes);
  await card.locator("button.approve").click();
  await card.and(page.locator('[data-state="approved"]')).waitFor();
  return card;
}

// outcomeOf reads what the turn of question shows of its change: the
// badge on its step, and the badge and sentence in its list of changes.
async function outcomeOf(question) {
  const turn = await answered(page, question);
  const item = turn.locator(".outcomes .outcome-item").last();
  await item.waitFor();
  return {
    step: (await turn.locator(".step .badge.outcome").last().textContent()).trim(),
    badge: (await item.locator(".badge.outcome").innerText()).trim(),
    outcome: await item.getAttribute("data-outcome"),
    text: await item.locator(".outcome-text").innerText(),
  };
}

const cases = [
  ["Set the Q1 current to 105 A", "confirmed", "confirmed",
    /^Step 1: set BTS:MAG:Q1:CURRENT 92\.00 A → 105\.00 A \(readback 105\.00 A\)\.$/],
  ["Set the Q2 current to 105 A", "failed", "failed: not applied",
    /^Step 1: set BTS:MAG:Q2:CURRENT 92\.00 A → 105\.00 A was not applied: the Q2 interlock is open\.$/],
  ["Set the Q3 current to 105 A", "mismatch", "MISMATCH",
    /readback differs from what was asked \(readback 97\.50 A\)\. It was not retried: check BTS:MAG:Q3:CURRENT on the machine\.$/],
  ["Set the Q4 current to 105 A", "unconfirmed", "UNCONFIRMED",
    /may or may not have been applied \(the connection to the Q4 supply broke after the request was sent\)\. It was not retried: check BTS:MAG:Q4:CURRENT on the machine before asking for the change again\.$/],
];

for (const [question, outcome, label, text] of cases) {
  test(`an approved change ends ${outcome}: the badge says so`, run("outcome-" + outcome, async () => {
    await ask(page, question);
    const target = "BTS:MAG:" + /Q\d/.exec(question)[0] + ":CURRENT";
    await approve([target + " 92.00 A → 105.00 A — quadrupole " + /Q\d/.exec(question)[0] + " magnet current"]);
    const got = await outcomeOf(question);
    assert.equal(got.outcome, outcome);
    assert.equal(got.badge, label);
    assert.equal(got.step, label);
    assert.match(got.text, text);
    if (outcome === "mismatch" || outcome === "unconfirmed") {
      // The error report never says the change failed or did nothing.
      const done = await page.locator("article.turn").last().locator(".error-card .report-steps li").first().innerText();
      assert.match(done, outcome === "mismatch" ? /carried out, but the machine does not read what was asked\s+MISMATCH/ : /may or may not have changed the machine\s+UNCONFIRMED/);
    }
    await page.locator("article.turn").last().scrollIntoViewIfNeeded();
    await shot(page, "outcome-" + outcome);
  }));
}

test("a change beyond the limits is refused without asking", run("outcome-refused", async () => {
  const question = "Set the Q1 current to 150 A";
  await ask(page, question);
  const got = await outcomeOf(question);
  assert.deepEqual([got.outcome, got.badge, got.step], ["refused", "refused", "refused"]);
  assert.match(got.text, /^Step 1: set BTS:MAG:Q1:CURRENT → 150\.00 A was not carried out: .*150 A is above the Q1 supply's limit of 120 A\.$/);
  const turn = page.locator("article.turn").last();
  assert.equal(await turn.locator("[data-approval-id]").count(), 0, "nobody is asked to approve a refused change");
}));

test("an approval the machine moved away from is asked again, saying so", run("outcome-moved", async () => {
  const question = "Set the Q5 current to 105 A";
  await ask(page, question);
  const first = await approve(["BTS:MAG:Q5:CURRENT 92.00 A → 105.00 A — quadrupole Q5 magnet current"]);
  assert.equal(await first.locator(".approval-moved").count(), 0);
  // Q5 moved to 94 A after the question: the same change is asked again.
  const again = page.locator('[data-approval-id][data-state="pending"]').last();
  await again.waitFor();
  assert.match(await again.locator(".approval-moved").innerText(), /The machine moved since your approval\./);
  assert.match(await again.locator(".approval-summary").innerText(), /moved from 92 A to 94 A/);
  // The page may redraw the card as the run's last events arrive (under
  // async checkpoints they come a little later): scroll to the one drawn now.
  for (let i = 0; ; i++) {
    try {
      await again.scrollIntoViewIfNeeded();
      break;
    } catch (e) {
      if (i >= 4 || !/not attached/.test(String(e))) throw e;
    }
  }
  await shot(page, "approval-moved");
  await approve(["BTS:MAG:Q5:CURRENT 94.00 A → 105.00 A — quadrupole Q5 magnet current"]);
  const got = await outcomeOf(question);
  assert.deepEqual([got.outcome, got.badge], ["confirmed", "confirmed"]);
  assert.match(got.text, /^Step 1: set BTS:MAG:Q5:CURRENT 94\.00 A → 105\.00 A \(readback 105\.00 A\)\.$/);
}));

test("a write the model planned for a question is refused as unrequested, without asking", run("outcome-unrequested", async () => {
  // outcometest.Planner turns this read into a write of 105 A.
  const question = "What is the Q2 current?";
  await ask(page, question);
  const turn = await answered(page, question);
  const item = turn.locator(".outcomes .outcome-item").last();
  await item.waitFor();
  assert.equal(await item.getAttribute("data-outcome"), "unrequested");
  assert.equal((await item.locator(".badge.outcome").innerText()).trim(), "unrequested");
  assert.equal(await item.locator(".outcome-text").innerText(),
    "Step 1: set BTS:MAG:Q2:CURRENT → 105.00 A was not carried out: the request did not ask for this change.");
  assert.equal(await turn.locator("[data-approval-id]").count(), 0, "nobody is asked to approve a change nobody asked for");
  await turn.scrollIntoViewIfNeeded();
  await shot(page, "outcome-unrequested");
}));

test("every outcome is on the page at once, legible", run("outcomes", async () => {
  const shown = await page.locator(".outcomes .outcome-item").evaluateAll((items) => items.map((i) => i.dataset.outcome));
  assert.deepEqual(shown, ["confirmed", "failed", "mismatch", "unconfirmed", "refused", "confirmed", "unrequested"]);
  assert.deepEqual(await contrastProblems(page), []);
  await page.locator(".outcomes").nth(2).scrollIntoViewIfNeeded();
  await shot(page, "outcomes");
}));

test("the outcomes are on the page again when it is opened later", run("outcomes-reloaded", async () => {
  const before = await page.locator(".outcomes .outcome-item").evaluateAll((items) => items.map((i) => [i.dataset.outcome, i.innerText]));
  await page.reload();
  const items = page.locator(".outcomes .outcome-item");
  await items.nth(before.length - 1).waitFor();
  const after = await items.evaluateAll((items) => items.map((i) => [i.dataset.outcome, i.innerText]));
  assert.deepEqual(after, before);
  assert.equal(after.length, 7);
}));
