// Drives the built-in page (GET /) in Debian Chromium through playwright-core.
// Run by server/node_test.go (TestWebPage) with CAPGRAPH_URL, CAPGRAPH_KEY,
// CHROMIUM and SCREENSHOT_DIR set.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const url = process.env.CAPGRAPH_URL;
const key = process.env.CAPGRAPH_KEY;
let browser, context, page;

before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
  context = await browser.newContext(); // one profile: its tabs share localStorage
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  watchCSP(page);
});

// Every Content-Security-Policy violation of a page (an inline script, a
// request elsewhere) is collected; the page must have none.
const violations = [];
function watchCSP(p) {
  p.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
  p.on("pageerror", (e) => { if (/Content Security Policy/i.test(e.message)) violations.push(e.message); });
}

after(async () => {
  await browser?.close();
  assert.deepEqual(violations, [], "CSP violations");
});

async function shot(name) {
  if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png`, fullPage: true });
}

test("the page asks, shows the plan and the answer", async (t) => {
  try {
    const resp = await page.goto(url + "/");
    assert.match(resp.headers()["content-security-policy"], /script-src 'self'; .*connect-src 'self'/);
    await page.fill("#key", key);
    await page.dispatchEvent("#key", "change");
    // The key stays in this tab only: sessionStorage, not localStorage.
    assert.deepEqual(await storedKeys(page), { local: null, session: key });
    // An empty chat offers the server's demo questions; one click asks.
    const examples = page.locator("#examples .example");
    await examples.first().waitFor();
    assert.deepEqual(await examples.allTextContents(), ["What is the beam current?", "write 1.5 A to SR:HCM1"]);
    await shot("examples");
    await examples.first().click();
    await page.waitForSelector('.assistant[data-done="1"]');
    assert.equal(await page.locator("#examples").count(), 0);
    assert.equal(await page.textContent(".user"), "What is the beam current?");
    assert.equal(await page.textContent(".assistant"), "Beam current is 500 mA.");
    await page.waitForFunction(() => [...document.querySelectorAll("#plan li")].every((li) => li.dataset.status === "done"));
    assert.equal(await page.locator("#plan li").count(), 2);
    assert.ok((await page.locator("#steps li").count()) >= 3);
    await shot("answer");
  } catch (e) { await shot("answer-failed"); throw e; }
});

test("approval buttons resume the run", async () => {
  try {
    await page.fill("#q", "write 1.5 A to SR:HCM1");
    await page.click("#send");
    const card = page.locator('[data-approval-id="approval-1"]');
    await card.waitFor();
    assert.match(await card.textContent(), /SR:HCM1/);
    await shot("approval");
    await card.locator("button.approve").click();
    await page.waitForSelector('.assistant[data-done="1"]:has-text("SR:HCM1 is now 1.5 A.")');
    await shot("approved");
  } catch (e) { await shot("approval-failed"); throw e; }
});

async function storedKeys(p) {
  return p.evaluate(() => ({ local: localStorage.getItem("capgraph-key"), session: sessionStorage.getItem("capgraph-key") }));
}

test("the key is remembered only when asked", async () => {
  // A reload keeps it for this tab.
  await page.reload();
  assert.equal(await page.inputValue("#key"), key);
  assert.equal(await page.isChecked("#remember"), false);
  // A new tab (same browser profile) does not have it.
  const p2 = await context.newPage();
  watchCSP(p2);
  await p2.goto(url + "/");
  assert.equal(await p2.inputValue("#key"), "");
  // Ticked: in localStorage, so a new tab has it too.
  await page.check("#remember");
  assert.deepEqual(await storedKeys(page), { local: key, session: null });
  await p2.reload();
  assert.equal(await p2.inputValue("#key"), key);
  assert.equal(await p2.isChecked("#remember"), true);
  // Unticked: gone from localStorage again.
  await p2.uncheck("#remember");
  assert.deepEqual(await storedKeys(p2), { local: null, session: key });
  const p3 = await context.newPage();
  await p3.goto(url + "/");
  assert.equal(await p3.inputValue("#key"), "");
  await p2.close();
  await p3.close();
});

test("a wrong key is explained", async () => {
  const p2 = await browser.newPage();
  watchCSP(p2);
  await p2.goto(url + "/");
  await p2.fill("#key", "sk-wrong");
  await p2.fill("#q", "hello");
  await p2.click("#send");
  await p2.waitForSelector(".error");
  assert.match(await p2.textContent(".error"), /API key/);
  await p2.close();
});
