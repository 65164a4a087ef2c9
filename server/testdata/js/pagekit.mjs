// Helpers of the page's browser tests (web.test.mjs, controlroom.test.mjs):
// Debian's Chromium through playwright-core, and what a user does on the
// page, as functions of a page.
import { chromium } from "playwright-core";

export const url = process.env.CAPGRAPH_URL;
export const key = process.env.CAPGRAPH_KEY;

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
}

// Every Content-Security-Policy violation (an inline script, a request
// elsewhere) and every uncaught error of a watched page is collected in
// violations; a test file asserts at its end that there are none.
export const violations = [];
export function watch(p) {
  p.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
  p.on("pageerror", (e) => violations.push("page error: " + e.message));
  return p;
}

// shot saves a screenshot of p as SCREENSHOT_DIR/<name>.png.
export async function shot(p, name) {
  if (process.env.SCREENSHOT_DIR) await p.screenshot({ path: `${process.env.SCREENSHOT_DIR}/${name}.png`, fullPage: false });
}

export async function withKey(p, k = key) {
  await p.goto(url + "/");
  await p.fill("#key", k);
  await p.click("#key-save");
  await p.locator("#keybar").waitFor({ state: "hidden" });
}

export async function ask(p, question) {
  await p.fill("#q", question);
  await p.click("#send");
}

// answered waits for the turn of question to end and returns its article.
export async function answered(p, question) {
  const turn = p.locator("article.turn", { has: p.locator(".msg.user", { hasText: question }) }).last();
  await turn.locator('.assistant[data-done="1"]').waitFor();
  await p.locator("#stop").waitFor({ state: "hidden" });
  return turn;
}

// open shows thread id in p, from a fresh load of the page, and waits
// until the page has loaded it whole.
export async function open(p, id) {
  await p.goto(url + "/#/t/" + encodeURIComponent(id));
  await p.reload();
  await p.locator(`#chat[data-loaded="${id}"]`).waitFor({ state: "attached" });
}

// newChat starts a new conversation (a new thread on the first question).
export async function newChat(p) {
  if (!(await p.locator("#new").isVisible())) await p.click("#threads-toggle");
  await p.click("#new");
  await p.locator("#examples").waitFor();
}

export const currentThread = (p) => p.evaluate(() => decodeURIComponent((/^#\/t\/(.+)$/.exec(location.hash) || [])[1] || ""));

// chartOf reads a time-series artifact's chart: the channels in its legend,
// the points uPlot draws for each, and the x range shown.
export function chartOf(artifact) {
  return artifact.evaluate((a) => {
    const charts = [...a.querySelectorAll(".chart")].map((c) => c.uplot);
    return {
      series: charts.flatMap((u) => u.series.slice(1).map((s) => s.label)),
      points: charts.flatMap((u) => u.data.slice(1).map((d) => d.filter((v) => v !== null).length)),
      units: charts.map((u) => u.axes[1].label),
    };
  });
}

export // contrastProblems lists the visible texts whose colour on their background
// is below WCAG AA (4.5:1, 3:1 for large text); disabled controls are exempt.
function contrastProblems(p) {
  return p.evaluate(() => {
    const parse = (c) => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return null;
      const [r, g, b, a = 1] = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return { r, g, b, a };
    };
    const lum = ({ r, g, b }) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const bgOf = (el) => {
      for (let e = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c && c.a > 0.9) return c;
      }
      return parse(getComputedStyle(document.documentElement).backgroundColor) || { r: 255, g: 255, b: 255 };
    };
    const out = [];
    for (const e of document.querySelectorAll("body *")) {
      if (!e.getClientRects().length || e.closest("[disabled], [hidden], .visually-hidden, .uplot canvas")) continue;
      if (![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
      const cs = getComputedStyle(e);
      if (cs.visibility === "hidden") continue;
      const ratio = ((a, b) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05))(lum(parse(cs.color)), lum(bgOf(e)));
      const size = parseFloat(cs.fontSize), bold = Number(cs.fontWeight) >= 700;
      const need = size >= 24 || (size >= 18.66 && bold) ? 3 : 4.5;
      if (ratio < need) out.push(`${e.tagName.toLowerCase()}.${e.className} "${e.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}`);
    }
    return out;
  });
}

