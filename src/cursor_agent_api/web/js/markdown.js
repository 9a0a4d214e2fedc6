// A small, safe Markdown renderer: text in, DOM nodes out.
//
// It never builds HTML strings: every piece of text becomes a text node, so
// `<script>` in the agent's answer shows as the characters "<script>".
// Supported: paragraphs, ATX headings, fenced and indented code blocks,
// bullet and numbered lists (one level), block quotes, horizontal rules,
// inline `code`, **bold**, *italic* / _italic_, ~~strike~~ and [links](url)
// (http, https and mailto only; anything else stays plain text).
//
// Agent text is hostile input: every rule takes time linear in the text's length, so no
// answer can freeze the page (the regular expressions left are anchored at a line's start and
// give back at most one pass over it; inline markup is scanned by hand), and block quotes
// nest 16 deep at most.

import { h, showControls } from "./dom.js";

const SAFE_URL = /^(https?:|mailto:)/i;

// Block quotes nest this deep at most; a deeper ">" is text. Each level reads its lines again,
// and ">" repeated 25,000 times overflowed the stack.
const MAX_QUOTE_DEPTH = 16;

/** Render `text` as Markdown; returns a DocumentFragment. */
export function renderMarkdown(text, depth = 0) {
  const frag = document.createDocumentFragment();
  blocks(normalize(text).split("\n"), depth, (node) => frag.append(node));
  return frag;
}

/**
 * Markdown shown in an element for a text that grows (an answer streaming in): `show(text)`
 * renders again only from the first block that may still change. Rendering the whole text
 * again for every frame made a long answer quadratic over its stream (~200 ms a frame by the
 * end of a 250,000-character answer; BENCHMARKS.md, 2026-11-24). A block is kept once the lines it read are not the
 * text's last line (the only one that can still grow) and `text` extends the text shown
 * before; anything else (a replaced text, the element emptied by someone else) renders it
 * all again. What it shows is always what renderMarkdown(text) gives.
 */
export class GrowingMarkdown {
  constructor(el) {
    this.el = el;
    this.source = null; // the text shown, as normalize() gives it
    this.kept = []; // blocks that cannot change: {node, offset: where the lines after it start}
  }

  /** Show `text`; `decorate(fragment)` is called on the new nodes before they are added. */
  show(text, decorate = () => {}) {
    const source = normalize(text);
    if (source === this.source) return; // shown already: nothing is added again (nor announced)
    let last = this.kept[this.kept.length - 1];
    if (this.source === null || !source.startsWith(this.source) || (last && last.node.parentNode !== this.el)) {
      this.kept = [];
      last = undefined;
    }
    while (this.el.lastChild && this.el.lastChild !== last?.node) this.el.removeChild(this.el.lastChild);
    const offset = last ? last.offset : 0;
    const lines = source.slice(offset).split("\n");
    const starts = [offset]; // where each line starts in `source`
    for (const line of lines) starts.push(starts[starts.length - 1] + line.length + 1);
    const frag = document.createDocumentFragment();
    let settled = true;
    blocks(lines, 0, (node, end) => {
      frag.append(node);
      settled &&= end + 2 < lines.length; // the lines it read (up to end + 1) are not the last
      if (settled) this.kept.push({ node, offset: starts[end] });
    });
    decorate(frag);
    this.el.append(frag);
    this.source = source;
  }
}

const normalize = (text) => String(text ?? "").replace(/\r\n?/g, "\n");

/** The blocks of `lines`, in order: emit(node, end) for each, `end` being the index of the
 * line after it. A block reads its own lines and at most the line after `end` (a list looks
 * past a blank line for its next item), never a line before it. */
function blocks(lines, depth, emit) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) body.push(lines[i++]);
      i++; // the closing fence (or the end of an unfinished, still streaming block)
      emit(codeBlock(body.join("\n"), fence[2]), i);
      continue;
    }
    if (/^\s*$/.test(line)) { i++; continue; }
    const heading = atxHeading(line);
    if (heading) {
      // Agent headings sit below the page's own h1/h2: shift them down.
      const level = Math.min(6, heading.level + 2);
      i++;
      emit(h(`h${level}`, {}, inline(heading.text)), i);
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { i++; emit(h("hr"), i); continue; }
    if (depth < MAX_QUOTE_DEPTH && /^\s{0,3}>/.test(line)) {
      const body = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^\s{0,3}>\s?/, ""));
      emit(h("blockquote", {}, renderMarkdown(body.join("\n"), depth + 1)), i);
      continue;
    }
    const item = listItem(line);
    if (item) {
      const list = h(item.ordered ? "ol" : "ul");
      if (item.ordered && item.start !== 1) list.setAttribute("start", String(item.start));
      while (i < lines.length) {
        const it = listItem(lines[i]);
        if (it && it.ordered === item.ordered) {
          const parts = [it.text];
          i++;
          // Continuation lines: indented, not a new item, not blank.
          while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !listItem(lines[i])) parts.push(lines[i++].trim());
          list.append(h("li", {}, inline(parts.join(" "))));
        } else if (/^\s*$/.test(lines[i]) && listItem(lines[i + 1] ?? "")?.ordered === item.ordered) {
          i++;
        } else break;
      }
      emit(list, i);
      continue;
    }
    if (/^( {4}|\t)/.test(line)) {
      const body = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || /^\s*$/.test(lines[i]))) {
        body.push(lines[i++].replace(/^( {4}|\t)/, ""));
      }
      while (body.length && body[body.length - 1] === "") body.pop(); // not /\n+$/: quadratic
      emit(codeBlock(body.join("\n"), ""), i);
      continue;
    }
    const para = [];
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !startsBlock(lines[i], depth)) para.push(lines[i++]);
    if (para.length === 0) para.push(lines[i++]);
    const p = h("p");
    para.forEach((text, n) => {
      if (n > 0) p.append(h("br"));
      p.append(inline(text.trim()));
    });
    emit(p, i);
  }
}

function startsBlock(line, depth) {
  return /^\s{0,3}(`{3,}|~{3,}|#{1,6}\s)/.test(line) || (depth < MAX_QUOTE_DEPTH && /^\s{0,3}>/.test(line))
    || listItem(line) !== null;
}

/** An ATX heading ("## Title ##"): {level, text}, or null. Written out, not as the regular
 * expression /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/ it follows: that one backtracks in cubic
 * time on "# a" and many spaces before a last character (4,000 characters: 21 s). */
function atxHeading(line) {
  const m = line.match(/^\s{0,3}(#{1,6})\s+/);
  if (!m) return null;
  // The closing sequence: spaces, then #s, then spaces, at the end.
  let end = line.trimEnd().length;
  while (end > 0 && line[end - 1] === "#") end--;
  end = line.slice(0, end).trimEnd().length;
  const text = line.slice(m[0].length, Math.max(m[0].length, end));
  return /[\n\r\u2028\u2029]/.test(text) ? null : { level: m[1].length, text };
}

/** A list item's line ("- text", "3. text"): {ordered, start, text}, or null. Not the
 * regular expression /^\s{0,3}([-*+]|(\d{1,9})[.)])\s+(.*)$/ it follows: with a line
 * separator (U+2028) after many spaces, that one backtracks in quadratic time. */
function listItem(line) {
  const m = line.match(/^\s{0,3}([-*+]|(\d{1,9})[.)])\s+/);
  if (!m) return null;
  const text = line.slice(m[0].length);
  if (/[\n\r\u2028\u2029]/.test(text)) return null;
  return { ordered: m[2] !== undefined, start: m[2] ? Number(m[2]) : 1, text };
}

function codeBlock(code, lang) {
  const el = h("code", { text: showControls(code) }); // commands and file names: bidi controls shown
  if (lang) el.dataset.lang = lang;
  return h("pre", { class: "md-code" }, el);
}

// Inline spans: code, links, bold, strike, italic. The rules are those of one regular
// expression tried at each position from the left, the first alternative that matches winning
// (code, link, **bold**, __bold__, ~~strike~~, *italic*, _italic_), each span closed by the
// nearest closer after it; the inside of a link, bold, strike or italic is read again the same
// way. A regular expression with lazy spans rescans the rest of the line from every unclosed
// opener (quadratic: "*a " repeated over 240,000 characters froze the page for 13 s), so the
// scan is written out: one pass over the positions, each rule's closer found by a forward
// search that resumes where its previous search stopped (closers(), below). A line costs
// O(length) per level of nesting, and spans nest at most 7 deep (a span cannot hold another of
// its own kind: the inner closer would close the outer one first).

/** Inline Markdown of one line or paragraph, as a DocumentFragment of safe nodes. */
export function inline(text) {
  const frag = document.createDocumentFragment();
  const s = String(text);
  let find = null; // made at the first character that may open a span
  let base = 0; // the start of the text not yet shown
  let p = 0;
  while (p < s.length) {
    MAY_OPEN.lastIndex = p;
    if (!MAY_OPEN.test(s)) break;
    p = MAY_OPEN.lastIndex - 1;
    find ??= closers(s);
    const span = spanAt(s, p, base, find);
    if (!span) {
      p = s[p] === "`" ? find.runEnd(p) : p + 1;
      continue;
    }
    if (p > base) frag.append(s.slice(base, p));
    frag.append(span.node);
    base = p = span.end;
  }
  if (base < s.length) frag.append(s.slice(base));
  return frag;
}

const MAY_OPEN = /[`[*_~]/g;
const isSpace = (c) => c !== undefined && /\s/.test(c);
const isWord = (c) => c !== undefined && /\w/.test(c);

/** The span that starts at `p` in `s` (`base`: where the text not yet shown starts), or null. */
function spanAt(s, p, base, find) {
  const c = s[p];
  if (c === "`") {
    const at = find.codeCloser(p);
    if (!at) return null;
    const code = s.slice(p + at.ticks, at.start).replace(/^ (.*) $/, "$1");
    return { node: h("code", { text: showControls(code) }), end: at.start + at.ticks };
  }
  if (c === "[") {
    const link = linkAt(s, p, find);
    if (!link) return null;
    if (!SAFE_URL.test(link.url)) return { node: s.slice(p, link.end), end: link.end };
    return {
      node: h("a", { href: link.url, target: "_blank", rel: "noopener noreferrer" }, inline(link.text)),
      end: link.end,
    };
  }
  if ((c === "*" || c === "_" || c === "~") && s[p + 1] === c) {
    // **bold**, __bold__, ~~strike~~: a non-space after the opener and before the closer.
    if (p + 2 >= s.length || isSpace(s[p + 2])) return null;
    const e = find.pair[c](p + 3);
    if (e < 0) return null;
    return { node: h(c === "~" ? "del" : "strong", {}, inline(s.slice(p + 2, e))), end: e + 2 };
  }
  if (c === "*" || (c === "_" && (p === base || !isWord(s[p - 1])))) {
    // *italic*, _italic_ (this one between word boundaries): neither space nor the marker
    // just inside.
    if (p + 1 >= s.length || s[p + 1] === c || isSpace(s[p + 1])) return null;
    const e = find.single[c](p + 2);
    if (e < 0) return null;
    return { node: h("em", {}, inline(s.slice(p + 1, e))), end: e + 1 };
  }
  return null;
}

/** [text](url) or [text](url "title") at `p`: {text, url, end}, or null. */
function linkAt(s, p, find) {
  const j = find.bracket(p + 1); // the text: up to the first "]" or newline
  if (j < p + 2 || s[j] !== "]" || s[j + 1] !== "(") return null;
  const k = find.urlEnd(j + 2); // the URL: up to the first ")" or space
  if (k <= j + 2) return null;
  let end = -1;
  if (s[k] === ")") end = k + 1;
  else {
    const q = find.nonSpace(k);
    if (s[q] === '"') {
      const r = find.quote(q + 1);
      if (r >= 0 && s[r + 1] === ")") end = r + 2;
    }
  }
  return end < 0 ? null : { text: s.slice(p + 1, j), url: s.slice(j + 2, k), end };
}

/** Forward searches in `s` for each rule's closer. A search for the first index >= q where a
 * test holds resumes from its previous answer when q has not passed it, so searches with
 * growing q (one scan from the left) cost O(length) in all. */
function closers(s) {
  const first = (test) => {
    let from = -1;
    let found = -1; // the first index >= from passing the test (s.length: none)
    return (q) => {
      if (from < 0 || q < from || found < q) {
        from = q;
        found = q;
        while (found < s.length && !test(found)) found++;
      }
      return found < s.length ? found : -1;
    };
  };
  const pair = (c) => first((i) => s[i] === c && s[i + 1] === c && !isSpace(s[i - 1]));
  const single = (c, after) => first((i) => s[i] === c && s[i - 1] !== c && !isSpace(s[i - 1]) && after(i));
  return {
    pair: { "*": pair("*"), _: pair("_"), "~": pair("~") },
    single: { "*": single("*", () => true), _: single("_", (i) => !isWord(s[i + 1])) },
    bracket: first((i) => s[i] === "]" || s[i] === "\n"),
    urlEnd: first((i) => s[i] === ")" || isSpace(s[i])),
    nonSpace: first((i) => !isSpace(s[i])),
    quote: first((i) => s[i] === '"'),
    ...backtickRuns(s),
  };
}

/** The runs of backticks in `s`. A code span opened by the run at `p` (n backticks) takes
 * the most backticks k <= n for which a later run of exactly k backticks exists, and closes at
 * the first such run (with k < n the code starts with the opener's n - k others). */
function backtickRuns(s) {
  let runs = null; // length -> starts of the runs of that length, ascending
  const runEnd = (p) => {
    let e = p;
    while (s[e] === "`") e++;
    return e;
  };
  const codeCloser = (p) => {
    if (!runs) {
      runs = new Map();
      for (let i = s.indexOf("`"); i >= 0; i = s.indexOf("`", i)) {
        const e = runEnd(i);
        if (!runs.has(e - i)) runs.set(e - i, []);
        runs.get(e - i).push(i);
        i = e;
      }
    }
    const end = runEnd(p);
    for (let k = end - p; k > 0; k--) {
      const starts = runs.get(k);
      if (!starts || starts[starts.length - 1] <= end) continue;
      let lo = 0;
      let hi = starts.length - 1; // the first start after `end`
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (starts[mid] > end) hi = mid;
        else lo = mid + 1;
      }
      return { ticks: k, start: starts[lo] };
    }
    return null;
  };
  return { runEnd, codeCloser };
}
