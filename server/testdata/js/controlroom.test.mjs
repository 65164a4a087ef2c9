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

test("the orbit question draws the BPMs' beam position along the ring", async () => {
  await newChat(page);
  await ask(page, "Is the orbit ok?");
  const turn = await answered(page, "orbit");
  const chart = turn.locator('.artifact[data-kind="xy"]');
  // What channel_read returned, as the server keeps it: a profile per plane.
  const kept = await served("api/threads/" + encodeURIComponent(await currentThread(page)) + "/artifacts");
  const xy = kept.artifacts.find((a) => a.kind === "xy").xy;
  assert.deepEqual(xy.x, { label: "position along the ring", units: "m" });
  assert.deepEqual(xy.y, { label: "beam position", units: "mm" });
  assert.deepEqual(xy.series.map((s) => [s.name, s.x.length]), [["horizontal", 48], ["vertical", 48]]);
  // Both planes drawn with every point, the axes labelled with their units, positions as numbers.
  assert.deepEqual(await chartOf(chart), { series: ["horizontal", "vertical"], points: [48, 48], units: ["beam position (mm)"] });
  const axes = await chart.evaluate((c) => { const u = c.querySelector(".chart").uplot; return { x: u.axes[0].label, time: u.scales.x.time, min: u.scales.x.min, max: u.scales.x.max }; });
  assert.equal(axes.x, "position along the ring (m)");
  assert.equal(axes.time, false);
  assert.ok(axes.min <= xy.series[0].x[0] && axes.max >= xy.series[0].x[47], JSON.stringify(axes));
  // Hovering shows the beam position in mm; the points as a table, one row per position.
  const box = await chart.locator(".u-over").boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const values = await chart.locator(".u-legend .u-series .u-value").allTextContents();
  assert.ok(values.slice(1).every((v) => / mm$/.test(v)), "hover values: " + values);
  await chart.locator(".points > summary").click();
  await chart.locator(".points table tbody tr").first().waitFor();
  assert.equal(await chart.locator(".points table tbody tr").count(), 48);
  assert.deepEqual(await chart.locator(".points table thead th").allTextContents(), ["position along the ring (m)", "horizontal (mm)", "vertical (mm)"]);
  await chart.scrollIntoViewIfNeeded();
  await shot(page, "controlroom-orbit");
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
