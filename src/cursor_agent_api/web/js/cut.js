// Long values cut by the server (docs/server.md, "Size limits"): a text says its whole
// size (`bytes`) and the record that holds it, a tool call's card is `truncated`; "Show
// all" fetches the whole value (…/events/{seq}/value?field=…, …/tool-calls/{index}/output)
// and shows it as text.

import { api } from "./api.js";
import { copyButton } from "./copy.js";
import { h, replace, showControls } from "./dom.js";

function size(bytes) {
  if (bytes >= 1048576) return `${(bytes / 1048576).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

/** A note "Cut … Show all"; `url` gives the whole value (text), `bytes` its size if known,
 * `what` names it ("output", "content", ...); `show(text)` gets it once fetched. (A 401, the
 * session ended, shows the page's sign-in form: api.js.) */
export function cutNote(url, bytes, show, what = "") {
  const label = () => {
    const named = what ? `Show all ${what}` : "Show all";
    return bytes ? `${named} (${size(bytes)})` : named;
  };
  const button = h("button", { type: "button", class: "show-all", text: label() });
  const note = h("p", { class: "card-note cut-note" },
    h("span", { text: `Long ${what || "output"}: only its beginning is shown. ` }), button);
  button.addEventListener("click", async () => {
    button.disabled = true;
    button.textContent = "Loading…";
    try {
      show(await api.wholeValue(url));
      note.remove();
    } catch (e) {
      button.disabled = false;
      button.textContent = label();
      replace(note, h("span", { text: `Could not load it (${e.message}). ` }), button);
    }
  });
  return note;
}

/** The whole value, as plain text (never Markdown or HTML: it may be megabytes), with its
 * Copy button ("Copy whole <what>"). Bidi controls in it are shown as visible markers, never
 * applied, as in the card it completes (a file list, output, a diff: docs/web.md, Safety);
 * Copy copies what is shown. */
export function wholeText(text, what = "text") {
  const pre = h("pre", { class: "whole-value" }, h("code", { text: showControls(text) }));
  return h("div", { class: "whole" },
    h("div", { class: "copy-row" }, copyButton(`whole ${what}`, () => pre.textContent)), pre);
}
