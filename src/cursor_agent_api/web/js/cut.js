// Long values cut by the server (docs/server.md, "Size limits"): a record lists what it
// cut in `truncated` ({field: JSON pointer, bytes: whole size}); "Show all" fetches the
// whole value from GET /api/chats/{id}/events/{seq}/value?field=… and shows it as text.

import { h, replace } from "./dom.js";

function size(bytes) {
  if (bytes >= 1048576) return `${(bytes / 1048576).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

/** The cut of `rec` to offer in full: the one at `field`, else the longest (never /raw). */
export function cutOf(rec, field = null) {
  const cuts = (rec.truncated || []).filter((c) => c.field !== "/raw");
  if (field) return cuts.find((c) => c.field === field) || null;
  return cuts.reduce((a, c) => (!a || c.bytes > a.bytes ? c : a), null);
}

/** A note "Cut … Show all"; `show(text)` gets the whole value once fetched. */
export function cutNote(rec, cut, show) {
  const button = h("button", { type: "button", class: "show-all", text: `Show all (${size(cut.bytes)})` });
  const note = h("p", { class: "card-note cut-note" },
    h("span", { text: "Long output: only its beginning is shown. " }), button);
  button.addEventListener("click", async () => {
    button.disabled = true;
    button.textContent = "Loading…";
    const url = `/api/chats/${encodeURIComponent(rec.chat_id)}/events/${rec.seq}/value?field=${encodeURIComponent(cut.field)}`;
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      show(await response.text());
      note.remove();
    } catch (e) {
      button.disabled = false;
      button.textContent = `Show all (${size(cut.bytes)})`;
      replace(note, h("span", { text: `Could not load it (${e.message}). ` }), button);
    }
  });
  return note;
}

/** The whole value, as plain text (never Markdown or HTML: it may be megabytes). */
export function wholeText(text) {
  return h("pre", { class: "whole-value" }, h("code", { text }));
}
