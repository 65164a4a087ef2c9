// Time travel on the built-in page, in Debian Chromium through
// playwright-core, against the offline control room with two plants
// (demo/controlroom TestWebPageTimeTravel): the target chip, a live write
// approved on the page, the timeline of its kept checkpoints, a fork of one
// of them with another message, replayed on the simulator, and the
// comparison.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { launch, watch, violations, shot, withKey, ask, answered, open } from "./pagekit.mjs";

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

const question = "Set the BTS Q1 quadrupole current to 105 A";

test("the header shows the target and its posture", run("targets", async () => {
  const chip = page.locator("#targets");
  await chip.waitFor();
  assert.equal((await chip.innerText()).trim(), "Target: live");
  const title = await chip.getAttribute("title");
  assert.match(title, /live: writes on, every write asks/);
  assert.match(title, /simulator \(simulated\): writes on, no approval; forks and replays write here/);
}));

test("a live write names its target; its timeline forks onto the simulator", run("timetravel", async () => {
  await ask(page, question);
  const pending = page.locator('[data-approval-id][data-state="pending"]').last();
  await pending.waitFor();
  await page.locator(`[data-approval-id="${await pending.getAttribute("data-approval-id")}"] button.approve`).click();
  const turn = await answered(page, question);
  const item = turn.locator(".outcomes .outcome-item").last();
  await item.waitFor();
  assert.equal(await item.getAttribute("data-target"), "live");
  assert.match(await item.locator(".outcome-text").innerText(), /^Step 2: on the live target: set BTS:MAG:Q1:CURRENT 92\.00 A → 105\.00 A/);

  // Reopened, the turn has its timeline of kept checkpoints.
  const id = await page.evaluate(() => decodeURIComponent(/^#\/t\/(.+)$/.exec(location.hash)[1]));
  await open(page, id);
  const box = page.locator('article.turn[data-turn="1"] details.checkpoints');
  await box.waitFor();
  await box.locator("summary").click();
  const kinds = await box.locator(".moment").evaluateAll((ls) => ls.map((l) => l.dataset.kind));
  for (const k of ["input", "classified", "planned", "step", "ended"]) assert.ok(kinds.includes(k), `timeline ${kinds} lacks ${k}`);
  await shot(page, "timeline");

  // Fork the end of the turn with another message: replayed on the simulator.
  await box.locator(".fork-input").fill("Set the BTS Q1 quadrupole current to 107 A");
  await box.locator('.moment[data-kind="ended"] button.fork').click();
  const status = box.locator(".fork-status");
  await status.locator("a").waitFor();
  assert.match(await status.innerText(), /its changes go to the simulator target; replayed: answered\./);
  const table = page.locator("section.compare table.compare-table");
  await table.waitFor();
  const cell = (row, col) => table.locator(`tr[data-row="${row}"] td`).nth(col).innerText();
  assert.equal(await cell("target", 0), "live");
  assert.equal(await cell("target", 1), "simulator");
  assert.match(await cell("writes", 1), /^on the simulator target: set BTS:MAG:Q1:CURRENT 92\.00 → 107\.00 A/);
  assert.equal(await table.locator('tr[data-row="input"]').getAttribute("data-differs"), "true");
  assert.equal(await table.locator('tr[data-row="route"]').getAttribute("data-differs"), "false");
  const sec = page.locator("section.compare");
  await sec.scrollIntoViewIfNeeded();
  assert.ok((await sec.boundingBox()).height > 200, "the comparison is drawn");
  await shot(page, "compare");

  // The fork is a conversation of this key's, listed and opened.
  await status.locator("a").click();
  await page.locator('#chat[data-loaded]:not([data-loaded="' + id + '"])').waitFor({ state: "attached" });
  assert.match(await page.locator("#thread-list li").first().innerText(), /^Fork: Set the BTS Q1 quadrupole current to 105 A/);
  const fork = page.locator('article.turn[data-turn="1"]');
  assert.match(await fork.locator(".msg.user").innerText(), /107 A/);
  assert.equal(await fork.locator(".outcomes .outcome-item").last().getAttribute("data-target"), "simulator");
}));

test("a dry run: a question on the simulator, chosen in the header", run("dryrun", async () => {
  await page.click("#new").catch(async () => { await page.click("#threads-toggle"); await page.click("#new"); });
  await page.selectOption("#target-choice", "simulator");
  const dry = "Set the BTS Q1 quadrupole current to 103 A";
  await ask(page, dry);
  const turn = await answered(page, dry);
  const item = turn.locator(".outcomes .outcome-item").last();
  await item.waitFor();
  assert.equal(await item.getAttribute("data-target"), "simulator");
  assert.match(await item.locator(".outcome-text").innerText(), /^Step 2: on the simulator target: set BTS:MAG:Q1:CURRENT 107\.00 A → 103\.00 A/);
  assert.equal(await turn.locator("[data-approval-id]").count(), 0, "the simulator's policy asks no one");
  await page.selectOption("#target-choice", "");
}));
