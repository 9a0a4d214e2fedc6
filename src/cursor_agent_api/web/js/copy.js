// Copy buttons on code, commands and output. The text copied is what the page shows (read
// from the element at click time, as text). Buttons are ordinary <button>s: Tab reaches them,
// Enter and Space press them. The result is announced in the page's status region.

import { h, announce } from "./dom.js";

const FEEDBACK_MS = 1500;

/** A "Copy" button labelled "Copy <what>" that copies getText(button). What it copies is found
 * from the button when it is pressed (a card updated in place keeps its buttons, and the
 * text they copy may have changed since). A card's buttons name their field instead
 * (cardCopyButton): `what` and `getText` are then unused. */
export function copyButton(what, getText) {
  const button = h("button", { type: "button", class: "copy", "aria-label": `Copy ${what}`, text: "Copy" });
  button.addEventListener("click", async () => {
    // a card's button (kept by a drawing of the card where it is another field's) copies the
    // field it names now, and says that one
    const field = button.dataset.copies;
    const el = field ? fieldElement(button, field) : null;
    // a field the server cut holds only its beginning (cards.js, data-cut-lines): said so
    const part = el?.dataset.cutLines;
    const named = !field ? what : part
      ? `first ${Number(part).toLocaleString("en")} lines of the ${button.dataset.what} (it was cut: Show all loads the whole)`
      : button.dataset.what;
    const ok = await copyText(field ? fieldText(el, field) : getText(button));
    button.textContent = ok ? (part ? "Copied the beginning" : "Copied") : "Copy failed";
    announce(ok ? `Copied the ${named}.` : `Could not copy the ${named}: select it and press Ctrl+C.`);
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

// A card's copy button names its field (data-copies), and the field's element says which it is
// (data-copy-field): at each drawing of the card both are written from the card's fields, so a
// button kept from an earlier drawing (morph keeps nodes by their place) copies its own field.
function cardCopyButton(what, field) {
  const button = copyButton(what, null);
  button.dataset.copies = field;
  button.dataset.what = what;
  return button;
}

/** The element of field `field` in the card holding `button`. */
function fieldElement(button, field) {
  const card = button.closest("[data-kind]");
  return [...(card?.querySelectorAll("[data-copy-field]") || [])].find((e) => e.dataset.copyField === field);
}

/** The text of a card's field element `el` (a diff without its last newline). */
function fieldText(el, field) {
  const text = el?.textContent || "";
  return field === "diff" ? text.replace(/\n$/, "") : text;
}

/** Copy buttons in a tool card (or in what will be its content, `card` having its
 * data-kind): its command, each output block and its diff. */
export function addCardCopyButtons(card) {
  if (card.dataset.kind === "shell") {
    const summary = card.querySelector(".card-summary");
    if (summary && summary.textContent) {
      summary.dataset.copyField = "command";
      summary.after(cardCopyButton("command", "command"));
    }
  }
  for (const details of card.querySelectorAll("details.card-output")) {
    const pre = details.querySelector(":scope > pre");
    if (!pre) continue;
    const label = (details.querySelector("summary")?.textContent || "output").replace(/\s*\(.*$/, "");
    pre.dataset.copyField = label;
    pre.before(h("div", { class: "copy-row" }, cardCopyButton(label, label)));
  }
  for (const pre of card.querySelectorAll("pre.diff")) {
    pre.dataset.copyField = "diff";
    pre.before(h("div", { class: "copy-row" }, cardCopyButton("diff", "diff")));
  }
}

// A code block's button copies the block after its row.
const below = (button) => button.parentElement?.nextElementSibling?.textContent || "";

/** Copy buttons on the code blocks of a rendered Markdown message. */
export function addCodeCopyButtons(root) {
  for (const pre of root.querySelectorAll("pre")) {
    pre.before(h("div", { class: "copy-row" }, copyButton("code", below)));
  }
}
