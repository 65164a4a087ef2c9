// Drives the built-in page (GET /) in Debian Chromium through playwright-core.
// Run by server/node_test.go (TestWebPage) with CAPGRAPH_URL, CAPGRAPH_KEY,
// CHROMIUM and SCREENSHOT_DIR set.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const url = process.env.CAPGRAPH_URL;
const key = process.env.CAPGRAPH_KEY;
let browser, page;

before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
  page = await browser.newPage();
  page.setDefaultTimeout(15000);
});

after(async () => { await browser?.close(); });

async function shot(name) {
  if (process.env.SCREENSHOT_DIR) await page.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png`, fullPage: true });
}

test("the page asks, shows the plan and the answer", async (t) => {
  try {
    await page.goto(url + "/");
    await page.fill("#key", key);
    await page.dispatchEvent("#key", "change");
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

test("a wrong key is explained", async () => {
  const p2 = await browser.newPage();
  await p2.goto(url + "/");
  await p2.evaluate(() => localStorage.removeItem("capgraph-key"));
  await p2.fill("#key", "sk-wrong");
  await p2.fill("#q", "hello");
  await p2.click("#send");
  await p2.waitForSelector(".error");
  assert.match(await p2.textContent(".error"), /API key/);
  await p2.close();
});
