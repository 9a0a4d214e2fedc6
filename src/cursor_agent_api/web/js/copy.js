// Copy buttons on code, commands and output. The text copied is what the page shows (read
// from the element at click time, as text). Buttons are ordinary <button>s: Tab reaches them,
// Enter and Space press them. The result is announced in the page's status region.

import { h, announce } from "./dom.js";

const FEEDBACK_MS = 1500;

/** A "Copy" button labelled "Copy <what>" that copies getText(button). What it copies is found
 * from the button when it is pressed (a card updated in place keeps its buttons, and the
 * text they copy may have changed since). */
export function copyButton(what, getText) {
  const button = h("button", { type: "button", class: "copy", "aria-label": `Copy ${what}`, text: "Copy" });
  button.addEventListener("click", async () => {
    const ok = await copyText(getText(button));
    button.textContent = ok ? "Copied" : "Copy failed";
    announce(ok ? `Copied the ${what}.` : `Could not copy the ${what}: select it and press Ctrl+C.`);
    clearTimeout(button.copyTimer);
    button.copyTimer = setTimeout(() => { button.textContent = "Copy"; }, FEEDBACK_MS);
  });
  return button;
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return fallbackCopy(text); // no Clipboard API (not a secure context) or refused
  }
}

function fallbackCopy(text) {
  const area = h("textarea", { class: "copy-buffer", readonly: "", "aria-hidden": "true" });
  area.value = text;
  document.body.append(area);
  const focused = document.activeElement;
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  area.remove();
  focused?.focus?.();
  return ok;
}

// The text a card's copy button copies: the element next to it (its command before it, the
// block after its row).
const before = (button) => button.previousElementSibling?.textContent || "";
const below = (button) => button.parentElement?.nextElementSibling?.textContent || "";

/** Copy buttons in a tool card (or in what will be its content, `card` having its
 * data-kind): its command, each output block and its diff. */
export function addCardCopyButtons(card) {
  if (card.dataset.kind === "shell") {
    const summary = card.querySelector(".card-summary");
    if (summary && summary.textContent) summary.after(copyButton("command", before));
  }
  for (const details of card.querySelectorAll("details.card-output")) {
    const pre = details.querySelector(":scope > pre");
    if (!pre) continue;
    const label = (details.querySelector("summary")?.textContent || "output").replace(/\s*\(.*$/, "");
    pre.before(h("div", { class: "copy-row" }, copyButton(label, below)));
  }
  for (const pre of card.querySelectorAll("pre.diff")) {
    pre.before(h("div", { class: "copy-row" }, copyButton("diff", (b) => below(b).replace(/\n$/, ""))));
  }
}

/** Copy buttons on the code blocks of a rendered Markdown message. */
export function addCodeCopyButtons(root) {
  for (const pre of root.querySelectorAll("pre")) {
    pre.before(h("div", { class: "copy-row" }, copyButton("code", below)));
  }
}
