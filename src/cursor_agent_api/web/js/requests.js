// What an ACP run asks a person (docs/web.md, "ACP chats"): a permission request (the tool's
// kind and its command, path or diff: Allow once, Always allow — each only when the agent
// offers it — and Reject), a question (its options, Answer, Skip) or a plan (Accept, Reject).
// Each is a card built from its `request` record; the answer is
// `POST /api/runs/{run}/requests/{id}`; the `answered` record (from a person, the server's
// timeout, a cancel or a restart) shows the decision.
//
// A request the server cut (a field over its size limit: the record's `truncated`) says so,
// and its yes (Allow, Accept, Answer) stays off until Show all has shown all of it: nobody
// approves what they cannot see. Reject and Skip work at once.
//
// Keys: the buttons are ordinary buttons (Tab, Enter, Space); Escape on a card rejects
// (a permission, a plan) or skips (a question) while it waits, and never reaches the page's
// Esc (Stop). Every value is shown as text.

import { cutNote } from "./cut.js";
import { h, replace, showControls, showControlsDeep } from "./dom.js";

const KIND_LABELS = {
  shell: "Shell command", read: "Read", write: "Write", edit: "Edit", delete: "Delete",
  mcp: "MCP tool", web_fetch: "Web fetch", web_search: "Web search",
};

const DECISIONS = {
  "allow-once": "Allowed once", "allow-always": "Always allowed", reject: "Rejected",
  answered: "Answered", skipped: "Skipped", accepted: "Accepted", rejected: "Rejected",
  cancelled: "Cancelled",
};

const BY = {
  timeout: "no answer in time", cancel: "the run was cancelled", "run-end": "the run ended",
  restart: "the server restarted",
};

const YES = { permission: "Allow", question: "Answer", plan: "Accept" };

const shownAnswer = new WeakMap(); // card -> the answer it shows (a card rebuilt shows it again)

/** A new request card for `request` (a request record's payload); `answer(body)` posts the
 * person's answer and resolves to the answer record's payload. `whole`: `{url, bytes}` when
 * the server cut the request (`url` gives its whole payload as JSON), else null. */
export function createRequestCard(request, answer, whole = null) {
  // The log does not read a card out (aria-live off): the page announces it in one line
  // (timeline.js), and its decision line, a status region there from the start, says the
  // decision once.
  const card = h("article", {
    class: `card request request-${request.kind}`, role: "group", tabindex: "-1", "aria-live": "off",
    dataset: { requestId: request.request_id, kind: request.kind, state: "pending" },
  });
  const held = (b) => b.dataset.yes !== undefined && card.dataset.cut === "true";
  const send = async (body, buttons) => {
    // A disabled button loses the focus to <body>: it goes to the card first, where the
    // decision will show (and Tab finds the buttons again if the answer is not sent).
    if (card.contains(document.activeElement)) card.focus();
    for (const b of buttons) b.disabled = true;
    try {
      showAnswer(card, await answer(body));
    } catch (err) {
      for (const b of buttons) b.disabled = held(b);
      const note = card.querySelector(".request-error") || card.appendChild(h("p", { class: "request-error card-error", role: "alert" }));
      note.textContent = err.status === 409 ? "This request already has its answer." : `Not sent: ${err.message}`;
    }
  };
  let onEscape = null;
  const build = (raw, cut) => {
    const req = showControlsDeep(raw);
    card.dataset.cut = String(Boolean(cut));
    if (req.kind === "permission") onEscape = permission(card, req, raw, send);
    else if (req.kind === "question") onEscape = question(card, req, raw, send);
    else if (req.kind === "plan") onEscape = plan(card, req, send);
    card.append(h("p", { class: "request-decision", role: "status" }));
    if (cut) {
      for (const b of card.querySelectorAll("button[data-yes]")) b.disabled = true;
      const note = cutNote(cut.url, cut.bytes, (text) => build(JSON.parse(text), null), "request");
      note.append(h("span", { class: "cut-held", text: ` ${YES[req.kind] || "Yes"} stays off until you have seen all of it.` }));
      card.querySelector(".request-body")?.before(note);
    }
    const done = shownAnswer.get(card);
    if (done) showAnswer(card, done);
  };
  build(request, whole);
  card.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape") return;
    ev.preventDefault();
    ev.stopPropagation(); // Esc on a card answers it (once); it never stops the run
    if (onEscape && card.dataset.state === "pending") onEscape();
  });
  return card;
}

/** Focus the card itself (a request that just arrived while the focus was nowhere): never
 * one of its buttons, which a stray Space or Enter would press. Tab then reaches them. */
export function focusRequest(card) {
  card.focus();
}

function actions(...buttons) {
  return h("div", { class: "request-actions" }, buttons);
}

/** A button; `yes`: it approves (held while the request is cut). */
function button(text, cls, onclick, yes = false) {
  return h("button", { type: "button", class: cls, text, onclick, dataset: yes ? { yes: "" } : {} });
}

/** A value from the agent as text: a string as it is, anything else as JSON. */
function asText(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function permission(card, req, raw, send) {
  const tool = req.tool || {};
  const label = KIND_LABELS[tool.kind] || "Tool";
  const what = tool.command || tool.path || (tool.mcp_server ? `${tool.mcp_server}:${tool.mcp_tool || ""}` : "") || tool.summary || tool.title || "";
  card.setAttribute("aria-label", `The agent asks to run: ${label} ${what}`);
  // the allow buttons the agent offers (a record without options: both); Reject always
  const kinds = Array.isArray(raw.options) ? new Set(raw.options.map((o) => o && o.kind)) : null;
  const offers = (kind) => !kinds || kinds.has(kind);
  const all = [];
  const go = (decision) => send({ decision }, all);
  if (offers("allow_once")) all.push(button("Allow once", "primary", () => go("allow-once"), true));
  if (offers("allow_always")) all.push(button("Always allow", "", () => go("allow-always"), true));
  all.push(button("Reject", "danger", () => go("reject")));
  replace(card,
    h("header", { class: "card-head" },
      h("span", { class: "card-kind", text: `Allow? ${label}` }),
      h("code", { class: "card-summary request-what", text: what })),
    h("div", { class: "request-body" },
      tool.path && tool.path !== what ? h("p", { class: "card-path", text: tool.path }) : null,
      tool.diff ? h("pre", { class: "request-diff", text: tool.diff }) : null,
      req.reason ? h("p", { class: "card-desc", text: req.reason }) : null),
    actions(...all),
    h("p", { class: "help", text: "Enter answers with the focused button; Esc rejects." }));
  return () => go("reject");
}

function question(card, req, raw, send) {
  card.setAttribute("aria-label", `The agent asks: ${req.title || "a question"}`);
  const all = [];
  const count = (n) => Number(n).toLocaleString("en");
  // ids as the server sent them (compared, never shown); labels with controls made visible
  const sets = (req.questions || []).map((q, qi) => {
    const type = q.allow_multiple ? "checkbox" : "radio";
    const name = `q-${raw.request_id}-${qi}`;
    const options = raw.questions[qi].options || [];
    const cut = q.options_offered > options.length
      ? h("p", { class: "card-note", text: `The agent offered ${count(q.options_offered)} options; the first ${options.length} are shown.` })
      : null;
    return h("fieldset", { class: "request-question", dataset: { questionId: asText(raw.questions[qi].id) } },
      h("legend", { text: q.prompt || req.title || "Question" }),
      (q.options || []).map((o, oi) => h("label", { class: "check" },
        h("input", { type, name, value: asText(options[oi].id), checked: type === "radio" && oi === 0 }),
        ` ${asText(o.label || o.id)}`)),
      cut);
  });
  const submit = () => {
    const answers = sets.map((el) => ({
      question_id: el.dataset.questionId,
      option_ids: [...el.querySelectorAll("input:checked")].map((i) => i.value),
    })).filter((a) => a.option_ids.length);
    if (!answers.length) {
      const note = card.querySelector(".request-error") || card.appendChild(h("p", { class: "request-error card-error", role: "alert" }));
      note.textContent = "Pick an option first, or Skip.";
      return;
    }
    send({ answers }, all);
  };
  all.push(button("Answer", "primary", submit, true), button("Skip", "", () => send({ skip: true }, all)));
  const more = req.questions_offered > sets.length
    ? h("p", { class: "card-note", text: `The agent asked ${count(req.questions_offered)} questions; the first ${sets.length} are shown.` })
    : null;
  replace(card,
    h("header", { class: "card-head" },
      h("span", { class: "card-kind", text: "Question" }),
      h("span", { class: "card-summary", text: req.title || "" })),
    h("div", { class: "request-body" }, sets, more),
    actions(...all),
    h("p", { class: "help", text: "Pick an option, then Answer (Enter); Esc skips." }));
  return () => send({ skip: true }, all);
}

function plan(card, req, send) {
  card.setAttribute("aria-label", `The agent proposes a plan: ${req.name || ""}`);
  const all = [];
  all.push(button("Accept", "primary", () => send({ accept: true }, all), true),
    button("Reject", "danger", () => send({ accept: false }, all)));
  const todos = Array.isArray(req.todos) ? req.todos : [];
  replace(card,
    h("header", { class: "card-head" },
      h("span", { class: "card-kind", text: "Plan" }),
      h("span", { class: "card-summary", text: req.name || "" })),
    h("div", { class: "request-body" },
      req.overview ? h("p", { text: req.overview }) : null,
      req.plan ? h("pre", { class: "request-plan", text: req.plan }) : null,
      todos.length ? h("ul", { class: "card-list" }, todos.map((t) => h("li", { text: asText(t?.content ?? t?.id ?? t) }))) : null),
    actions(...all),
    h("p", { class: "help", text: "Enter answers with the focused button; Esc rejects." }));
  return () => send({ accept: false }, all);
}

/** Show the decision (`answer`: an `answered` record's payload) instead of the buttons; a
 * question's options are ticked as answered (none when it was not answered). */
export function showAnswer(card, answer) {
  if (!answer) return;
  shownAnswer.set(card, answer);
  const decision = String(answer.decision || "");
  card.dataset.state = "answered";
  card.dataset.decision = decision;
  const hadFocus = card.contains(document.activeElement);
  for (const el of card.querySelectorAll(".request-actions, .help, .request-error, .cut-held")) el.remove();
  const chosen = new Map(); // fieldset -> ids of its options chosen
  const labels = [];
  const fieldsets = [...card.querySelectorAll("fieldset.request-question")];
  for (const a of decision === "answered" && Array.isArray(answer.answers) ? answer.answers : []) {
    const set = fieldsets.find((f) => f.dataset.questionId === a.question_id);
    const ids = (a.option_ids || []).map(String);
    if (set) chosen.set(set, new Set(ids));
    for (const id of ids) {
      const input = set && [...set.querySelectorAll("input")].find((i) => i.value === id);
      labels.push(input ? input.parentElement.textContent.trim() : id);
    }
  }
  for (const set of fieldsets) {
    for (const input of set.querySelectorAll("input")) {
      input.checked = Boolean(chosen.get(set)?.has(input.value));
      input.disabled = true;
    }
  }
  let text = DECISIONS[decision] || decision;
  if (labels.length) text += `: ${labels.join(", ")}`;
  const why = BY[answer.by];
  if (why) text += ` (${why})`;
  const line = card.querySelector(".request-decision");
  text = showControls(text);
  if (line.textContent !== text) line.textContent = text; // (an answer shown again: said once)
  card.classList.toggle("status-rejected", ["reject", "rejected", "skipped", "cancelled"].includes(decision));
  card.classList.toggle("status-succeeded", ["allow-once", "allow-always", "answered", "accepted"].includes(decision));
  if (hadFocus) card.focus();
}
