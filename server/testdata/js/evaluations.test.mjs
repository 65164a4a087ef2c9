// The page lists the last evaluation runs recorded in the store (capgraph
// eval --record) under the conversations, in Debian Chromium through
// playwright-core (server/evaluations_test.go, TestWebPageEvaluations).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { launch, watch, violations, shot, withKey } from "./pagekit.mjs";

let browser, page;

before(async () => {
  browser = await launch();
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 800 }, colorScheme: "light" });
  page = watch(await ctx.newPage());
  page.setDefaultTimeout(20000);
  await withKey(page);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(violations, [], "CSP violations or page errors");
});

test("the recorded evaluation runs are listed, newest first, with what failed", async () => {
  const box = page.locator("#evaluations");
  await box.waitFor();
  await box.locator("summary").click();
  const items = box.locator(".evaluation");
  await items.nth(1).waitFor();
  assert.deepEqual(await items.evaluateAll((li) => li.map((x) => x.dataset.passed)), ["false", "true"]);
  const newest = await items.nth(0).innerText();
  assert.match(newest, /failed/);
  assert.match(newest, /controlroom/);
  assert.match(newest, /2 cases, 2 runs/);
  assert.match(newest, /failed: write\/q1-approved/);
  assert.match(await items.nth(0).locator("time").innerText(), /^2026-11-27 \d\d:30:00$/);
  assert.match(await items.nth(1).innerText(), /passed/);
  await shot(page, "evaluations");
});
