// Artifacts a step returned beside its context data (docs/frontends.md,
// "Artifacts"): a time series drawn with uPlot (vendor/uPlot.iife.min.js:
// drag to zoom, double-click to reset, hover values in the legend, one
// chart per unit so every axis has its units), an x–y series (a scan, a
// profile: one chart, both axes labelled with their units), a table, a
// figure, a link.
// Every artifact also offers its numbers as a table, so the archived points
// are readable without the chart.
import { el, icon } from "./icons.js";
import { clock, date, stamp, timeZone } from "./time.js";

const charts = new Set(); // live charts, redrawn when the colour scheme changes

// artifactView returns the element showing artifact a.
export function artifactView(a) {
  const box = el("figure", { class: "artifact artifact-" + (a.kind || "unknown"), dataset: { artifactId: a.id || "", kind: a.kind || "" } });
  const title = a.title || defaultTitle(a);
  box.appendChild(el("figcaption", {}, icon(kindIcon(a.kind)), el("span", { text: title }),
    a.capability ? el("span", { class: "muted", text: " · " + a.capability }) : null));
  if (a.omitted) {
    box.appendChild(el("p", { class: "note", text: "Not shown: " + a.omitted }));
    return box;
  }
  try {
    switch (a.kind) {
      case "timeseries": timeSeries(box, a.timeseries, title); break;
      case "xy": xySeries(box, a.xy, title); break;
      case "table": box.appendChild(tableView(a.table, title)); break;
      case "figure": figure(box, a.figure, title); break;
      case "link": box.appendChild(el("a", { href: safeURL(a.link && a.link.url), target: "_blank", rel: "noopener noreferrer", text: (a.link && a.link.url) || "" })); break;
      default: box.appendChild(el("p", { class: "note", text: "This page cannot show an artifact of kind " + JSON.stringify(a.kind) + "." }));
    }
  } catch (e) {
    box.appendChild(el("p", { class: "note", text: "This artifact could not be shown: " + e.message }));
  }
  return box;
}

function defaultTitle(a) {
  return { timeseries: "Time series", xy: "Scan", table: "Table", figure: "Figure", link: "Link" }[a.kind] || "Result";
}

function kindIcon(kind) {
  return { timeseries: "chart", xy: "chart", table: "table", link: "link" }[kind] || "info";
}

function safeURL(u) {
  return /^https?:\/\//i.test(u || "") ? u : "#";
}

function figure(box, f, title) {
  if (!f) return;
  if (f.data && /^image\/(png|jpeg|gif|webp|svg\+xml)$/.test(f.media_type || "")) {
    box.appendChild(el("img", { src: "data:" + f.media_type + ";base64," + f.data, alt: f.alt || title }));
  } else if (f.url) {
    // The page loads images only from this server: a figure elsewhere is a link.
    box.appendChild(el("a", { href: safeURL(f.url), target: "_blank", rel: "noopener noreferrer", text: "Open the figure" + (f.alt ? ": " + f.alt : "") }));
  }
}

// ---- tables ----

function cellText(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "boolean") return v ? "yes" : "no";
  return String(v);
}

// tableView renders {columns: [{name, units}], rows: [[…]]}; a column's
// header sorts by it (numbers as numbers).
export function tableView(t, caption) {
  const table = el("table", { class: "data" });
  if (caption) table.appendChild(el("caption", { class: "visually-hidden", text: caption }));
  const cols = (t && t.columns) || [];
  let rows = ((t && t.rows) || []).slice();
  const numeric = cols.map((_, j) => rows.length > 0 && rows.every((r) => r[j] === null || typeof r[j] === "number"));
  const head = el("tr");
  const tbody = el("tbody");
  let sorted = -1, dir = 1;
  const fill = () => {
    tbody.replaceChildren(...rows.map((r) => el("tr", {}, ...cols.map((_, j) => el("td", { class: numeric[j] ? "num" : null, text: cellText(r[j]) })))));
  };
  cols.forEach((c, j) => {
    const th = el("th", { scope: "col", class: numeric[j] ? "num" : null });
    const b = el("button", { type: "button", class: "sort", text: c.name + (c.units ? " (" + c.units + ")" : "") });
    b.addEventListener("click", () => {
      dir = sorted === j ? -dir : 1;
      sorted = j;
      rows.sort((x, y) => {
        const a = x[j], z = y[j];
        if (a === z) return 0;
        if (a === null || a === undefined) return 1;
        if (z === null || z === undefined) return -1;
        return (numeric[j] ? a - z : String(a).localeCompare(String(z))) * dir;
      });
      for (const h of head.children) h.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
      fill();
    });
    th.appendChild(b);
    head.appendChild(th);
  });
  table.appendChild(el("thead", {}, head));
  fill();
  table.appendChild(tbody);
  return el("div", { class: "table-scroll" }, table);
}

// ---- time series ----

// groups splits the series by units: one chart, one y axis, per unit.
function groups(series) {
  const by = new Map();
  for (const s of series) {
    const u = s.units || "";
    if (!by.has(u)) by.set(u, []);
    by.get(u).push(s);
  }
  return [...by.entries()];
}

function timeSeries(box, ts, title) {
  const series = ((ts && ts.series) || []).filter((s) => Array.isArray(s.times_ms) && Array.isArray(s.values));
  const points = series.reduce((n, s) => n + s.values.length, 0);
  box.dataset.series = String(series.length);
  box.dataset.points = String(points);
  for (const [units, ss] of groups(series)) {
    const holder = el("div", { class: "chart", role: "img",
      "aria-label": title + (units ? " in " + units : "") + ": " + ss.map((s) => s.name + " (" + s.values.length + " points)").join(", ") });
    box.appendChild(holder);
    chart(holder, units, ss);
  }
  // The numbers themselves, for reading exact values and for screen readers.
  const details = el("details", { class: "points" }, el("summary", { text: "Data points (" + points + ")" }));
  details.addEventListener("toggle", () => {
    if (!details.open || details.dataset.filled) return;
    details.dataset.filled = "1";
    for (const [units, ss] of groups(series)) details.appendChild(pointsTable(units, ss));
  });
  box.appendChild(details);
}

// aligned joins the series on the union of their times (seconds); a series
// without a sample at a time has null there (the line spans the gap).
function aligned(ss) {
  const times = [...new Set(ss.flatMap((s) => s.times_ms))].sort((a, b) => a - b);
  const at = new Map(times.map((t, i) => [t, i]));
  const cols = ss.map((s) => {
    const col = new Array(times.length).fill(null);
    s.times_ms.forEach((t, i) => { col[at.get(t)] = s.values[i]; });
    return col;
  });
  return [times.map((t) => t / 1000), ...cols];
}

function pointsTable(units, ss) {
  const data = aligned(ss);
  const columns = [{ name: "time (" + timeZone() + ")" }, ...ss.map((s) => ({ name: s.name, units }))];
  const rows = data[0].map((t, i) => [stamp(t * 1000), ...ss.map((_, k) => data[k + 1][i])]);
  return tableView({ columns, rows }, "Data points" + (units ? " in " + units : ""));
}

// timeTicks labels the time axis: hours and minutes on a 24-hour clock,
// with the date where it changes (and alone over spans of days).
function timeTicks(u, splits) {
  const span = splits.length > 1 ? splits[splits.length - 1] - splits[0] : 0;
  let day = "";
  return splits.map((v) => {
    const ms = v * 1000, d = date(ms);
    if (span >= 3 * 86400) return d;
    const hm = clock(ms).slice(0, span < 120 ? 8 : 5);
    if (d === day) return hm;
    day = d;
    return hm + "\n" + d;
  });
}

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

function fmt(v) {
  if (v === null || v === undefined) return "—";
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return Number(v.toPrecision(6)).toString();
}

function chart(holder, units, ss) {
  const data = aligned(ss);
  const build = () => {
    holder.replaceChildren();
    const axis = cssVar("--muted", "#555"), grid = cssVar("--grid", "#e5e7eb");
    const opts = {
      width: Math.max(holder.clientWidth || 320, 240),
      height: 240,
      scales: { x: { time: true } },
      // The axis and the legend in the server's zone, on a 24-hour clock.
      tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), timeZone()),
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      series: [{ label: "time", value: (u, v) => (v == null ? "—" : stamp(v * 1000)) },
        ...ss.map((s, i) => ({ label: s.name, stroke: cssVar("--series-" + (i % 8), "#2563eb"), width: 1.5, spanGaps: true,
          value: (u, v) => fmt(v) + (units && v != null ? " " + units : "") }))],
      axes: [{ stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, values: timeTicks, space: 60 },
        { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label: units || undefined, size: 64,
          values: (u, vals) => vals.map(fmt) }],
    };
    const u = new window.uPlot(opts, data, holder);
    holder.uplot = u;
    return u;
  };
  let u = build();
  const entry = { holder, rebuild: () => { u.destroy(); u = build(); } };
  charts.add(entry);
  if (window.ResizeObserver) {
    let w = holder.clientWidth;
    new ResizeObserver(() => {
      if (!holder.isConnected) return;
      if (Math.abs(holder.clientWidth - w) > 4) {
        w = holder.clientWidth;
        u.setSize({ width: Math.max(w, 240), height: 240 });
      }
    }).observe(holder);
  }
}

// ---- x–y series ----

// axisText is an axis's label with its units: "position along the ring (m)".
function axisText(a) {
  if (!a) return "";
  return (a.label || "") + (a.units ? " (" + a.units + ")" : "");
}

// alignedXY joins the series on the union of their x values, ascending (a
// series without a point at an x has null there; the line spans the gap).
function alignedXY(ss) {
  const xs = [...new Set(ss.flatMap((s) => s.x))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  return [xs, ...ss.map((s) => {
    const col = new Array(xs.length).fill(null);
    s.x.forEach((x, i) => { col[at.get(x)] = s.y[i]; });
    return col;
  })];
}

function xySeries(box, xy, title) {
  const series = ((xy && xy.series) || []).filter((s) => Array.isArray(s.x) && Array.isArray(s.y));
  const points = series.reduce((n, s) => n + s.y.length, 0);
  const xAxis = (xy && xy.x) || {}, yAxis = (xy && xy.y) || {};
  box.dataset.series = String(series.length);
  box.dataset.points = String(points);
  const holder = el("div", { class: "chart", role: "img",
    "aria-label": title + ": " + axisText(yAxis) + " against " + axisText(xAxis) + ": " + series.map((s) => s.name + " (" + s.y.length + " points)").join(", ") });
  box.appendChild(holder);
  const data = alignedXY(series);
  const build = () => {
    holder.replaceChildren();
    const axis = cssVar("--muted", "#555"), grid = cssVar("--grid", "#e5e7eb");
    const u = new window.uPlot({
      width: Math.max(holder.clientWidth || 320, 240),
      height: 240,
      scales: { x: { time: false } },
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      series: [{ label: axisText(xAxis), value: (u, v) => (v == null ? "—" : fmt(v)) },
        ...series.map((s, i) => ({ label: s.name, stroke: cssVar("--series-" + (i % 8), "#2563eb"), width: 1.5, spanGaps: true,
          points: { show: s.y.length <= 100 },
          value: (u, v) => fmt(v) + (yAxis.units && v != null ? " " + yAxis.units : "") }))],
      axes: [{ stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label: axisText(xAxis), values: (u, vals) => vals.map(fmt) },
        { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, label: axisText(yAxis), size: 64, values: (u, vals) => vals.map(fmt) }],
    }, data, holder);
    holder.uplot = u;
    return u;
  };
  let u = build();
  charts.add({ holder, rebuild: () => { u.destroy(); u = build(); } });
  if (window.ResizeObserver) {
    let w = holder.clientWidth;
    new ResizeObserver(() => {
      if (!holder.isConnected) return;
      if (Math.abs(holder.clientWidth - w) > 4) {
        w = holder.clientWidth;
        u.setSize({ width: Math.max(w, 240), height: 240 });
      }
    }).observe(holder);
  }
  // The numbers themselves.
  const details = el("details", { class: "points" }, el("summary", { text: "Data points (" + points + ")" }));
  details.addEventListener("toggle", () => {
    if (!details.open || details.dataset.filled) return;
    details.dataset.filled = "1";
    const columns = [{ name: xAxis.label || "x", units: xAxis.units }, ...series.map((s) => ({ name: s.name, units: yAxis.units }))];
    const rows = data[0].map((x, i) => [x, ...series.map((_, k) => data[k + 1][i])]);
    details.appendChild(tableView({ columns, rows }, "Data points"));
  });
  box.appendChild(details);
}

// Charts take their colours from the page's CSS (light or dark): redraw
// them when the system's scheme changes.
window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
  for (const c of [...charts]) {
    if (!c.holder.isConnected) { charts.delete(c); continue; }
    c.rebuild();
  }
});
