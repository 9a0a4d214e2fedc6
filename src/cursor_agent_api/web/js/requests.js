// What an ACP run asks a person (docs/web.md, "ACP chats"): a permission request (the tool's
// kind and its command, path or diff: Allow once, Always allow, Reject), a question (its
// options, Answer, Skip) or a plan (Accept, Reject). Each is a card built from its `request`
// record; the answer is `POST /api/runs/{run}/requests/{id}`; the `answered` record (from a
// person, the server's timeout, a cancel or a restart) shows the decision.
//
// Keys: the buttons are ordinary buttons (Tab, Enter, Space); Escape on a card rejects
// (a permission, a plan) or skips (a question). Every value is shown as text.

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

/** A new request card for `request` (a request record's payload); `answer(body)` posts the
 * person's answer and resolves to the answer record's payload. */
export function createRequestCard(request, answer) {
  const req = showControlsDeep(request);
  const card = h("article", {
    class: `card request request-${req.kind}`, role: "group", tabindex: "-1",
    dataset: { requestId: request.request_id, kind: req.kind, state: "pending" },
  });
  const send = async (body, buttons) => {
    for (const b of buttons) b.disabled = true;
    try {
      showAnswer(card, await answer(body));
    } catch (err) {
      for (const b of buttons) b.disabled = false;
      const note = card.querySelector(".request-error") || card.appendChild(h("p", { class: "request-error card-error", role: "alert" }));
      note.textContent = err.status === 409 ? "This request already has its answer." : `Not sent: ${err.message}`;
    }
  };
  let onEscape = null;
  if (req.kind === "permission") onEscape = permission(card, req, send);
  else if (req.kind === "question") onEscape = question(card, req, request, send);
  else if (req.kind === "plan") onEscape = plan(card, req, send);
  card.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && onEscape && card.dataset.state === "pending") {
      ev.preventDefault();
      ev.stopPropagation(); // Esc here answers this card; it does not stop the run
      onEscape();
    }
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

function button(text, cls, onclick) {
  return h("button", { type: "button", class: cls, text, onclick });
}

function permission(card, req, send) {
  const tool = req.tool || {};
  const label = KIND_LABELS[tool.kind] || "Tool";
  const what = tool.command || tool.path || (tool.mcp_server ? `${tool.mcp_server}:${tool.mcp_tool || ""}` : "") || tool.summary || tool.title || "";
  card.setAttribute("aria-label", `The agent asks to run: ${label} ${what}`);
  const all = [];
  const go = (decision) => send({ decision }, all);
  all.push(button("Allow once", "primary", () => go("allow-once")),
    button("Always allow", "", () => go("allow-always")),
    button("Reject", "danger", () => go("reject")));
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
  // ids as the server sent them (compared, never shown); labels with controls made visible
  const sets = (req.questions || []).map((q, qi) => {
    const type = q.allow_multiple ? "checkbox" : "radio";
    const name = `q-${raw.request_id}-${qi}`;
    const ids = (raw.questions[qi].options || []).map((o) => o.id);
    return {
      id: raw.questions[qi].id,
      el: h("fieldset", { class: "request-question" },
        h("legend", { text: q.prompt || req.title || "Question" }),
        (q.options || []).map((o, oi) => h("label", { class: "check" },
          h("input", { type, name, value: ids[oi], checked: type === "radio" && oi === 0 }),
          ` ${o.label || o.id}`))),
    };
  });
  const submit = () => {
    const answers = sets.map(({ id, el }) => ({
      question_id: id,
      option_ids: [...el.querySelectorAll("input:checked")].map((i) => i.value),
    })).filter((a) => a.option_ids.length);
    if (!answers.length) return;
    send({ answers }, all);
  };
  all.push(button("Answer", "primary", submit), button("Skip", "", () => send({ skip: true }, all)));
  replace(card,
    h("header", { class: "card-head" },
      h("span", { class: "card-kind", text: "Question" }),
      h("span", { class: "card-summary", text: req.title || "" })),
    h("div", { class: "request-body" }, sets.map((s) => s.el)),
    actions(...all),
    h("p", { class: "help", text: "Pick an option, then Answer (Enter); Esc skips." }));
  return () => send({ skip: true }, all);
}

function plan(card, req, send) {
  card.setAttribute("aria-label", `The agent proposes a plan: ${req.name || ""}`);
  const all = [];
  all.push(button("Accept", "primary", () => send({ accept: true }, all)),
    button("Reject", "danger", () => send({ accept: false }, all)));
  const todos = Array.isArray(req.todos) ? req.todos : [];
  replace(card,
    h("header", { class: "card-head" },
      h("span", { class: "card-kind", text: "Plan" }),
      h("span", { class: "card-summary", text: req.name || "" })),
    h("div", { class: "request-body" },
      req.overview ? h("p", { text: req.overview }) : null,
      req.plan ? h("pre", { class: "request-plan", text: req.plan }) : null,
      todos.length ? h("ul", { class: "card-list" }, todos.map((t) => h("li", { text: String(t.content || t.id || "") }))) : null),
    actions(...all),
    h("p", { class: "help", text: "Enter answers with the focused button; Esc rejects." }));
  return () => send({ accept: false }, all);
}

/** Show the decision (`answer`: an `answered` record's payload) instead of the buttons. */
export function showAnswer(card, answer) {
  if (!answer) return;
  const decision = String(answer.decision || "");
  card.dataset.state = "answered";
  card.dataset.decision = decision;
  const hadFocus = card.contains(document.activeElement);
  for (const el of card.querySelectorAll(".request-actions, .help, .request-error")) el.remove();
  for (const input of card.querySelectorAll("input")) input.disabled = true;
  let text = DECISIONS[decision] || decision;
  if (decision === "answered" && Array.isArray(answer.answers)) {
    const labels = answer.answers.flatMap((a) => a.option_ids || []).map((id) => {
      const input = [...card.querySelectorAll("input")].find((i) => i.value === id);
      return input ? input.parentElement.textContent.trim() : id;
    });
    if (labels.length) text += `: ${labels.join(", ")}`;
  }
  const why = BY[answer.by];
  if (why) text += ` (${why})`;
  let line = card.querySelector(".request-decision");
  if (!line) {
    line = h("p", { class: "request-decision", role: "status" });
    card.append(line);
  }
  line.textContent = showControls(text);
  card.classList.toggle("status-rejected", ["reject", "rejected", "skipped", "cancelled"].includes(decision));
  card.classList.toggle("status-succeeded", ["allow-once", "allow-always", "answered", "accepted"].includes(decision));
  if (hadFocus) card.focus();
}
