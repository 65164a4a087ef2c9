// No browser acts for the operator (docs/safety.md), in Debian Chromium:
// an attacker's page on another site (evil.example) and a DNS-rebinding page
// (rebind.evil.example, at the server's own port) try to make the browser
// change something on the server. Run by demo/controlroom's
// TestNoBrowserActsForTheOperator, which serves the attacker's page
// (ATTACKER_URL) and checks afterwards, in the store, that nothing changed;
// here the browser side: the pages ran every attempt, what needs a
// preflight was stopped there, and the rebinding page read nothing.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const server = new URL(process.env.CAPGRAPH_URL);
const attacker = new URL(process.env.ATTACKER_URL);
const approvalID = process.env.APPROVAL_ID;

let browser, ctx;

before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
      // The attacker's names, pointed at this machine as their DNS would.
      "--host-resolver-rules=MAP evil.example 127.0.0.1, MAP rebind.evil.example 127.0.0.1",
      "--disable-features=HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,LocalNetworkAccessChecks"],
  });
  ctx = await browser.newContext();
});

after(async () => {
  await browser?.close();
});

async function runAttack(page, url) {
  page.setDefaultTimeout(120000);
  await page.goto(url);
  await page.waitForFunction(() => window.attackDone === true);
  return page.evaluate(() => window.report);
}

test("a page of another site changes nothing: no-cors fetches, forms, text/plain", async () => {
  const page = await ctx.newPage();
  const r = await runAttack(page, `http://evil.example:${attacker.port}/`);
  assert.equal(r.mode, "cross-site");
  // 11 requests, each as 4 fetches and 3 forms, and 2 cancels.
  assert.equal(r.attempts, 11 * 7 + 2, JSON.stringify(r));
  // A no-cors fetch resolves (opaquely) whatever the answer; none failed,
  // so every one reached the server (which refused it: the Go side checks).
  // What needs a preflight was never answered.
  assert.deepEqual(r.errors, []);
});

test("a DNS-rebinding page reads nothing and changes nothing", async () => {
  const page = await ctx.newPage();
  const rebindURL = `http://rebind.evil.example:${server.port}/`;
  // The first look-up of rebind.evil.example gave the attacker's server
  // (its page); the next ones give this machine, where the server listens.
  const html = await (await fetch(new URL("/rebind", attacker))).text();
  await page.route(rebindURL, (route) => route.fulfill({ status: 200, contentType: "text/html", body: html }));
  const r = await runAttack(page, rebindURL);
  assert.equal(r.mode, "rebind");
  assert.deepEqual(r.errors, []);
  assert.equal(r.results.length, 7 + 11);
  for (const x of r.results) {
    assert.equal(x.status, 421, JSON.stringify(x));
    assert.equal(x.leaked, false, JSON.stringify(x));
  }
  assert.ok(approvalID.length > 20, "the approval id the page knew");
});
