// A small, safe Markdown renderer: text in, DOM nodes out.
//
// It never builds HTML strings: every piece of text becomes a text node, so
// `<script>` in the agent's answer shows as the characters "<script>".
// Supported: paragraphs, ATX headings, fenced and indented code blocks,
// bullet and numbered lists (one level), block quotes, horizontal rules,
// inline `code`, **bold**, *italic* / _italic_, ~~strike~~ and [links](url)
// (http, https and mailto only; anything else stays plain text).

import { h, showControls } from "./dom.js";

const SAFE_URL = /^(https?:|mailto:)/i;

/** Render `text` as Markdown; returns a DocumentFragment. */
export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) body.push(lines[i++]);
      i++; // the closing fence (or the end of an unfinished, still streaming block)
      frag.append(codeBlock(body.join("\n"), fence[2]));
      continue;
    }
    if (/^\s*$/.test(line)) { i++; continue; }
    const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/);
    if (heading) {
      // Agent headings sit below the page's own h1/h2: shift them down.
      const level = Math.min(6, heading[1].length + 2);
      frag.append(h(`h${level}`, {}, inline(heading[2])));
      i++;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { frag.append(h("hr")); i++; continue; }
    if (/^\s{0,3}>/.test(line)) {
      const body = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^\s{0,3}>\s?/, ""));
      frag.append(h("blockquote", {}, renderMarkdown(body.join("\n"))));
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
      frag.append(list);
      continue;
    }
    if (/^( {4}|\t)/.test(line)) {
      const body = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || /^\s*$/.test(lines[i]))) {
        body.push(lines[i++].replace(/^( {4}|\t)/, ""));
      }
      frag.append(codeBlock(body.join("\n").replace(/\n+$/, ""), ""));
      continue;
    }
    const para = [];
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !startsBlock(lines[i])) para.push(lines[i++]);
    if (para.length === 0) para.push(lines[i++]);
    const p = h("p");
    para.forEach((text, n) => {
      if (n > 0) p.append(h("br"));
      p.append(inline(text.trim()));
    });
    frag.append(p);
  }
  return frag;
}

function startsBlock(line) {
  return /^\s{0,3}(`{3,}|~{3,}|#{1,6}\s|>)/.test(line) || listItem(line) !== null;
}

function listItem(line) {
  const m = line.match(/^\s{0,3}([-*+]|(\d{1,9})[.)])\s+(.*)$/);
  if (!m) return null;
  return { ordered: m[2] !== undefined, start: m[2] ? Number(m[2]) : 1, text: m[3] };
}

function codeBlock(code, lang) {
  const el = h("code", { text: showControls(code) }); // commands and file names: bidi controls shown
  if (lang) el.dataset.lang = lang;
  return h("pre", { class: "md-code" }, el);
}

// Inline spans, longest-first: code, links, bold, strike, italic.
const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\[([^\]\n]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|~~(?=\S)([\s\S]*?\S)~~|\*(?=[^\s*])([\s\S]*?[^\s*])\*|\b_(?=[^\s_])([\s\S]*?[^\s_])_\b/;

/** Inline Markdown of one line or paragraph, as a DocumentFragment of safe nodes. */
export function inline(text) {
  const frag = document.createDocumentFragment();
  let rest = String(text);
  while (rest) {
    const m = rest.match(INLINE);
    if (!m) { frag.append(rest); break; }
    if (m.index > 0) frag.append(rest.slice(0, m.index));
    if (m[1] !== undefined) frag.append(h("code", { text: showControls(m[2].replace(/^ (.*) $/, "$1")) }));
    else if (m[3] !== undefined) {
      const url = m[4];
      if (SAFE_URL.test(url)) {
        frag.append(h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, inline(m[3])));
      } else frag.append(m[0]);
    } else if (m[5] !== undefined || m[6] !== undefined) frag.append(h("strong", {}, inline(m[5] ?? m[6])));
    else if (m[7] !== undefined) frag.append(h("del", {}, inline(m[7])));
    else frag.append(h("em", {}, inline(m[8] ?? m[9])));
    rest = rest.slice(m.index + m[0].length);
  }
  return frag;
}
