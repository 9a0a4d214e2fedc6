// The conversation view: folds a chat's records (in seq order, each once) into
// the page, following seed 002's display rules:
//
// * the user's prompt comes from the server's `run/queued` record;
// * assistant text streams in and is rendered as Markdown (markdown.js, safe);
//   deltas grow the current segment, a whole message replaces the segment's
//   deltas (or starts a new one), a tool call closes the segment;
// * thinking is shown only while it is the latest thing happening, then folds
//   away into a closed <details>;
// * tool calls are cards that move from running to their outcome (cards.js);
// * only the latest run's result (status, usage, duration) is shown, in the
//   result bar; failures are shown plainly in the stream with their remedy.

import { h, replace, formatDuration, lineCount } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { createCard, drawCard, mergeView } from "./cards.js";
import { addCardCopyButtons, addCodeCopyButtons } from "./copy.js";
import { cutNote, cutOf, wholeText } from "./cut.js";

const FINAL = new Set(["succeeded", "failed", "cancelled", "interrupted"]);

// What to do about a failure, by the error's type (the message says what happened).
const REMEDIES = {
  AuthenticationError: "Log the agent in (`agent login`), or start the server with CURSOR_API_KEY set and `--pass-env CURSOR_API_KEY`.",
  WorkspaceTrustError: "Start a new chat with “Trust the workspace” checked, or trust it once in the agent CLI.",
  InvalidModelError: "Start a new chat with another model (`agent models` lists them), or leave the model empty.",
  UsageLimitError: "Wait for the usage limit to reset, or pick another model.",
  SessionError: "The agent could not resume this chat: start a new chat.",
  AgentNotFoundError: "Install Cursor's agent CLI, or start the server with --agent-binary PATH (or --simulate).",
  AgentTimeoutError: "The run went over its time limit: send the prompt again, or start the server with a larger --run-timeout / --idle-timeout.",
  AgentProcessError: "The agent process failed: the message above is what it said; send the prompt again once it is fixed.",
  ServerRestart: "The server stopped during this run: send the prompt again to continue.",
};

// A prompt longer than this is shown folded, with a button to show it all.
const PROMPT_FOLD_CHARS = 1500;
const PROMPT_FOLD_LINES = 12;

/** The user's prompt: whole when short; folded (first lines, "Show all") when long. */
function promptBlock(prompt) {
  const text = h("div", { class: "msg-text", text: prompt });
  const lines = prompt.split("\n");
  if (prompt.length <= PROMPT_FOLD_CHARS && lines.length <= PROMPT_FOLD_LINES) return [text];
  const head = lines.slice(0, PROMPT_FOLD_LINES).join("\n").slice(0, PROMPT_FOLD_CHARS);
  const size = prompt.length >= 10_000 ? `${Math.round(prompt.length / 1000)} K characters` : `${prompt.length} characters`;
  const n = lineCount(prompt);
  const more = `Show all (${n.toLocaleString()} line${n === 1 ? "" : "s"}, ${size})`;
  text.textContent = `${head}…`;
  const toggle = h("button", { type: "button", class: "msg-more", "aria-expanded": "false", text: more });
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    text.textContent = open ? prompt : `${head}…`;
    toggle.textContent = open ? "Show less" : more;
    toggle.setAttribute("aria-expanded", String(open));
  });
  return [text, toggle];
}

export class Timeline {
  /** container: the stream element; resultBar: where the latest result goes. */
  constructor(container, resultBar, { onRunChange, workspace } = {}) {
    this.container = container;
    this.workspace = workspace || "";
    this.resultBar = resultBar;
    this.onRunChange = onRunChange || (() => {});
    this.reset();
  }

  reset() {
    replace(this.container);
    replace(this.resultBar);
    this.resultBar.hidden = true;
    this.segment = null; // {el, text, fromDeltas}
    this.thinking = null; // {el, body, text, done}
    this.cards = new Map(); // call_id -> {el, view}
    this.runs = new Map(); // run_id -> run view
    this.latestRun = null;
    this.lastError = null; // {el, message} of the last error block
    this.rejected = new Map(); // run id -> Set of the kinds of its rejected tool calls
    this.dirty = new Set();
    this.frame = 0;
  }

  /** The run that is queued or running, if any. */
  get activeRun() {
    return this.latestRun && !FINAL.has(this.latestRun.status) ? this.latestRun : null;
  }

  /** Apply one record (see docs/websocket.md for its fields). */
  apply(rec) {
    const stick = this.nearBottom();
    const type = rec.type;
    if (type === "run") this.runRecord(rec);
    else if (type === "thinking:delta") this.think(rec.payload?.text || "");
    else if (type === "thinking:completed") {
      if (this.thinking) this.thinking.done = true;
    } else if (type === "assistant:delta") this.assistant(rec.payload?.text || "", true);
    else if (type === "assistant") {
      const el = this.assistant(rec.payload?.text || "", false);
      const cut = el && cutOf(rec, "/payload/text");
      if (cut) el.after(cutNote(rec, cut, (text) => replace(el, wholeText(text))));
    }
    else if (type === "tool-call-started" || type === "tool-call-completed") this.tool(rec);
    else if (type === "error") this.failure(rec.payload?.text || "the agent reported an error", null);
    else if (type === "connection" || type === "retry") {
      this.foldThinking();
      this.notice(type === "retry" ? "The agent is retrying a request…" : `Agent connection: ${rec.subtype || ""}`);
    }
    // system:init, user (the prompt is shown from run/queued), result:* (the run
    // record that follows carries its usage and duration), raw, interaction_query
    // and unknown records are not displayed.
    if (stick) this.scrollToEnd();
  }

  // ---- records -------------------------------------------------------------------------

  runRecord(rec) {
    const run = rec.payload?.run || {};
    const status = rec.subtype || run.status;
    run.status = status;
    this.runs.set(run.id || rec.run_id, run);
    this.latestRun = run;
    if (status === "queued") {
      this.resultBar.hidden = true; // the previous result is no longer the latest
      this.closeSegment();
      this.foldThinking();
      for (const offer of this.container.querySelectorAll(".offer")) offer.remove();
      this.container.append(h("div", { class: "msg user", dataset: { runId: run.id || "" } },
        h("span", { class: "sr-only", text: "You: " }),
        promptBlock(run.prompt || "")));
    } else if (FINAL.has(status)) {
      this.foldThinking();
      this.closeSegment();
      this.finishCards();
      if (status === "failed" || status === "interrupted") {
        this.failure(run.error || `the run ${status}`, run.error_type);
      } else if (status === "cancelled") {
        this.notice("Stopped: the run was cancelled.", "cancelled");
      }
      this.showResult(run);
    }
    this.onRunChange(run);
  }

  think(text) {
    if (!this.thinking) {
      const body = h("p", { class: "thinking-text" });
      const el = h("div", { class: "thinking thinking-live", "aria-live": "off" },
        h("span", { class: "thinking-label", text: "Thinking…" }), body);
      this.container.append(el);
      this.thinking = { el, body, text: "", done: false };
    }
    this.thinking.text += text;
    this.thinking.body.textContent = this.thinking.text;
  }

  /** Thinking is no longer the latest thing: fold it into a closed <details>. */
  foldThinking() {
    const t = this.thinking;
    if (!t) return;
    this.thinking = null;
    const folded = h("details", { class: "thinking thinking-folded" },
      h("summary", { text: "Thought" }), h("p", { class: "thinking-text", text: t.text }));
    t.el.replaceWith(folded);
  }

  assistant(text, isDelta) {
    this.foldThinking();
    if (isDelta) {
      if (!this.segment || !this.segment.fromDeltas) this.openSegment(true);
      this.segment.text += text;
    } else if (this.segment && this.segment.fromDeltas) {
      this.segment.text = text; // the whole segment replaces its deltas
      this.render(this.segment);
      const { el } = this.segment;
      this.segment = null;
      return el;
    } else {
      this.openSegment(false);
      this.segment.text = text;
      this.render(this.segment);
      const { el } = this.segment;
      this.segment = null;
      return el;
    }
    this.schedule(this.segment);
  }

  openSegment(fromDeltas) {
    // While text streams in, aria-busy keeps screen readers from reading every fragment.
    const el = h("div", { class: "msg assistant", "aria-busy": fromDeltas ? "true" : null });
    this.container.append(el);
    this.segment = { el, text: "", fromDeltas };
  }

  closeSegment() {
    if (this.segment) this.render(this.segment);
    this.segment = null;
  }

  tool(rec) {
    this.foldThinking();
    this.closeSegment();
    const view = rec.tool_call;
    if (!view || !view.call_id) return;
    let entry = this.cards.get(view.call_id);
    if (!entry) {
      entry = { el: createCard(), view: null };
      entry.el.dataset.callId = view.call_id;
      this.cards.set(view.call_id, entry);
      this.container.append(entry.el);
    }
    entry.view = mergeView(entry.view, view);
    const cut = cutOf(rec);
    if (cut) entry.cut = { rec, cut };
    if (entry.view.status === "rejected" && rec.run_id) {
      if (!this.rejected.has(rec.run_id)) this.rejected.set(rec.run_id, new Set());
      this.rejected.get(rec.run_id).add(entry.view.kind);
    }
    this.draw(entry);
  }

  draw(entry) {
    drawCard(entry.el, entry.view, this.workspace);
    addCardCopyButtons(entry.el);
    if (entry.cut) {  // fields the server cut: a note with Show all
      const card = entry.el;
      card.append(cutNote(entry.cut.rec, entry.cut.cut, (text) => card.append(wholeText(text))));
    }
  }

  /** The kinds of run `runId`'s rejected tool calls (not allowed in this chat); empty if none. */
  rejectedKinds(runId) {
    return this.rejected.get(runId) || new Set();
  }

  /** Show an offer (an element) at the end of the stream; the next prompt removes it. */
  addOffer(el) {
    const stick = this.nearBottom();
    el.classList.add("offer");
    this.container.append(el);
    if (stick) this.scrollToEnd();
  }

  /** The run is over: calls still "running" will never complete. */
  finishCards() {
    for (const entry of this.cards.values()) {
      if (entry.view.status === "running") {
        entry.view = { ...entry.view, status: "abandoned", error: "the run ended before this call completed" };
        this.draw(entry);
      }
    }
  }

  failure(message, errorType) {
    this.foldThinking();
    const remedy = REMEDIES[errorType] || "";
    const label = errorType ? `Error (${errorType}): ` : "Error: ";
    const last = this.lastError;
    if (last && last.message === message && last.el === this.container.lastElementChild) {
      // The run failed over the error the agent just reported: say it once, with the remedy.
      last.el.querySelector("strong").textContent = label;
      if (remedy && !last.el.querySelector(".remedy")) {
        last.el.append(h("p", { class: "remedy", text: `What to do: ${remedy}` }));
      }
      return;
    }
    const el = h("div", { class: "msg error", role: "note" },
      h("strong", { text: label }),
      h("span", { class: "error-text", text: message }),
      remedy ? h("p", { class: "remedy", text: `What to do: ${remedy}` }) : null);
    this.container.append(el);
    this.lastError = { el, message };
  }

  notice(text, cls = "") {
    this.container.append(h("p", { class: `notice ${cls}`, text }));
  }

  /** The result bar shows the latest finished run only. */
  showResult(run) {
    const usage = run.usage || null;
    const parts = [];
    if (run.duration_ms !== null && run.duration_ms !== undefined) parts.push(formatDuration(run.duration_ms));
    if (usage) {
      parts.push(`${(usage.input_tokens || 0).toLocaleString()} tokens in`);
      parts.push(`${(usage.output_tokens || 0).toLocaleString()} out`);
      if (usage.cache_read_tokens) parts.push(`${usage.cache_read_tokens.toLocaleString()} cached`);
    }
    const label = { succeeded: "Done", failed: "Failed", cancelled: "Stopped", interrupted: "Interrupted" }[run.status] || run.status;
    replace(this.resultBar,
      h("span", { class: `result-status status-${run.status}`, text: label }),
      parts.length ? h("span", { class: "result-meta", text: parts.join(" · ") }) : null);
    this.resultBar.dataset.status = run.status;
    this.resultBar.hidden = false;
  }

  // ---- rendering -----------------------------------------------------------------------

  render(segment, done = true) {
    this.dirty.delete(segment);
    replace(segment.el, renderMarkdown(segment.text));
    addCodeCopyButtons(segment.el);
    if (done) segment.el.removeAttribute("aria-busy");
  }

  /** Re-render streaming text at most once per frame. */
  schedule(segment) {
    this.dirty.add(segment);
    if (this.frame) return;
    const flush = () => {
      this.frame = 0;
      const stick = this.nearBottom();
      for (const s of this.dirty) this.render(s, s !== this.segment);
      if (stick) this.scrollToEnd();
    };
    this.frame = document.hidden ? setTimeout(flush, 50) : requestAnimationFrame(flush);
  }

  nearBottom() {
    const el = this.container;
    return el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  }

  scrollToEnd() {
    this.container.scrollTop = this.container.scrollHeight;
  }
}
