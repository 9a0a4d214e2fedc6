// A small, safe Markdown renderer: text in, DOM nodes out.
//
// It never builds HTML strings: every piece of text becomes a text node, so
// `<script>` in the agent's answer shows as the characters "<script>".
// Supported: paragraphs, ATX headings, fenced and indented code blocks, bullet and numbered
// lists whose items hold blocks (paragraphs, code blocks, lists nested by indentation, quotes,
// tables), block quotes, GFM tables (a header row, then an alignment row such as
// "|:--|--:|"), horizontal rules, inline `code`, **bold**, *italic* / _italic_, ~~strike~~,
// [links](url) (http, https and mailto only; anything else stays plain text) and backslash
// escapes of ASCII punctuation ("\*" is a "*").
//
// Agent text is hostile input: every rule takes time linear in the text's length, so no
// answer can freeze the page (the regular expressions left are anchored at a line's start and
// give back at most one pass over it; inline markup and table rows are scanned by hand), and
// block quotes and list items, which read their lines again one level down, nest 16 deep at
// most.

import { h, showControls } from "./dom.js";

const SAFE_URL = /^(https?:|mailto:)/i;

// Block quotes and list items nest this deep at most (counted together); a deeper ">" or
// item is text. Each level reads its lines again, and ">" repeated 25,000 times overflowed
// the stack.
const MAX_DEPTH = 16;

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
    // A button of a block rendered again (a code block's Copy, inside a list still growing)
    // keeps the keyboard's focus: the same button of the new nodes takes it back.
    const active = document.activeElement;
    const focused = active && active !== this.el && this.el.contains(active)
      ? [...this.el.querySelectorAll("button")].indexOf(active) : -1;
    while (this.el.lastChild && this.el.lastChild !== last?.node) this.el.removeChild(this.el.lastChild);
    const offset = last ? last.offset : 0;
    const lines = source.slice(offset).split("\n");
    const starts = [offset]; // where each line starts in `source`
    for (const line of lines) starts.push(starts[starts.length - 1] + line.length + 1);
    const frag = document.createDocumentFragment();
    let settled = true;
    blocks(lines, 0, (node, end, read) => {
      frag.append(node);
      settled &&= read < lines.length - 1; // the lines it read are not the last
      if (settled) this.kept.push({ node, offset: starts[end] });
    });
    decorate(frag);
    this.el.append(frag);
    this.source = source;
    if (focused >= 0 && !this.el.contains(document.activeElement)) this.el.querySelectorAll("button")[focused]?.focus();
  }
}

const normalize = (text) => String(text ?? "").replace(/\r\n?/g, "\n");
const isBlank = (line) => /^\s*$/.test(line);

/** The blocks of `lines`, in order: emit(node, end, read) for each, `end` being the index of
 * the line after it and `read` the last line it read (`end`, or the line after: a paragraph
 * looks for a table's alignment row; a list looks past blank lines for its next item or its
 * item's next block), never a line before it. `info.gap` is set when a blank line separates
 * two blocks (a list item's: the list is loose). */
function blocks(lines, depth, emit, info = {}) {
  let seen = false; // a block was emitted
  let gap = false; // blank lines since
  const out = (node, end, read = end + 1) => {
    if (gap) info.gap = true;
    seen = true;
    gap = false;
    emit(node, end, read);
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) body.push(lines[i++]);
      i++; // the closing fence (or the end of an unfinished, still streaming block)
      out(codeBlock(body.join("\n"), fence[2]), i);
      continue;
    }
    if (isBlank(line)) {
      gap = seen;
      i++;
      continue;
    }
    const heading = atxHeading(line);
    if (heading) {
      // Agent headings sit below the page's own h1/h2: shift them down.
      const level = Math.min(6, heading.level + 2);
      i++;
      out(h(`h${level}`, {}, inline(heading.text)), i);
      continue;
    }
    if (isRule(line)) { i++; out(h("hr"), i); continue; }
    if (depth < MAX_DEPTH && /^\s{0,3}>/.test(line)) {
      const body = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^\s{0,3}>\s?/, ""));
      out(h("blockquote", {}, renderMarkdown(body.join("\n"), depth + 1)), i);
      continue;
    }
    if (depth < MAX_DEPTH && listItem(line)) {
      const list = listAt(lines, i, depth);
      i = list.end;
      out(list.node, list.end, list.read);
      continue;
    }
    if (/^( {4}|\t)/.test(line)) {
      const body = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || isBlank(lines[i]))) {
        body.push(lines[i++].replace(/^( {4}|\t)/, ""));
      }
      while (body.length && body[body.length - 1] === "") body.pop(); // not /\n+$/: quadratic
      out(codeBlock(body.join("\n"), ""), i);
      continue;
    }
    const aligns = tableAt(lines, i);
    if (aligns) {
      const table = tableFrom(lines, i, depth, aligns);
      i = table.end;
      out(table.node, i);
      continue;
    }
    const para = [];
    while (i < lines.length && !isBlank(lines[i]) && !startsBlock(lines, i, depth)) para.push(lines[i++]);
    if (para.length === 0) para.push(lines[i++]);
    const p = h("p");
    para.forEach((text, n) => {
      if (n > 0) p.append(h("br"));
      p.append(inline(text.trim()));
    });
    out(p, i);
  }
}

/** Whether lines[i] ends a paragraph: it starts a fence, heading, quote, list item or (with
 * `tables`) a table. */
function startsBlock(lines, i, depth, tables = true) {
  const line = lines[i];
  return /^\s{0,3}(`{3,}|~{3,}|#{1,6}\s)/.test(line)
    || (depth < MAX_DEPTH && (/^\s{0,3}>/.test(line) || listItem(line) !== null))
    || (tables && tableAt(lines, i) !== null);
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

/** A horizontal rule ("---", "* * *"). Written out, not as the regular expression
 * /^\s{0,3}([-*_])(\s*\1){2,}\s*$/ it follows: that one keeps a backtracking entry per
 * marker, and "- " repeated 2,000,000 times threw RangeError (the stack) in Chromium. */
function isRule(line) {
  const m = line.match(/^\s{0,3}([-*_])/);
  if (!m) return false;
  let markers = 0;
  for (let k = m[0].length - 1; k < line.length; k++) {
    if (line[k] === m[1]) markers++;
    else if (!/\s/.test(line[k])) return false;
  }
  return markers >= 3;
}

/** A list item's line ("- text", "3. text"): {ordered, start, text, indent, width} (`indent`:
 * the spaces before the marker; `width`: where the item's text starts, the indentation of
 * the lines it holds), or null. Not the regular expression
 * /^\s{0,3}([-*+]|(\d{1,9})[.)])\s+(.*)$/ it follows: with a line separator (U+2028) after
 * many spaces, that one backtracks in quadratic time. */
function listItem(line) {
  const m = line.match(/^(\s{0,3})([-*+]|(\d{1,9})[.)])(\s+)/);
  if (!m) return null;
  // More than 4 spaces after the marker: the text is indented code, the item's lines start
  // one space after the marker.
  const width = m[4].length > 4 ? m[1].length + m[2].length + 1 : m[0].length;
  const text = line.slice(width);
  if (/[\n\r\u2028\u2029]/.test(text)) return null;
  return { ordered: m[3] !== undefined, start: m[3] ? Number(m[3]) : 1, text, indent: m[1].length, width };
}

/** The list starting at lines[i]: {node, end, read}. Its items are read as blocks one level
 * down. Tight (no blank line between its items nor between the blocks of one), an item's
 * paragraphs are shown as their text alone, as CommonMark does. */
function listAt(lines, i, depth) {
  const first = listItem(lines[i]);
  const list = h(first.ordered ? "ol" : "ul");
  if (first.ordered && first.start !== 1) list.setAttribute("start", String(first.start));
  const items = []; // the nodes of each item
  let loose = false;
  let read = i;
  while (i < lines.length) {
    const it = listItem(lines[i]);
    if (!it || it.ordered !== first.ordered) break;
    const item = itemLines(lines, i, it);
    read = Math.max(read, item.read);
    const nodes = [];
    const info = { gap: false };
    blocks(item.body, depth + 1, (node) => nodes.push(node), info);
    loose ||= info.gap;
    items.push(nodes);
    i = item.end;
    let j = i; // blank lines, then the list's next item?
    while (j < lines.length && isBlank(lines[j])) j++;
    if (j === i) continue;
    read = Math.max(read, j);
    if (j < lines.length && listItem(lines[j])?.ordered === first.ordered) {
      loose = true;
      i = j;
    } else break;
  }
  for (const nodes of items) {
    const li = h("li");
    for (const node of nodes) {
      if (!loose && node.tagName === "P") li.append(...node.childNodes);
      else li.append(node);
    }
    list.append(li);
  }
  return { node: list, end: i, read: Math.max(read, i) };
}

/** The lines of the item `it` at lines[i], its indentation taken off: {body, end, read}. It
 * holds the lines after it indented at least as its text (or 2 spaces past its marker: a
 * list nested 2 deep under "1. "), and blank lines followed by such a line. */
function itemLines(lines, i, it) {
  const body = [it.text];
  const least = Math.min(it.width, it.indent + 2);
  let read = i;
  i++;
  while (i < lines.length) {
    let j = i;
    while (j < lines.length && isBlank(lines[j])) j++;
    read = Math.max(read, j);
    if (j === lines.length || indentOf(lines[j], least) < least) break;
    for (; i < j; i++) body.push("");
    body.push(unindent(lines[j], it.width));
    i = j + 1;
  }
  return { body, end: i, read };
}

/** The columns of `line`'s indentation (a tab to the next multiple of 4), counted up to `most`. */
function indentOf(line, most) {
  let col = 0;
  for (let k = 0; k < line.length && col < most; k++) {
    if (line[k] === " ") col++;
    else if (line[k] === "\t") col += 4 - (col % 4);
    else break;
  }
  return col;
}

/** `line` without up to `width` columns of indentation. */
function unindent(line, width) {
  let col = 0;
  let k = 0;
  while (k < line.length && col < width && (line[k] === " " || line[k] === "\t")) {
    const next = line[k] === "\t" ? col + 4 - (col % 4) : col + 1;
    if (next > width) return " ".repeat(next - width) + line.slice(k + 1); // a tab split
    col = next;
    k++;
  }
  return line.slice(k);
}

/** The cells of a table row: split at each "|" not escaped, the outer ones dropped, each
 * trimmed, "\|" read as "|" (also in code). One pass over the line. */
function rowCells(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  const cells = [];
  let start = 0;
  for (let k = 0; k < s.length; k++) {
    if (s[k] === "\\") k++;
    else if (s[k] === "|") {
      cells.push(s.slice(start, k));
      start = k + 1;
    }
  }
  if (start < s.length || cells.length === 0) cells.push(s.slice(start));
  return cells.map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

/** If lines[i] is a table's header (a "|" in it, the alignment row after it with as many
 * cells): the columns' alignments ("left", "center", "right" or ""), else null. */
function tableAt(lines, i) {
  const row = lines[i + 1];
  if (row === undefined || !row.includes("|") || !row.includes("-") || !lines[i].includes("|")) return null;
  if (/^( {4}|\t)/.test(row)) return null;
  const aligns = [];
  for (const cell of rowCells(row)) {
    const m = cell.match(/^(:?)-+(:?)$/);
    if (!m) return null;
    aligns.push(m[1] && m[2] ? "center" : m[2] ? "right" : m[1] ? "left" : "");
  }
  return rowCells(lines[i]).length === aligns.length ? aligns : null;
}

/** The table whose header is lines[i]: {node, end}. Its rows go on to a blank line or
 * another block; a row's cells past the header's are dropped, missing ones are empty. */
function tableFrom(lines, i, depth, aligns) {
  // A row has the cells it writes, at most the header's (the browser leaves the rest empty):
  // padding every row to the header's width made N columns x M short rows N x M cells, growing
  // with the product, not the text (1,000 columns, 48,000 rows of "x": 63 s).
  const row = (line, tag) => {
    const cells = rowCells(line).slice(0, aligns.length);
    return h("tr", {}, cells.map((cell, n) => h(tag, { class: aligns[n] ? `md-${aligns[n]}` : null }, inline(cell))));
  };
  const head = h("thead", {}, row(lines[i], "th"));
  const body = h("tbody");
  i += 2;
  while (i < lines.length && !isBlank(lines[i]) && !startsBlock(lines, i, depth, false)) body.append(row(lines[i++], "td"));
  const table = h("table", {}, head, body.firstChild ? body : null);
  return { node: h("div", { class: "md-table" }, table), end: i };
}

function codeBlock(code, lang) {
  const el = h("code", { text: showControls(code) }); // commands and file names: bidi controls shown
  if (lang) el.dataset.lang = lang;
  return h("pre", { class: "md-code" }, el);
}

// Inline spans: code, links, bold, strike, italic. The rules are those of one regular
// expression tried at each position from the left, the first alternative that matches winning
// (a backslash escape, code, link, **bold**, __bold__, ~~strike~~, *italic*, _italic_), each
// span closed by the
// nearest closer after it that is not escaped; the inside of a link, bold, strike or italic
// is read again the same way; in code, a backslash is a backslash. A regular expression with lazy spans rescans the rest of the line from every unclosed
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
    if (s[p] === "\\") { // "\*" is a "*" (any ASCII punctuation); another "\" is itself
      if (isPunct(s[p + 1])) {
        if (p > base) frag.append(s.slice(base, p));
        frag.append(s[p + 1]);
        base = p + 2;
      }
      p += 2;
      continue;
    }
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

const MAY_OPEN = /[`[*_~\\]/g;
const PUNCT = /[!-/:-@[-`{-~]/;
const isPunct = (c) => c !== undefined && PUNCT.test(c);
const unescape = (text) => text.replace(/\\([!-/:-@[-`{-~])/g, "$1");
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
    link.url = unescape(link.url);
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
  const k = find.urlEnd(j + 2); // the URL: up to a space or the ")" closing it (-1: unbalanced)
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
  let escaped = null; // escaped[i]: s[i] is a punctuation character after a "\\"
  const esc = (i) => {
    if (!escaped) {
      escaped = new Uint8Array(s.length + 1);
      for (let k = s.indexOf("\\"); k >= 0 && k < s.length; k = s.indexOf("\\", k + 2)) {
        if (isPunct(s[k + 1])) escaped[k + 1] = 1;
        else k--; // the next search starts right after this backslash
      }
    }
    return escaped[i] === 1;
  };
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
  const pair = (c) => first((i) => s[i] === c && s[i + 1] === c && !isSpace(s[i - 1]) && !esc(i));
  const single = (c, after) => first((i) => s[i] === c && (s[i - 1] !== c || esc(i - 1)) && !isSpace(s[i - 1])
    && after(i) && !esc(i));
  return {
    pair: { "*": pair("*"), _: pair("_"), "~": pair("~") },
    single: { "*": single("*", () => true), _: single("_", (i) => !isWord(s[i + 1])) },
    bracket: first((i) => (s[i] === "]" && !esc(i)) || s[i] === "\n"),
    urlEnd: urlEnd(s, esc, first((i) => isSpace(s[i]))),
    nonSpace: first((i) => !isSpace(s[i])),
    quote: first((i) => s[i] === '"' && !esc(i)),
    ...backtickRuns(s),
  };
}

/** A link destination's end in `s` (CommonMark: it holds parentheses when they are escaped
 * or balanced, "wiki/Foo_(bar)"): `urlEnd(q)` is the first space at or after q, or the first
 * unescaped ")" after q that closes no "(" opened after q; -1 when the parentheses it holds are
 * unbalanced (no link). `esc(i)`: s[i] is escaped; `space(q)`: the first space >= q (or -1).
 * Each "(" and ")" is counted once, when first needed: the depth before each index, and for
 * each depth the ")" met at it; a search is then a binary search (O(log length)). */
function urlEnd(s, esc, space) {
  let depth = null; // depth[i]: unescaped "(" minus ")" in s[0..i)
  let closes = null; // depth -> ascending indices of the unescaped ")" met at that depth
  const count = () => {
    depth = new Int32Array(s.length + 1);
    closes = new Map();
    let d = 0;
    for (let i = 0; i < s.length; i++) {
      depth[i] = d;
      const c = s[i];
      if ((c === "(" || c === ")") && !esc(i)) {
        if (c === "(") d++;
        else {
          if (!closes.has(d)) closes.set(d, []);
          closes.get(d).push(i);
          d--;
        }
      }
    }
    depth[s.length] = d;
  };
  return (q) => {
    if (!depth) count();
    const sp = space(q);
    const stop = sp < 0 ? s.length : sp;
    const at = closes.get(depth[q]) || [];
    let lo = 0;
    let hi = at.length; // the first ")" at q's depth at or after q
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (at[mid] >= q) hi = mid;
      else lo = mid + 1;
    }
    if (lo < at.length && at[lo] < stop) return at[lo];
    return stop < s.length && depth[stop] === depth[q] ? stop : -1;
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
