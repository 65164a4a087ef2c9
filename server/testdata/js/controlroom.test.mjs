// The control-room example (demo/controlroom) in the built-in page, in
// Debian Chromium: its demo questions as an operator asks them, answered by
// the offline agent over the simulated plant. Run by demo/controlroom's
// TestWebPageControlRoom with CAPGRAPH_URL, CAPGRAPH_KEY, CHROMIUM and
// SCREENSHOT_DIR set.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { url, key, launch, watch, violations, shot, withKey, ask, answered, newChat, currentThread, chartOf } from "./pagekit.mjs";

let browser, page;

before(async () => {
  browser = await launch();
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  page = watch(await ctx.newPage());
  page.setDefaultTimeout(20000);
  await withKey(page);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(violations, [], "CSP violations or page errors");
});

// served fetches a route of the server as the page does, with the key.
const served = (path) => page.evaluate(async ([path, key]) => (await fetch(path, { headers: { Authorization: "Bearer " + key } })).json(), [path, key]);

test("the history question draws a chart with the archived points of each channel", async () => {
  await ask(page, "Show me the RF cavity voltage over the last 2 hours");
  const turn = await answered(page, "RF cavity voltage");
  const chart = turn.locator('.artifact[data-kind="timeseries"]');
  // What the archive returned, as the server keeps it.
  const kept = await served("api/threads/" + encodeURIComponent(await currentThread(page)) + "/artifacts");
  const ts = kept.artifacts.find((a) => a.kind === "timeseries").timeseries;
  const channels = ts.series.map((s) => s.name);
  assert.deepEqual(channels, ["SR:RF:CAV1:VOLT", "SR:RF:CAV2:VOLT", "SR:RF:CAV3:VOLT", "SR:RF:CAV4:VOLT"]);
  assert.ok(ts.series.every((s) => s.values.length >= 100), "archived points: " + ts.series.map((s) => s.values.length));
  // Every point of every channel is drawn, on an axis in kV.
  assert.deepEqual(await chartOf(chart), { series: channels, points: ts.series.map((s) => s.values.length), units: ["kV"] });
  await chart.locator(".points > summary").click();
  await chart.locator(".points table tbody tr").first().waitFor();
  assert.equal(await chart.locator(".points table tbody tr").count(), ts.series[0].values.length);
  await chart.locator(".points > summary").click();
  await turn.locator(".activity > summary").click();
  await chart.scrollIntoViewIfNeeded();
  await shot(page, "controlroom-history");
});

test("a read shows a rendered table", async () => {
  await newChat(page);
  await ask(page, "What is the vacuum pressure in sector 3?");
  const turn = await answered(page, "vacuum pressure");
  const table = turn.locator('.artifact[data-kind="table"] table');
  assert.deepEqual(await table.locator("thead th").allTextContents(), ["channel", "value", "units", "status"]);
  const rows = await table.locator("tbody tr").evaluateAll((rs) => rs.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.deepEqual(rows.map((r) => r[0]), ["SR:C03:VAC:GAUGE1", "SR:C03:VAC:GAUGE2"]);
  assert.ok(rows.every((r) => r[2] === "Torr" && Number.isFinite(Number(r[1]))), JSON.stringify(rows));
  // The plan says what each step does, in the user's words.
  assert.match(await turn.locator(".step-obj").first().textContent(), /^Find the control-system channel names for: What is the vacuum pressure in sector 3\?$/);
  await shot(page, "controlroom-read");
});

test("a write with writes disabled ends in an error card", async () => {
  await newChat(page);
  assert.match(await page.textContent("#writes"), /Read-only/);
  await ask(page, "Set the quadrupole Q1 current in the BTS line to 105 A");
  const turn = await answered(page, "quadrupole Q1");
  const card = turn.locator(".error-card");
  assert.equal(await card.getAttribute("data-severity"), "critical");
  const text = await card.innerText();
  assert.match(text, /Writes are disabled/);
  assert.match(text, /stopped for safety: writes_disabled/);
  assert.match(text, /What you can do\s+.*writes_enabled/s);
  await card.scrollIntoViewIfNeeded();
  await shot(page, "controlroom-error");
});
