// Drives the built-in page (GET /) in Debian Chromium through playwright-core,
// against a real agent (server/webenv_test.go). Run by server/node_test.go
// (TestWebPage) with CAPGRAPH_URL, CAPGRAPH_KEY, CHROMIUM and SCREENSHOT_DIR
// set. Every test saves a screenshot (SCREENSHOT_DIR/<name>.png; docs/web.md
// shows some of them).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { url, key, launch, watch, violations, shot, withKey, ask, answered, open, newChat, currentThread, chartOf, contrastProblems } from "./pagekit.mjs";

// The archive read_rf_history returns (webenv_test.go).
const HISTORY_CHANNELS = ["SR:RF:CAV1:VOLT", "SR:RF:CAV2:VOLT", "SR:RF:CAV3:VOLT", "SR:RF:CAV4:VOLT"];
const HISTORY_POINTS = 120;

let browser, context, page;

before(async () => {
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1200, height: 900 }, colorScheme: "light" });
  page = await context.newPage(); // one profile: its tabs share localStorage
  page.setDefaultTimeout(15000);
  watch(page);
});

after(async () => {
  await browser?.close();
  assert.deepEqual(violations, [], "CSP violations or page errors");
});

// run wraps a test so that a failure leaves a screenshot of the page.
function run(name, fn) {
  return async () => {
    try { await fn(); } catch (e) { await shot(page, name + "-failed").catch(() => {}); throw e; }
  };
}

async function storedKeys(p) {
  return p.evaluate(() => ({ local: localStorage.getItem("capgraph-key"), session: sessionStorage.getItem("capgraph-key") }));
}

// The threads the tests made, by name, to come back to.
const threads = {};

// The server's configured zone (webenv_test.go) and its 24-hour clock, as
// the page must show times: never the browser's zone or a 12-hour clock.
const ZONE = "Europe/Berlin";
function zoned(ms) {
  const f = {};
  for (const p of new Intl.DateTimeFormat("en-GB", { timeZone: ZONE, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit" }).formatToParts(new Date(ms))) f[p.type] = p.value;
  return { stamp: `${f.year}-${f.month}-${f.day} ${f.hour}:${f.minute}:${f.second}`, clock: `${f.hour}:${f.minute}:${f.second}` };
}
const seconds = (hms) => hms.split(":").reduce((a, x) => a * 60 + Number(x), 0);
const TWELVE_HOUR = /\b\d{1,2}:\d\d(:\d\d)?\s?(am|pm)\b/i;


test("the page asks, shows the plan, each step and the answer", run("answer", async () => {
  const resp = await page.goto(url + "/");
  assert.match(resp.headers()["content-security-policy"], /script-src 'self'; .*connect-src 'self'/);
  // Without a key the server refuses: one message, the key field open.
  await page.locator("#key-message").waitFor();
  assert.match(await page.textContent("#key-message"), /needs an API key/);
  await page.fill("#key", key);
  await page.click("#key-save");
  // The key stays in this tab only: sessionStorage, not localStorage.
  assert.deepEqual(await storedKeys(page), { local: null, session: key });
  const examples = page.locator("#examples .example");
  await examples.first().waitFor();
  assert.deepEqual(await examples.allTextContents(), ["What is the beam current?", "Set the Q1 current to 105 A"]);
  // The server's write switch, and a favicon.
  assert.match(await page.textContent("#writes"), /Writes enabled/);
  assert.equal(await page.getAttribute('link[rel="icon"]', "href"), "favicon.svg");
  await shot(page, "examples");
  await examples.first().click();
  const turn = await answered(page, "What is the beam current?");
  assert.equal(await page.locator("#examples").count(), 0);
  assert.match(await turn.locator(".assistant").innerText(), /beam current is 401\.5 mA/);
  // The URL names the thread; the thread list has it, titled by the question.
  const id = await currentThread(page);
  assert.ok(id.length > 10, "the URL names the thread: " + (await page.evaluate(() => location.hash)));
  await page.locator(`#thread-list [data-thread-id="${id}"]`, { hasText: "What is the beam current?" }).waitFor();
  // Every plan step ends with its mark, respond too.
  const steps = turn.locator(".plan > .step");
  assert.equal(await steps.count(), 2);
  assert.deepEqual(await steps.evaluateAll((ls) => ls.map((l) => [l.dataset.capability, l.dataset.status])), [["read_beam_current", "done"], ["respond", "done"]]);
  // A step expands to its output (the context data) and its attempts.
  await turn.locator("summary").first().click();
  await steps.first().locator(".step-head").click();
  const body = steps.first().locator(".step-body");
  assert.match(await body.innerText(), /BEAM_CURRENT/);
  assert.match(await body.innerText(), /401\.5/);
  assert.equal(await body.locator("table.attempts tbody tr").count(), 1);
  // The timeline has the infrastructure nodes and the step.
  const rows = await turn.locator(".tl-row").evaluateAll((rs) => rs.map((r) => r.dataset.node));
  for (const n of ["task_extraction", "classifier", "orchestrator", "read_beam_current", "respond"]) assert.ok(rows.includes(n), "timeline lacks " + n + ": " + rows);
  // Copy the answer.
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: url });
  await turn.locator(".assistant .copy").click();
  assert.match(await page.evaluate(() => navigator.clipboard.readText()), /401\.5 mA/);
  await shot(page, "answer");
}));

test("Markdown is rendered, and nothing in it runs or loads", run("markdown", async () => {
  await newChat(page);
  await ask(page, "Show the beam current as a table");
  const turn = await answered(page, "as a table");
  const answer = turn.locator(".assistant .md");
  assert.equal(await answer.locator("strong", { hasText: "readings" }).count(), 1);
  assert.deepEqual(await answer.locator("table tbody tr").evaluateAll((rs) => rs.map((r) => r.cells[0].textContent)), ["SR:DCCT:CURRENT", "SR:DCCT:LIFETIME"]);
  assert.equal(await answer.locator("code", { hasText: "10:32" }).count(), 1);
  const link = answer.locator('a[href="https://archiver.example.org/plot"]');
  assert.equal(await link.getAttribute("target"), "_blank");
  assert.match(await link.getAttribute("rel"), /noopener/);
  // The model's reasoning is not shown; its HTML is shown as text, neither
  // run nor loaded; an image from elsewhere is a link, not a request.
  assert.doesNotMatch(await answer.innerText(), /think|The user wants/);
  assert.match(await answer.innerText(), /<script>document\.body\.dataset\.pwned=1<\/script>/);
  assert.equal(await page.locator("#chat script").count(), 0);
  assert.equal(await page.locator("#chat img").count(), 0);
  assert.equal(await answer.locator('a[href="https://tracker.example.org/plot.png"]', { hasText: "lifetime plot" }).count(), 1);
  assert.equal(await page.evaluate(() => document.body.dataset.pwned), undefined);
  // The timeline shows the model call under respond.
  await turn.locator(".activity > summary").click();
  assert.match(await turn.locator('.tl-row[data-node="respond"]').innerText(), /LLM call/);
  await shot(page, "markdown");
}));

test("an error report is an error card built from its fields", run("error-card", async () => {
  await newChat(page);
  await ask(page, "What is the vacuum gauge pressure?");
  const turn = await answered(page, "vacuum gauge");
  threads.error = await currentThread(page);
  const card = turn.locator(".error-card");
  assert.equal(await card.getAttribute("data-severity"), "critical");
  const text = await card.innerText();
  assert.match(text, /could not be completed/);
  assert.match(text, /You asked\s+What is the vacuum gauge pressure\?/);
  assert.match(text, /gauge controller of sector 5 does not answer/);
  assert.ok(await card.locator(".suggestions li").count() > 0, "no suggestions");
  assert.doesNotMatch(text, /\*\*|⚠️/, "the card shows fields, not the Markdown");
  // The failed step says where the turn went: the error report.
  const step = turn.locator('.step[data-capability="read_vacuum_gauge"]');
  assert.equal(await step.getAttribute("data-status"), "failed");
  await step.locator(".step-head").click();
  assert.match(await step.locator("table.attempts").innerText(), /error report/);
  await card.scrollIntoViewIfNeeded();
  await shot(page, "error-card");
}));

test("a failed attempt shows its error, the delay and the retry", run("retry", async () => {
  await newChat(page);
  await ask(page, "How did the beam lifetime change in the last hour?");
  const turn = await answered(page, "beam lifetime");
  const step = turn.locator('.step[data-capability="read_lifetime_archive"]');
  assert.equal(await step.getAttribute("data-status"), "done");
  await turn.locator(".activity > summary").click();
  await step.locator(".step-head").click();
  const rows = await step.locator("table.attempts tbody tr").evaluateAll((rs) => rs.map((r) => [...r.cells].map((c) => c.textContent.trim())));
  assert.equal(rows.length, 2, JSON.stringify(rows));
  assert.match(rows[0][3], /deadline exceeded/);
  // The wait the retry event announced: the policy's 300 ms less the time
  // the failure took to record.
  const wait = Number((/^retried after (\d+) ms$/.exec(rows[0][4]) || [])[1]);
  assert.ok(wait >= 250 && wait <= 300, "route: " + rows[0][4]);
  assert.match(rows[1][3], /ok/);
  // When each attempt started: on the server zone's 24-hour clock.
  const now = seconds(zoned(Date.now()).clock);
  for (const r of rows) {
    assert.match(r[1], /^\d\d:\d\d:\d\d$/, "started: " + r[1]);
    assert.ok(((now - seconds(r[1])) % 86400 + 86400) % 86400 < 120, `started ${r[1]}, now ${zoned(Date.now()).clock} in ${ZONE}`);
  }
  await step.scrollIntoViewIfNeeded();
  await shot(page, "steps");
}));

test("reload during a pending approval, approve, readback shown", run("approval", async () => {
  await newChat(page);
  await ask(page, "Set the Q1 current to 105 A");
  const card = page.locator("[data-approval-id]").last();
  await card.waitFor();
  assert.equal(await card.getAttribute("data-state"), "pending");
  assert.match(await card.innerText(), /set Q1 to 105 A/);
  const id = await currentThread(page);
  threads.approval = id;
  await page.locator(`#thread-list [data-thread-id="${id}"] .badge.waiting`).waitFor();
  // A reload shows the same approval, and so does a second browser.
  await open(page, id);
  const again = page.locator(`[data-approval-id][data-state="pending"]`);
  await again.waitFor();
  assert.equal(await currentThread(page), id);
  const other = await browser.newContext();
  const p2 = await other.newPage();
  watch(p2);
  await withKey(p2);
  await open(p2, id);
  await p2.locator(`[data-approval-id][data-state="pending"]`).waitFor();
  await other.close();
  await shot(page, "approval");
  await again.locator("button.approve").click();
  const done = page.locator(`[data-approval-id][data-state="approved"]`);
  await done.waitFor();
  assert.match(await done.innerText(), /Approved by alice at \d/);
  const turn = await answered(page, "Set the Q1 current");
  assert.match(await turn.locator(".assistant").innerText(), /Q1 from 92 → 105 A/);
  assert.equal(await turn.locator('.step[data-capability="set_q1"]').getAttribute("data-status"), "done");
  // Reloaded, the card still says who approved.
  await open(page, id);
  await page.locator(`[data-approval-id][data-state="approved"]`, { hasText: "Approved by alice" }).waitFor();
  await shot(page, "approved");
}));

test("an approval ends Rejected, or Expired when nobody answered in time", run("approval-ends", async () => {
  await newChat(page);
  await ask(page, "Set the Q1 current to 99 A");
  const card = page.locator("[data-approval-id]").last();
  await card.waitFor();
  await card.locator("button.reject").click();
  await page.locator('[data-approval-id][data-state="rejected"]', { hasText: "Rejected by alice at" }).waitFor();
  const turn = await answered(page, "to 99 A");
  assert.equal(await turn.locator(".assistant").getAttribute("data-kind"), "rejected");
  assert.match(await turn.locator(".assistant").innerText(), /Nothing was done/);
  // A pending approval seen after its expiry has no buttons and says so.
  await newChat(page);
  await ask(page, "Set the Q1 current to 98 A");
  await page.locator('[data-approval-id][data-state="pending"]').waitFor();
  const id = await currentThread(page);
  const later = await browser.newContext();
  const p2 = await later.newPage();
  watch(p2);
  await p2.clock.setSystemTime(Date.now() + 2 * 3600 * 1000);
  await withKey(p2);
  await open(p2, id);
  const expired = p2.locator('[data-approval-id][data-state="expired"]');
  await expired.waitFor();
  assert.match(await expired.innerText(), /Expired — no answer came in time; nothing was done/);
  assert.equal(await expired.locator("button.approve").isVisible(), false);
  await shot(p2, "expired");
  await later.close();
  // A new question instead of an answer cancels the approval: nothing is
  // written, and no card is left waiting.
  await ask(page, "What is the beam current?");
  await answered(page, "What is the beam current?");
  await page.locator(`#chat[data-loaded="${id}"]`).waitFor({ state: "attached" });
  assert.equal(await page.locator('[data-approval-id][data-state="pending"]').count(), 0);
  await page.locator(`#thread-list [data-thread-id="${id}"]:not([data-status="interrupted"])`).waitFor();
}));

test("stop cancels a slow run", run("stop", async () => {
  await newChat(page);
  await ask(page, "Run a slow orbit scan");
  await page.locator('.step[data-capability="slow_scan"][data-status="running"]').waitFor();
  // A reload attaches to the run again, from its events; Stop comes back.
  await open(page, await currentThread(page));
  const turn = page.locator("article.turn").last();
  await turn.locator('.step[data-capability="slow_scan"][data-status="running"]').waitFor();
  await turn.locator('.tl-row[data-node="classifier"]').waitFor();
  await page.click("#stop");
  await turn.locator(".turn-note", { hasText: "Stopped" }).waitFor();
  await page.locator("#send").waitFor();
  const id = await currentThread(page);
  const th = await page.evaluate(async ([id, key]) => (await fetch("api/threads/" + encodeURIComponent(id), { headers: { Authorization: "Bearer " + key } })).json(), [id, key]);
  assert.equal(th.status, "canceled");
  await shot(page, "stopped");
}));

test("threads: switch, rename, delete; the URL names the thread", run("threads", async () => {
  page.once("dialog", (d) => d.accept());
  const items = page.locator("#thread-list [data-thread-id]");
  assert.ok(await items.count() >= 5, "threads listed: " + (await items.count()));
  const current = await currentThread(page);
  // Switch to the first question's thread.
  await items.filter({ hasText: "What is the beam current?" }).first().locator(".thread-link").click();
  await page.locator("article.turn .msg.user", { hasText: "What is the beam current?" }).waitFor();
  assert.notEqual(await currentThread(page), current);
  // Rename it; the title survives a reload.
  const id = await currentThread(page);
  await page.locator(`#thread-list [data-thread-id="${id}"] .rename`).click();
  await page.fill(".rename-input", "Beam current — morning shift");
  await page.press(".rename-input", "Enter");
  await page.locator(`#thread-list [data-thread-id="${id}"]`, { hasText: "morning shift" }).waitFor();
  await open(page, id);
  await page.locator(`#thread-list [data-thread-id="${id}"]`, { hasText: "Beam current — morning shift" }).waitFor();
  await shot(page, "threads");
  // Delete it: gone from the list and from the server.
  await page.locator(`#thread-list [data-thread-id="${id}"] .delete`).click();
  await page.locator(`#thread-list [data-thread-id="${id}"]`).waitFor({ state: "detached" });
  assert.equal(await currentThread(page), "");
  const status = await page.evaluate(async ([id, key]) => (await fetch("api/threads/" + encodeURIComponent(id), { headers: { Authorization: "Bearer " + key } })).status, [id, key]);
  assert.equal(status, 404);
}));

// askHistory asks the history question (read_rf_history returns the
// archive as a time series and a table) and returns the turn.
async function askHistory(p) {
  await ask(p, "Show me the RF cavity voltage over the last 2 hours");
  return answered(p, "RF cavity voltage");
}

test("a time series is drawn with the archived points of each channel", run("history", async () => {
  await newChat(page);
  const turn = await askHistory(page);
  const chart = turn.locator('.artifact[data-kind="timeseries"]');
  assert.equal(await chart.getAttribute("data-series"), String(HISTORY_CHANNELS.length));
  assert.equal(await chart.getAttribute("data-points"), String(HISTORY_CHANNELS.length * HISTORY_POINTS));
  // uPlot drew every channel; the legend names each in full, with units.
  assert.equal(await chart.locator(".chart canvas").count(), 1);
  const labels = await chart.locator(".u-legend .u-series .u-label").allTextContents();
  assert.deepEqual(labels.slice(1), HISTORY_CHANNELS);
  assert.deepEqual(await chartOf(chart), { series: HISTORY_CHANNELS, points: HISTORY_CHANNELS.map(() => HISTORY_POINTS), units: ["kV"] });
  // Hovering shows the values with their units; dragging zooms.
  const box = await chart.locator(".u-over").boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const values = await chart.locator(".u-legend .u-series .u-value").allTextContents();
  assert.ok(values.slice(1).every((v) => / kV$/.test(v)), "hover values: " + values);
  const before = await chart.evaluate((c) => c.querySelector(".chart").uplot.scales.x.max - c.querySelector(".chart").uplot.scales.x.min);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.8, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  const zoomed = await chart.evaluate((c) => c.querySelector(".chart").uplot.scales.x.max - c.querySelector(".chart").uplot.scales.x.min);
  assert.ok(zoomed < before * 0.6, `zoom: ${zoomed} of ${before}`);
  // The points themselves, as a table.
  await chart.locator(".points > summary").click();
  await chart.locator(".points table tbody tr").first().waitFor();
  assert.equal(await chart.locator(".points table tbody tr").count(), HISTORY_POINTS);
  // The table artifact.
  const table = turn.locator('.artifact[data-kind="table"]');
  assert.deepEqual(await table.locator("thead th").allTextContents(), ["Channel", "Value (kV)", "Time"]);
  assert.equal(await table.locator("tbody tr").count(), HISTORY_CHANNELS.length);
  // The run's events drew it; after a reload the thread's state does.
  const id = await currentThread(page);
  threads.history = id;
  await open(page, id);
  const again = page.locator('.artifact[data-kind="timeseries"]');
  assert.deepEqual(await chartOf(again), { series: HISTORY_CHANNELS, points: HISTORY_CHANNELS.map(() => HISTORY_POINTS), units: ["kV"] });
  assert.equal(await page.locator('.artifact[data-kind="table"] tbody tr').count(), HISTORY_CHANNELS.length);
  await again.scrollIntoViewIfNeeded();
  await shot(page, "history");
}));

test("the application's name, logo and clock; a /v1 conversation titled by its question", run("identity", async () => {
  // The name and logo configured for the server, and the zone of its clock.
  await open(page, threads.history);
  assert.equal(await page.locator("#app-name").textContent(), "Control Room");
  assert.equal(await page.title(), "Control Room");
  assert.match(await page.locator("#app-logo").getAttribute("src"), /^logo$/);
  assert.ok(await page.locator("#app-logo").evaluate((img) => img.complete && img.naturalWidth > 0), "the logo loads");
  assert.equal((await page.locator("#zone").textContent()).trim(), ZONE);
  // The archived points: their times in that zone, ISO, 24-hour.
  const kept = await page.evaluate(async ([id, k]) => (await fetch("api/threads/" + encodeURIComponent(id) + "/artifacts", { headers: { Authorization: "Bearer " + k } })).json(), [threads.history, key]);
  const series = kept.artifacts.find((a) => a.kind === "timeseries").timeseries.series;
  const chart = page.locator('.artifact[data-kind="timeseries"]');
  await chart.locator(".points > summary").click();
  await chart.locator(".points table tbody tr").first().waitFor();
  assert.equal(await chart.locator(".points table thead th").first().textContent(), "time (" + ZONE + ")");
  const first = await chart.locator(".points table tbody tr").first().locator("td, th").first().textContent();
  assert.equal(first, zoned(series[0].times_ms[0]).stamp);
  // The legend's time under the cursor, and the axis labels uPlot drew.
  const box = await chart.locator(".u-over").boundingBox();
  await page.mouse.move(box.x + box.width / 3, box.y + box.height / 2);
  assert.match(await chart.locator(".u-legend .u-series").first().locator(".u-value").textContent(), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  const ticks = await chart.evaluate((c) => { const u = c.querySelector(".chart").uplot; return u.axes[0]._values || []; });
  assert.ok(ticks.length > 0 && ticks.every((v) => /^\d\d:\d\d(\n\d{4}-\d\d-\d\d)?$/.test(v)), "axis labels: " + JSON.stringify(ticks));
  assert.doesNotMatch(await page.locator("body").innerText(), TWELVE_HOUR);
  // A conversation started through /v1 is listed under its first question.
  const r = await page.evaluate(async (k) => (await fetch("v1/chat/completions", { method: "POST", headers: { Authorization: "Bearer " + k, "Content-Type": "application/json" },
    body: JSON.stringify({ model: "capgraph", messages: [{ role: "user", content: "What is the beam current, asked from a chat client?" }] }) })).status, key);
  assert.equal(r, 200);
  await page.reload();
  const item = page.locator("#thread-list [data-thread-id]", { hasText: "What is the beam current, asked from a chat client?" });
  await item.waitFor({ state: "attached" });
  assert.match(await item.getAttribute("data-thread-id"), /^chat-/);
  assert.doesNotMatch(await page.locator("#thread-list").innerText(), /Conversation chat-/);
  await chart.scrollIntoViewIfNeeded();
  await shot(page, "identity");
}));

test("390 px wide: no horizontal scroll, panels behind toggles, channel names whole", run("mobile", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await open(page, threads.error);
  await page.locator(".error-card").waitFor();
  const overflow = () => page.evaluate(() => ({ doc: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    chat: document.querySelector("#chat").scrollWidth - document.querySelector("#chat").clientWidth }));
  assert.deepEqual(await overflow(), { doc: 0, chat: 0 });
  assert.equal(await page.locator("#threads").isVisible(), false, "the thread list is behind its toggle");
  await page.click("#threads-toggle");
  assert.equal(await page.locator("#threads").isVisible(), true);
  await shot(page, "mobile-threads");
  await page.keyboard.press("Escape");
  assert.equal(await page.locator("#threads").isVisible(), false);
  await page.locator(".error-card").scrollIntoViewIfNeeded();
  await shot(page, "mobile-error");
  // A chart with its legend and a table fit too, channel names whole.
  await newChat(page);
  const turn = await askHistory(page);
  await turn.locator(".activity > summary").click();
  for (const b of await turn.locator(".step-head").all()) await b.click();
  const cut = await page.evaluate(() => [...document.querySelectorAll("#chat .step-cap, #chat .u-label, #chat td, #chat .step-obj")]
    .filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent));
  assert.deepEqual(cut, [], "text cut off");
  const legend = await turn.locator(".u-legend .u-label").allTextContents();
  assert.deepEqual(legend.slice(1), HISTORY_CHANNELS);
  assert.deepEqual(await overflow(), { doc: 0, chat: 0 });
  await turn.locator(".artifact").first().scrollIntoViewIfNeeded();
  await shot(page, "mobile");
  await page.setViewportSize({ width: 1200, height: 900 });
}));

test("dark mode follows the system", run("dark", async () => {
  const dark = await browser.newContext({ viewport: { width: 1200, height: 900 }, colorScheme: "dark" });
  const p = await dark.newPage();
  watch(p);
  await withKey(p);
  await open(p, threads.approval);
  await p.locator("[data-approval-id]").waitFor();
  const lum = (c) => { const [r, g, b] = c.match(/\d+/g).map(Number); return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255; };
  const colors = await p.evaluate(() => ({ bg: getComputedStyle(document.body).backgroundColor, fg: getComputedStyle(document.body).color }));
  assert.ok(lum(colors.bg) < 0.2 && lum(colors.fg) > 0.8, JSON.stringify(colors));
  await p.locator(".activity > summary").click();
  await shot(p, "dark");
  // The chart takes the dark colours too.
  await newChat(p);
  const turn = await askHistory(p);
  const axis = await turn.locator(".chart").evaluate((c) => c.uplot.axes[1].stroke());
  assert.ok(lum(axis.startsWith("#") ? [1, 3, 5].map((i) => parseInt(axis.slice(i, i + 2), 16)).join(",") : axis) > 0.5, "axis colour " + axis);
  await turn.locator(".artifact").first().scrollIntoViewIfNeeded();
  await shot(p, "dark-chart");
  await dark.close();
}));

test("every control is labelled and reachable by keyboard; text meets AA contrast in light and dark", run("a11y", async () => {
  for (const scheme of ["light", "dark"]) {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 }, colorScheme: scheme });
    const p = await ctx.newPage();
    watch(p);
    await withKey(p);
    for (const id of [threads.error, threads.approval]) {
      await open(p, id);
      // A turn that ended in an error report keeps its steps open.
      const act = p.locator(".activity").first();
      if (!(await act.evaluate((d) => d.open))) await act.locator("> summary").click();
      for (const b of await p.locator(".step-head").all()) await b.click();
      assert.deepEqual(await contrastProblems(p), [], scheme + " contrast");
    }
    // Every control has a name a screen reader reads.
    const unnamed = await p.evaluate(() => [...document.querySelectorAll("button, a[href], input, textarea, summary")]
      .filter((e) => e.getClientRects().length)
      .filter((e) => !(e.getAttribute("aria-label") || (e.labels && [...e.labels].some((l) => l.textContent.trim())) || e.textContent.trim() || e.title))
      .map((e) => e.outerHTML.slice(0, 80)));
    assert.deepEqual(unnamed, [], "controls without a name");
    await ctx.close();
  }
  // The keyboard alone: Tab reaches the question box, a step opens with
  // Enter, a thread is renamed without the mouse.
  await open(page, threads.error);
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.className), "skip");
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement.id), "q");
  const activity = page.locator(".activity");
  await activity.locator("> summary").focus();
  if (!(await activity.evaluate((d) => d.open))) await page.keyboard.press("Enter");
  assert.equal(await activity.evaluate((d) => d.open), true);
  const head = page.locator(".step-head").first();
  await head.focus();
  await page.keyboard.press("Enter");
  assert.equal(await head.getAttribute("aria-expanded"), "true");
  assert.equal(await page.locator(".step-body").first().isVisible(), true);
  const rename = page.locator(`#thread-list [data-thread-id="${threads.error}"] .rename`);
  await rename.focus();
  await page.keyboard.press("Enter");
  await page.keyboard.press("Control+A");
  await page.keyboard.type("Gauge 5 down");
  await page.keyboard.press("Enter");
  await page.locator(`#thread-list [data-thread-id="${threads.error}"]`, { hasText: "Gauge 5 down" }).waitFor();
  await shot(page, "a11y");
}));

test("a wrong key is explained once and nothing is resent", run("key", async () => {
  const other = await browser.newContext();
  const p2 = await other.newPage();
  watch(p2);
  const runs = [];
  p2.on("request", (r) => { if (r.method() === "POST" && /\/api\/threads/.test(r.url())) runs.push(r.url()); });
  await p2.goto(url + "/");
  await p2.locator("#key-message").waitFor();
  await p2.fill("#key", "sk-wrong-0123456789");
  await ask(p2, "What is the beam current?");
  await p2.locator("#key-message", { hasText: "refused" }).waitFor();
  // The question was refused, not lost: it is back in the box.
  await p2.waitForFunction(() => document.querySelector("#q").value === "What is the beam current?");
  assert.equal(await p2.locator("#key-message").count(), 1);
  assert.equal(await p2.locator(".notice.error, .error-card").count(), 0, "one message only");
  assert.equal(await p2.locator("article.turn").count(), 0);
  await shot(p2, "key");
  // The right key: nothing is sent by itself.
  await p2.fill("#key", key);
  await p2.click("#key-save");
  await p2.locator("#keybar").waitFor({ state: "hidden" });
  await p2.waitForTimeout(300);
  assert.equal(runs.length, 1, "requests: " + runs);
  await other.close();
}));

test("the key is remembered only when asked", run("remember", async () => {
  // A reload keeps it for this tab.
  await page.reload();
  assert.equal(await page.inputValue("#key"), key);
  assert.equal(await page.isChecked("#remember"), false);
  // A new tab (same browser profile) does not have it.
  const p2 = await context.newPage();
  watch(p2);
  await p2.goto(url + "/");
  assert.equal(await p2.inputValue("#key"), "");
  // Ticked: in localStorage, so a new tab has it too.
  await page.click("#key-toggle");
  await page.check("#remember");
  assert.deepEqual(await storedKeys(page), { local: key, session: null });
  await p2.reload();
  assert.equal(await p2.inputValue("#key"), key);
  assert.equal(await p2.isChecked("#remember"), true);
  // Unticked: gone from localStorage again.
  await p2.click("#key-toggle");
  await p2.uncheck("#remember");
  assert.deepEqual(await storedKeys(p2), { local: null, session: key });
  const p3 = await context.newPage();
  await p3.goto(url + "/");
  assert.equal(await p3.inputValue("#key"), "");
  await p2.close();
  await p3.close();
}));
