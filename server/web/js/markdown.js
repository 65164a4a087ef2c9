// Markdown rendered safely: marked (vendor/marked.umd.js) turns the text
// into HTML, with raw HTML in the text shown as text (a model's <script> or
// <img onerror> is displayed, never parsed as markup); DOMPurify
// (vendor/purify.min.js) then keeps only harmless markup of what marked
// made, and the result is inserted as nodes, never re-parsed. The page's CSP
// allows images only from this server and data: URLs, so an image from
// elsewhere becomes a link (no request leaves for it, no CSP violation);
// links open in a new tab without a referrer.
import { el } from "./icons.js";

let ready = false;

function setup() {
  if (ready) return;
  ready = true;
  window.marked.setOptions({ gfm: true, breaks: true });
  window.marked.use({ renderer: { html: (t) => escapeHTML(typeof t === "string" ? t : t.text) } });
  window.DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
    if (node.tagName === "IMG") {
      const src = node.getAttribute("src") || "";
      if (!allowedImage(src)) {
        node.removeAttribute("src");
        node.removeAttribute("srcset");
        node.setAttribute("data-src", src);
      }
    }
  });
}

function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function allowedImage(src) {
  if (/^data:image\/(png|jpeg|gif|webp);base64,/i.test(src)) return true;
  try {
    return new URL(src, location.href).origin === location.origin;
  } catch {
    return false;
  }
}

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option", "iframe", "object", "embed", "svg", "math"],
  FORBID_ATTR: ["style", "id", "class"],
  ALLOW_DATA_ATTR: false,
};

// markdown returns a fragment of sanitised nodes for text.
export function markdown(text) {
  setup();
  const frag = window.DOMPurify.sanitize(window.marked.parse(text || ""), PURIFY);
  for (const img of frag.querySelectorAll("img[data-src]")) {
    const src = img.getAttribute("data-src");
    const label = img.getAttribute("alt") || src;
    const a = /^https?:/i.test(src) ? el("a", { href: src, target: "_blank", rel: "noopener noreferrer", text: "image: " + label }) : el("span", { text: "[image: " + label + "]" });
    img.replaceWith(a);
  }
  for (const t of frag.querySelectorAll("table")) {
    const wrap = el("div", { class: "table-scroll" });
    t.replaceWith(wrap);
    wrap.appendChild(t);
  }
  return frag;
}

// renderInto replaces target's content with text rendered.
export function renderInto(target, text) {
  target.replaceChildren(markdown(text));
}
