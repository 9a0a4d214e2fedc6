// DOM building without HTML parsing.
//
// Everything the page shows is built here with createElement and textContent:
// agent output is untrusted, so no string ever goes through innerHTML,
// insertAdjacentHTML or document.write anywhere in this UI.

/**
 * Create an element.
 *   h("p", {class: "note", text: "hi"})
 *   h("button", {type: "button", onclick: fn}, "Stop")
 * attrs: "class", "text" (textContent), "dataset" (object), "hidden"/"open"/"checked"/
 * "disabled" (booleans), "on<event>" (listeners); anything else is setAttribute.
 * children: nodes, strings (as text nodes), null/false (skipped), or arrays of these.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = String(value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (["hidden", "open", "checked", "disabled", "selected", "required"].includes(key)) {
      el[key] = Boolean(value);
    } else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

/** Say `message` in the page's status region (#announce, polite): screen readers read it
 * without the focus moving. */
export function announce(message) {
  const region = document.getElementById("announce");
  if (region) region.textContent = message;
}

/** Append children (nodes, strings, nested arrays; null/false skipped) to el. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Remove every child of el. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** Replace el's children with the given ones. */
export function replace(el, ...children) {
  clear(el);
  return append(el, children);
}

/** Make el's children those of `children` (as h() takes them) by changing only what
 * differs: a child of the same tag (or a text) in the same place is kept, its attributes,
 * text and children brought up to date the same way; the others are put in or taken out.
 * `held` nodes (among `children`) are kept as they are, and are never reused for another
 * node, now or later: their state is their own (a "Show all" loading, whose note goes once
 * loaded). A kept <details> stays open or closed as the reader left it. So what did not
 * change keeps its nodes: the focus on one of them, and the reader's place. */
export function morph(el, children, { held = [] } = {}) {
  const wanted = [];
  append({ append: (node) => wanted.push(node) }, children);
  for (const node of held) heldNodes.add(node);
  let at = el.firstChild;
  for (const want of wanted) {
    if (want === at) {
      at = at.nextSibling;
    } else if (at && !heldNodes.has(at) && !heldNodes.has(want) && sameKind(at, want)) {
      morphNode(at, want);
      at = at.nextSibling;
    } else {
      el.insertBefore(want, at);
    }
  }
  while (at) {
    const next = at.nextSibling;
    at.remove();
    at = next;
  }
  return el;
}

const heldNodes = new WeakSet();

function sameKind(a, b) {
  if (a.nodeType !== b.nodeType) return false;
  return a.nodeType !== Node.ELEMENT_NODE || a.tagName === b.tagName;
}

function morphNode(have, want) {
  if (have.nodeType !== Node.ELEMENT_NODE) {
    if (have.nodeValue !== want.nodeValue) have.nodeValue = want.nodeValue;
    return;
  }
  const keepOpen = have.tagName === "DETAILS";
  for (const { name } of [...have.attributes]) {
    if (!want.hasAttribute(name) && !(keepOpen && name === "open")) have.removeAttribute(name);
  }
  for (const { name, value } of [...want.attributes]) {
    if (keepOpen && name === "open") continue;
    if (have.getAttribute(name) !== value) have.setAttribute(name, value);
  }
  if (have.tagName === "INPUT" && have.checked !== want.checked) have.checked = want.checked;
  morph(have, [...want.childNodes]);
}

/** "1.2 s", "850 ms", "2 min 5 s". */
export function formatDuration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** "just now", "5 min ago", or a date, for a millisecond timestamp. */
export function formatAgo(ms) {
  if (!ms) return "";
  const diff = Date.now() - ms;
  if (diff < 45_000) return "just now";
  if (diff < 3_600_000) return `${Math.round(diff / 60_000)} min ago`;
  if (diff < 86_400_000) return `${Math.round(diff / 3_600_000)} h ago`;
  return new Date(ms).toLocaleDateString();
}

// Bidirectional-text controls (embeddings, overrides, isolates, marks). Applied, they make
// "invoice_\u202Efdp.exe" look like "invoice_exe.pdf"; in file names and commands they are
// shown as visible markers instead.
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** `text` with every bidi control shown as a visible marker: "a\u202Eb" -> "a⟨U+202E⟩b". */
export function showControls(text) {
  if (typeof text !== "string") return text;
  return text.replace(BIDI_CONTROLS, (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);
}

/** A copy of `value` (strings, arrays, plain objects) with showControls applied to every string. */
export function showControlsDeep(value) {
  if (typeof value === "string") return showControls(value);
  if (Array.isArray(value)) return value.map(showControlsDeep);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, showControlsDeep(v)]));
  }
  return value;
}

// Terminal escape sequences (protocol/ansi.py's, as a regular expression of the page's): CSI
// (colours, cursor moves), strings with their payload (OSC titles and hyperlinks, DCS, SOS,
// PM, APC: a payload stops at any escape, so nothing is rescanned), any other escape, and a
// lone ESC or 8-bit control.
const TERMINAL_ESCAPES =
  /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x90\x98\x9c-\x9f]*(?:\x07|\x1b\\|\x9c)|\x1b[ -/]*[0-~]|[\x1b\x80-\x9f]/g;

/** A command's output as text to read: without escape sequences (colours: "\x1b[31mred\x1b[0m"
 * is "red"), and every state a carriage return redrew on a line of its own, so nothing the
 * command printed is hidden (a progress line "10%\r50%\r100%" is "10%\n50%\n100%", and
 * "rm -rf ~\r# comment" shows both; "\r\n", or a run of "\r" before "\n", ends one line).
 * Nothing is applied. */
export function terminalText(text) {
  if (typeof text !== "string" || !/[\r\x1b\x80-\x9f]/.test(text)) return text;
  return text.replace(TERMINAL_ESCAPES, "").replace(/\r+\n?/g, "\n");
}

/** Lines in `text` as a person counts them: a final newline ends the last line, it does not
 * start another ("a\n" is 1 line, "a\nb" is 2, "" is 0). */
export function lineCount(text) {
  if (!text) return 0;
  const n = text.split("\n").length;
  return text.endsWith("\n") ? n - 1 : n;
}
