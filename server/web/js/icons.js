// Icons as inline SVG (24×24, stroked with currentColor), so nothing depends
// on an emoji font: ✅/❌ render as empty boxes where none is installed.
const SVG = "http://www.w3.org/2000/svg";

// Each icon is a list of path data strings (and circles as "c cx cy r").
const PATHS = {
  check: ["M5 12.5l4.5 4.5L19 7.5"],
  cross: ["M6 6l12 12", "M18 6L6 18"],
  running: ["c 12 12 8", "M12 7v5l3 2"],
  pending: ["c 12 12 8"],
  skipped: ["M5 12h14"],
  warning: ["M12 3l10 18H2z", "M12 10v5", "M12 18v.01"],
  error: ["c 12 12 9", "M12 7.5v6", "M12 16.5v.01"],
  info: ["c 12 12 9", "M12 11v6", "M12 7.5v.01"],
  copy: ["M9 9h10v11H9z", "M5 15V4h10"],
  stop: ["M7 7h10v10H7z"],
  send: ["M4 12l16-8-6 16-3-7z", "M11 13l9-9"],
  menu: ["M4 6h16", "M4 12h16", "M4 18h16"],
  key: ["c 8 15 4", "M11 12l9-9", "M16 7l3 3"],
  lock: ["M6 11h12v9H6z", "M9 11V8a3 3 0 016 0v3"],
  bolt: ["M13 3L5 14h6l-1 7 8-11h-6z"],
  plus: ["M12 5v14", "M5 12h14"],
  pencil: ["M4 20l4-1 11-11-3-3L5 16z", "M14 6l3 3"],
  trash: ["M5 7h14", "M9 7V4h6v3", "M7 7l1 13h8l1-13"],
  chevron: ["M9 6l6 6-6 6"],
  retry: ["M20 12a8 8 0 11-3-6.3", "M20 4v5h-5"],
  route: ["M5 5h6a4 4 0 010 8H9a4 4 0 000 8h10", "M16 18l3 3-3 3"],
  hand: ["M8 13V6a1.5 1.5 0 013 0v5", "M11 11V4.5a1.5 1.5 0 013 0V11", "M14 11V6a1.5 1.5 0 013 0v7a7 7 0 01-7 7h-1a6 6 0 01-5-3l-2-4a1.5 1.5 0 012.5-1.5L8 15"],
  chart: ["M4 4v16h16", "M7 15l4-5 3 3 5-6"],
  table: ["M4 5h16v14H4z", "M4 10h16", "M4 15h16", "M10 5v14"],
  link: ["M10 14a4 4 0 006 0l3-3a4 4 0 00-6-6l-1 1", "M14 10a4 4 0 00-6 0l-3 3a4 4 0 006 6l1-1"],
  clock: ["c 12 12 9", "M12 7v5l3 2"],
  unknown: ["c 12 12 9", "M9.5 9.5a2.5 2.5 0 115 0c0 1.7-2.5 2-2.5 4", "M12 17v.01"],
};

// icon returns an <svg> for name. With label it is an image with that
// accessible name; without, decoration hidden from assistive technology.
export function icon(name, label) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", "icon icon-" + name);
  svg.setAttribute("fill", "none");
  svg.setAttribute("stroke", "currentColor");
  svg.setAttribute("stroke-width", "2");
  svg.setAttribute("stroke-linecap", "round");
  svg.setAttribute("stroke-linejoin", "round");
  if (label) {
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
    const t = document.createElementNS(SVG, "title");
    t.textContent = label;
    svg.appendChild(t);
  } else {
    svg.setAttribute("aria-hidden", "true");
  }
  for (const d of PATHS[name] || PATHS.info) {
    let el;
    if (d.startsWith("c ")) {
      const [cx, cy, r] = d.slice(2).split(" ");
      el = document.createElementNS(SVG, "circle");
      el.setAttribute("cx", cx);
      el.setAttribute("cy", cy);
      el.setAttribute("r", r);
    } else {
      el = document.createElementNS(SVG, "path");
      el.setAttribute("d", d);
    }
    svg.appendChild(el);
  }
  return svg;
}

// el builds an element: el("div", {class: "x", text: "…"}, child, …).
// Attributes are set with setAttribute; "text" sets textContent; on* keys
// add listeners. Never innerHTML: every string stays text.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}
