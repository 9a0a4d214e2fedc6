// The conversation view. It never folds events: a chat opens from the server's folded
// state (GET /api/chats/{id}/turns: each run's segments, thinking blocks, tool calls and
// errors, by index), then applies the changes each live record carries (the one fold,
// protocol/transcript.py, made them on the server), following seed 002's display rules:
//
// * the user's prompt comes from the run (its `queued` record);
// * assistant text streams in and is rendered as Markdown (markdown.js, safe): a segment
//   grows by `text_appended`, is set by `segment_replaced`, ends by `segment_closed`;
// * thinking is shown only while it is the latest thing happening, then folds
//   away into a closed <details>;
// * tool calls are cards that move from running to their outcome (cards.js);
// * only the latest run's result (status, usage, duration) is shown, in the
//   result bar; failures are shown plainly in the stream with their remedy.

import { api } from "./api.js";
import { h, replace, announce, formatDuration, lineCount } from "./dom.js";
import { GrowingMarkdown } from "./markdown.js";
import { cardLine, createCard, drawCard } from "./cards.js";
import { addCodeCopyButtons } from "./copy.js";
import { cutNote, wholeText } from "./cut.js";
import { createRequestCard, focusRequest, showAnswer } from "./requests.js";

const FINAL = new Set(["succeeded", "failed", "cancelled", "interrupted"]);

// What to do about a failure, by the error's type (the message says what happened), for a
// person in a browser; a function of the message where one type covers faults with other
// remedies (a chat still busy in another agent process: waiting works, a new chat loses it).
const CHAT_BUSY = /may still be running/i; // the agent's words (runtime/stderr.py reads them too)
const REMEDIES = {
  AuthenticationError: "Log the agent in (`agent login`), or start the server with CURSOR_API_KEY set and `--pass-env CURSOR_API_KEY`.",
  WorkspaceTrustError: "Start a new chat with “Trust the workspace” checked, or trust it once in the agent CLI.",
  InvalidModelError: "Start a new chat with another model (`agent models` lists them), or leave the model empty.",
  UsageLimitError: "Wait for the usage limit to reset, or pick another model.",
  SessionError: (message) => (CHAT_BUSY.test(message)
    ? "An earlier turn of this chat may still be running in another agent process (another client's, or one a stopped server left): wait for it to end, or stop it, then send the prompt again."
    : "The agent could not resume this chat: start a new chat."),
  AgentNotFoundError: "Install Cursor's agent CLI, or start the server with --agent-binary PATH (or --simulate).",
  AgentStartError: "The server's machine is out of a resource the agent needs to start (the message above names it): free it or raise its limit, then send the prompt again.",
  AgentTimeoutError: "The run went over its time limit: send the prompt again, or start the server with a larger --run-timeout / --idle-timeout.",
  AgentProcessError: "The agent process failed: the message above is what it said; send the prompt again once it is fixed.",
  ServerRestart: "The server stopped during this run: send the prompt again to continue.",
};

// The remedies the library adds to its errors' messages ("<message> — <remedy>"), by type
// (GET /api/config: webui.library_remedies): advice for its Python API and command line
// ("AgentConfig(api_key=...)", "--trust"), shown in place of the page's by nobody.
let libraryRemedies = {};

/** The library's remedies, by error type (from the server's config). */
export function setLibraryRemedies(table) {
  libraryRemedies = table && typeof table === "object" ? table : {};
}

/** `message` without the library's remedy at its end, and the error type that remedy is of
 * (`type` if given: only its own are looked for; else any type the page has a remedy for). */
function withoutLibraryRemedy(message, type) {
  const types = type ? [type] : Object.keys(REMEDIES);
  for (const t of types) {
    for (const remedy of libraryRemedies[t] || []) {
      if (remedy && message.endsWith(` — ${remedy}`)) return { text: message.slice(0, -remedy.length - 3), type: t };
    }
  }
  return { text: message, type };
}

/** What to do about a failure of type `type` whose message is `message`, or "". */
function remedyFor(type, message) {
  const remedy = REMEDIES[type];
  return typeof remedy === "function" ? remedy(message) : remedy || "";
}

// A tool call's cut fields (webui.WHOLE_FIELDS), as its card's "Show all" names them.
const FIELD_NAMES = { output: "output", stdout: "stdout", stderr: "stderr", diff: "diff", new_content: "content" };
// A list card's output is its whole list, one item per line (webui.view_of): named as such.
const LIST_NAMES = { grep: "match list", glob: "file list", web_search: "result list" };

// Cut fields the card shows in an output block of its own (cards.js), which Show all fills
// with the whole: a shell's stdout and stderr, a read's content, a tool's output. The others
// (a diff, a write's content, a list card's whole list) come whole under the card.
// (A read's, a fetch's, a tool's or another call's output shows in its card only when it
// succeeded (cards.js): a failed one's whole output comes under the card, else Show all
// showed nothing.)
function shownInPlace(view, field) {
  const kind = view.kind;
  if (field === "stdout" || field === "stderr") return true;
  if (field !== "output" || LIST_NAMES[kind] || ["edit", "write", "delete", "todos"].includes(kind)) return false;
  return kind === "shell" || view.status === "succeeded";
}

// A streaming text rendered in under STREAM_RENDER_FREE_MS is rendered every frame; a slower
// one at most once per STREAM_RENDER_SHARE times what it took (a quarter of the page's time).
const STREAM_RENDER_FREE_MS = 8;
const STREAM_RENDER_SHARE = 4;

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
  constructor(container, resultBar, { onRunChange, onAnswer, workspace, chatId, earlier } = {}) {
    this.container = container;
    this.workspace = workspace || "";
    this.chatId = chatId || "";
    this.resultBar = resultBar;
    this.onRunChange = onRunChange || (() => {});
    this.onAnswer = onAnswer || (() => Promise.reject(new Error("cannot answer here")));
    this.earlier = earlier || null; // beforeRun -> the page of turns before that run
    // Stick to the bottom: decided by the reader's scrolling (a scroll event reads the layout
    // once), never per record — reading scrollHeight after each change forces a layout of the
    // whole conversation, and a long stream (thousands of thinking deltas or tool cards) froze.
    // The page's own scroll to the end fires its event a frame later, when records may have
    // made the page taller: a position at or below where the page put it is no scroll up.
    this.stick = true;
    this.autoTop = Infinity;
    this.onScroll = () => {
      this.stick = this.container.scrollTop + 1 >= this.autoTop || this.nearBottom();
      if (!this.stick) this.autoTop = Infinity;  // the reader scrolled away: theirs from now on
    };
    container.addEventListener("scroll", this.onScroll, { passive: true });
    // Zoom or a resized window changes the conversation's size, and the page keeps its
    // scrollTop: a view at the end went above it until the next record. It stays at the end
    // as on a new record (a reader who scrolled away stays where they were).
    this.size = null; // {el, width, height}: the container's last size
    this.resized = new ResizeObserver(([e]) => {
      const { width, height } = e.contentRect;
      const was = this.size;
      this.size = { el: e.target, width, height };
      if (was?.el === e.target && (was.width !== width || was.height !== height) && this.stick) this.scrollToEnd();
    });
    this.resized.observe(container);
    this.reset();
  }

  /** The page shows another chat (or none): this one stops watching the conversation. */
  close() {
    this.resized.disconnect();
    this.container.removeEventListener("scroll", this.onScroll);
  }

  reset() {
    replace(this.container);
    replace(this.resultBar);
    this.resultBar.hidden = true;
    this.texts = new Map(); // "run:kind:index" -> {el, text, done}: segments and thinking blocks
    this.thinking = null; // the thinking block shown live: {el, body, text}
    this.cards = new Map(); // "run:index" -> {el, view, runId, index}
    this.runs = new Map(); // run_id -> run view
    this.latestRun = null;
    this.lastError = null; // {el, message} of the last error block
    this.rejected = new Map(); // run id -> Set of the kinds of its rejected tool calls
    this.requests = new Map(); // request id -> its card (ACP chats: permissions, questions, plans)
    this.runSeq = new Map(); // run id -> the seq of its latest run record drawn
    this.early = new Map(); // request id -> its answer, come before the request (later)
    this.placingLate = false; // drawing a record in its place above the end (later)
    this.ended = []; // what to say of the calls that ended since the last frame (cardLine)
    this.dirty = new Set();
    this.frame = 0;
    this.stick = true;
    this.autoTop = Infinity;
  }

  /** The run that is queued or running, if any. */
  get activeRun() {
    return this.latestRun && !FINAL.has(this.latestRun.status) ? this.latestRun : null;
  }

  /** Show a chat from its folded state (GET /api/chats/{id}/turns): each run's prompt, its
   * items in order (text, thinking, tool calls, errors), how it ended. */
  load(state) {
    // The page hears of the latest run once, at the end: not of each run's queued and final
    // status on the way (the chats list was drawn twice per run: a long chat froze the tab).
    this.loading = true;
    try {
      this.quietly(() => {
        for (const { run, items } of state.runs || []) {
          const status = run.status;
          this.runStatus(run, "queued");
          for (const item of items) this.item(run.id, item);
          if (FINAL.has(status)) this.runStatus(run, status);
          else run.status = status;
        }
      });
    } finally {
      this.loading = false;
    }
    if (this.latestRun) this.onRunChange(this.latestRun);
    this.offerEarlier(state);
    this.scrollToEnd();
  }

  /** The chat has runs before those shown (`state.has_more`): a button at the top loads
   * them, a page at a time. Those runs are over (only a chat's newest run can be active):
   * what the WebSocket sends from the first page's last_seq on never changes them. */
  offerEarlier(state) {
    this.container.querySelector(".earlier-turns")?.remove();
    if (!state.has_more || !state.next_before_run || !this.earlier) return;
    const button = h("button", { type: "button", class: "earlier-turns", text: "Show earlier turns" });
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const page = await this.earlier(state.next_before_run);
        if (button.isConnected) this.prepend(page); // (not if the page showed another chat meanwhile)
      } catch (err) {
        button.disabled = false;
        button.textContent = `Could not load earlier turns (${err.message}): try again`;
        if (document.activeElement === document.body) button.focus();
      }
    });
    this.container.prepend(button);
  }

  /** Show a page of earlier runs above those shown, the reader's view kept where it is; the
   * focus (it was on the button) goes to the next "Show earlier turns", or the conversation. */
  prepend(state) {
    const { scrollTop, scrollHeight } = this.container;
    const shown = this.runs.size;
    this.quietly(() => this.prependRuns(state));
    this.container.scrollTop = scrollTop + this.container.scrollHeight - scrollHeight;
    const a = document.activeElement; // (nowhere: the button lost it when it was disabled)
    if (!a || a === document.body) {
      (this.container.querySelector(".earlier-turns") || this.container).focus({ preventScroll: true });
    }
    const n = this.runs.size - shown;
    announce(`Showed ${n} earlier turn${n === 1 ? "" : "s"}, above.`);
  }

  prependRuns(state) {
    const keep = [this.container, this.latestRun, this.thinking, this.lastError];
    const box = h("div");
    this.container = box;
    this.thinking = null;
    this.lastError = null;
    this.loading = true;
    this.earlierPage = true; // the result bar and the latest run stay the newest run's
    try {
      for (const { run, items } of state.runs || []) {
        if (this.runs.has(run.id)) continue; // shown already
        const status = run.status;
        this.runStatus(run, "queued");
        for (const item of items) this.item(run.id, item);
        if (FINAL.has(status)) this.runStatus(run, status);
        else run.status = status;
      }
      this.foldThinking();
    } finally {
      [this.container, this.latestRun, this.thinking, this.lastError] = keep;
      this.loading = false;
      this.earlierPage = false;
    }
    const button = this.container.querySelector(".earlier-turns");
    (button || this.container.firstChild)?.before(...box.childNodes);
    button?.remove();
    this.offerEarlier(state);
  }

  /** Run `fill` out of a screen reader's hearing: a chat's history (load) or a page of
   * earlier turns (prepend) is not read out as if it had just happened (the whole history
   * was queued for reading). The conversation and the result bar are filled as fresh copies
   * of themselves, then put in their place: a live region that arrives with its content is
   * not announced, only what changes in it afterwards. The focus, if in them, is kept. */
  quietly(fill) {
    const old = [this.container, this.resultBar];
    const focused = old.find((el) => el.contains(document.activeElement)) ? document.activeElement : null;
    const [container, resultBar] = old.map((el) => {
      const fresh = el.cloneNode(false);
      fresh.append(...el.childNodes);
      return fresh;
    });
    old[0].removeEventListener("scroll", this.onScroll);
    container.addEventListener("scroll", this.onScroll, { passive: true });
    this.resized.unobserve(old[0]);
    this.resized.observe(container);
    this.container = container;
    this.resultBar = resultBar;
    try {
      fill();
    } finally {
      old[0].replaceWith(container);
      old[1].replaceWith(resultBar);
    }
    if (focused === old[0]) container.focus({ preventScroll: true });
    else if (focused?.isConnected) focused.focus({ preventScroll: true });
  }

  item(runId, item) {
    if (item.type === "text") {
      const entry = this.text(runId, "text", item.index, item.text, item.closed);
      if (!item.closed) {
        entry.text = item.text; // still streaming
        this.schedule(entry);
      }
      if (item.bytes) this.cutText(entry, item.whole_seq, item.bytes);
    } else if (item.type === "thinking") {
      this.think(runId, item.index, item.text);
      if (item.bytes) this.cutPiece(this.thinking, item.whole_seq, item.bytes, 0, item.text.length);
      if (item.closed) this.thinking.done = true;
    } else if (item.type === "tool_call") this.card(runId, item.index, item.view);
    else if (item.type === "error") this.failure(item.text, null);
    else if (item.type === "request") this.request(runId, item.request, item.answer, false, this.wholeRequest(item.seq, item.truncated));
  }

  /** Apply one record and what it changed in its run's turn (docs/websocket.md). */
  apply(rec, changes) {
    for (const change of changes || []) this.change(rec, change);
    if ((rec.truncated || []).some((t) => t.field === "/payload")) this.later(rec);
    else this.record(rec);
    this.schedule(); // what changed is drawn, and the view follows it, once per frame
  }

  /** A record the server sent without its payload (over the WebSocket bound: `truncated` is
   * `/payload`): a placeholder keeps its place while its whole payload is fetched (the record's
   * `…/events/{seq}/value?field=/payload`), then it is drawn there. A request's card has no
   * button until then. (Not if the page shows another chat meanwhile.) */
  later(rec) {
    const held = h("p", { class: "notice record-loading", text: rec.type === "request"
      ? "The agent asks something: loading it…" : "Loading a long record…" });
    this.container.append(held);
    const url = `/api/chats/${encodeURIComponent(this.chatId)}/events/${rec.seq}/value?field=${encodeURIComponent("/payload")}`;
    const show = (payload) => {
      if (!held.isConnected) return;
      const keep = this.container;
      const box = h("div");
      // Drawn in the placeholder's place: what came after it stays as it is (its live
      // thinking is not folded by the card, review 49), and the card is not "at the end"
      const late = held.nextElementSibling !== null;
      this.container = box; // what the record adds goes in the placeholder's place
      this.placingLate = late;
      try {
        this.record({ ...rec, payload, truncated: undefined });
      } finally {
        this.container = keep;
        this.placingLate = false;
      }
      held.replaceWith(...box.childNodes);
      const card = rec.type === "request" && this.requests.get(payload?.request_id);
      const a = document.activeElement;
      if (card && card.dataset.state === "pending" && (!a || a === document.body)) focusRequest(card);
      this.schedule();
    };
    api.wholeValue(url).then((text) => show(JSON.parse(text)), (err) => {
      if (!held.isConnected) return;
      const again = h("button", { type: "button", class: "show-all", text: "Try again" });
      replace(held, h("span", { text: `Could not load a record of this run (${err.message}). ` }), again);
      again.addEventListener("click", () => {
        held.remove();
        this.later(rec); // (at the end: where the person is)
      });
    });
  }

  /** Draw one record (its changes applied): a run's status, a notice, a request. */
  record(rec) {
    const type = rec.type;
    if (type === "run") this.runRecord(rec);
    else if (type === "connection" || type === "retry") {
      this.foldThinking();
      this.notice(type === "retry" ? "The agent is retrying a request…" : `Agent connection: ${rec.subtype || ""}`);
    } else if (type === "request") {
      if (rec.subtype === "answered") this.answered(rec.payload);
      else this.request(rec.run_id, rec.payload, null, true, this.wholeRequest(rec.seq, rec.truncated));
    } else if (type === "worker" && rec.subtype === "lost") {
      this.notice(`Worker lost: ${rec.payload?.message || "the worker running this chat stopped answering"}`, "worker-lost");
    } else if (type === "context" && rec.subtype === "reset") {
      this.notice(`Context reset: ${rec.payload?.message || "this turn starts without the earlier turns"}`, "context-reset");
    }
  }

  /** One change (protocol/changes.py): the page applies it, it never folds events itself. */
  change(rec, c) {
    const runId = rec.run_id;
    switch (c.kind) {
      case "text_appended": {
        const entry = this.text(runId, "text", c.segment, "", false);
        const at = entry.text.length;
        entry.text += c.text;
        this.schedule(entry);
        if (c.bytes) this.cutPiece(entry, c.seq, c.bytes, at, c.text.length);
        break;
      }
      case "segment_replaced": {
        const entry = this.text(runId, "text", c.segment, c.text, true);
        this.dropCuts(entry); // its pieces are gone, their notes with them
        if (c.bytes) this.cutText(entry, c.seq, c.bytes);
        break;
      }
      case "segment_closed": {
        const entry = this.texts.get(`${runId}:text:${c.segment}`);
        if (entry) this.render(entry);
        break;
      }
      case "thinking_appended": {
        const at = this.think(runId, c.block, c.text);
        if (c.bytes) this.cutPiece(this.thinking, c.seq, c.bytes, at, c.text.length);
        break;
      }
      case "thinking_closed":
        if (this.thinking) this.thinking.done = true;
        break;
      case "tool_call_opened":
      case "tool_call_changed":
        this.card(runId, c.index, c.view);
        break;
      case "error_reported":
        this.failure(c.message, null);
        break;
      default:
        break; // turn_info, usage_reported, result_received: the run record shows them
    }
  }

  // ---- records -------------------------------------------------------------------------

  runRecord(rec) {
    const run = rec.payload?.run || {};
    const seen = this.runSeq.get(run.id) ?? -1;
    if (seen > rec.seq) { // (its payload came late, later): the run's later status stays
      if ((rec.subtype || run.status) === "queued") this.container.append(this.promptOf(run));
      return;
    }
    if (run.id && rec.seq) this.runSeq.set(run.id, rec.seq);
    this.runStatus(run, rec.subtype || run.status);
  }

  /** The user's prompt of `run`, as the conversation shows it. */
  promptOf(run) {
    return h("div", { class: "msg user", dataset: { runId: run.id || "" } },
      h("span", { class: "sr-only", text: "You: " }),
      promptBlock(run.prompt || ""));
  }

  runStatus(run, status) {
    // A run's end may be reported twice (its final record, then a record that repeats it):
    // its notice is shown once.
    const ended = run.id && FINAL.has(this.runs.get(run.id)?.status);
    run.status = status;
    this.runs.set(run.id, run);
    this.latestRun = run;
    if (status === "queued") {
      if (!this.earlierPage) this.resultBar.hidden = true; // the previous result is no longer the latest
      this.foldThinking();
      for (const offer of this.container.querySelectorAll(".offer")) offer.remove();
      this.container.append(this.promptOf(run));
    } else if (FINAL.has(status)) {
      this.foldThinking();
      this.finishTexts(run.id);
      if (ended) {
        // already told
      } else if (status === "failed" || status === "interrupted") {
        this.failure(run.error || `the run ${status}`, run.error_type);
      } else if (status === "cancelled") {
        this.notice("Stopped: the run was cancelled.", "cancelled");
      }
      if (!this.earlierPage) this.showResult(run);
    }
    if (!this.loading) this.onRunChange(run);
  }

  /** The text entry `kind` `index` of a run (created at the end of the stream if new); a
   * whole `text` (done) is rendered at once. */
  text(runId, kind, index, text, done) {
    const key = `${runId}:${kind}:${index}`;
    let entry = this.texts.get(key);
    const isNew = !entry;
    if (isNew) {
      this.foldThinking();
      // Text streaming in is not announced piece by piece (aria-live off, as live thinking);
      // once complete it is swapped for one node with the whole text (settle), which the log
      // announces once. (aria-busy did not do it: NVDA ignores what changes while busy and
      // reads nothing when it clears.) A text complete at once is added complete.
      const el = h("div", { class: "msg assistant", "aria-live": done ? null : "off" });
      entry = { el, text: "", runId, streaming: !done };
      this.texts.set(key, entry);
    }
    if (done) {
      entry.text = text;
      this.render(entry);
    }
    if (isNew) this.container.append(entry.el);
    return entry;
  }

  /** The server cut this text: a note whose Show all fetches the whole from record `seq`. */
  cutText(entry, seq, bytes) {
    const url = `/api/chats/${encodeURIComponent(this.chatId)}/events/${seq}/value?field=${encodeURIComponent("/payload/text")}`;
    const cut = { note: null };
    cut.note = cutNote(url, bytes, (text) => {
      if (!entry.cuts?.includes(cut)) return; // (a recap took its place meanwhile)
      this.dropCuts(entry); // the whole text has every piece
      replace(entry.el, wholeText(text));
    });
    this.addCut(entry, cut);
  }

  /** The server cut a piece appended to this text or thinking block (`length` characters at
   * `at`): a note whose Show all puts the whole piece (record `seq`'s text) in its place, and
   * moves the pieces after it by what it added. The notes follow the text, in order. */
  cutPiece(entry, seq, bytes, at, length) {
    const url = `/api/chats/${encodeURIComponent(this.chatId)}/events/${seq}/value?field=${encodeURIComponent("/payload/text")}`;
    const cut = { at, length, note: null };
    cut.note = cutNote(url, bytes, (piece) => {
      if (!entry.cuts?.includes(cut)) return; // (a recap took its place meanwhile)
      entry.cuts = entry.cuts.filter((other) => other !== cut);
      entry.text = entry.text.slice(0, cut.at) + piece + entry.text.slice(cut.at + cut.length);
      for (const other of entry.cuts) if (other.at > cut.at) other.at += piece.length - cut.length;
      if (entry.think) this.showThinking(entry);
      else if (entry.streaming) this.schedule(entry);
      else this.settle(entry); // rendered whole again, in a new node
    });
    this.addCut(entry, cut);
  }

  /** A cut's note, after the text's last note (or the text itself). */
  addCut(entry, cut) {
    entry.cuts ??= [];
    const last = entry.cuts.at(-1);
    (last ? last.note : entry.el).after(cut.note);
    entry.cuts.push(cut);
  }

  /** The text's cut pieces and their notes are gone (a recap replaced it, or it is whole). */
  dropCuts(entry) {
    for (const cut of entry.cuts || []) cut.note.remove();
    entry.cuts = [];
  }

  /** A run ended: its texts still streaming are complete as they are. */
  finishTexts(runId) {
    for (const entry of this.texts.values()) {
      if (entry.runId === runId && entry.streaming) this.render(entry);
    }
  }

  think(runId, block, text) {
    const key = `${runId}:${block}`;
    if (!this.thinking || this.thinking.key !== key) {
      this.foldThinking();
      const body = h("p", { class: "thinking-text" });
      const el = h("div", { class: "thinking thinking-live", "aria-live": "off" },
        h("span", { class: "thinking-label", text: "Thinking…" }), body);
      this.container.append(el);
      this.thinking = { el, body, text: "", done: false, key, think: true };
    }
    const at = this.thinking.text.length;
    this.thinking.text += text;
    this.schedule(); // its text is shown once per frame (not per delta)
    return at;
  }

  /** A thinking block's text changed other than at its end (a cut piece shown whole). */
  showThinking(t) {
    if (t === this.thinking) {
      t.shown = -1;
      this.schedule();
    } else {
      t.body.textContent = t.text; // folded
    }
  }

  /** Thinking is no longer the latest thing: fold it into a closed <details>, which the log
   * does not read out (live thinking was not read either). */
  foldThinking() {
    const t = this.thinking;
    if (!t || this.placingLate) return; // (a record drawn late, above it: later)
    this.thinking = null;
    t.body = h("p", { class: "thinking-text", text: t.text });
    const folded = h("details", { class: "thinking thinking-folded", "aria-live": "off" },
      h("summary", { text: "Thought" }), t.body);
    t.el.replaceWith(folded);
    t.el = folded; // (a cut piece shown whole later goes in its body)
  }

  /** Tool call `index` of a run, drawn from the server's card fields (`view`). */
  card(runId, index, view) {
    if (!view) return;
    const key = `${runId}:${index}`;
    let entry = this.cards.get(key);
    if (!entry) {
      this.foldThinking();
      entry = { el: createCard(), view: null, runId, index };
      entry.el.dataset.callId = view.call_id;
      this.cards.set(key, entry);
      this.container.append(entry.el);
    }
    const over = entry.view && (entry.view.status || "running") !== "running"; // said already
    entry.view = view;
    if (!over && !this.loading) {
      const line = cardLine(view, this.workspace);
      if (line) this.ended.push(line);
    }
    if (view.status === "rejected" && runId) {
      if (!this.rejected.has(runId)) this.rejected.set(runId, new Set());
      this.rejected.get(runId).add(view.kind);
    }
    this.draw(entry);
  }

  /** Show the card's view, in place; then, once the call has ended, for each field the
   * server cut, "Show all" (which fetches it whole). A field loaded whole takes the place of its
   * beginning in the card's own block (its line count then the whole's, its Copy the whole's);
   * a list card's whole list, which the card does not show as text, comes under it. Those notes
   * and what was loaded are kept (entry.notes, entry.whole) across updates of the card. A
   * shell's `output` is its stdout and stderr again (the card shows those): not offered twice. */
  draw(entry) {
    const more = [];
    let view = entry.view;
    if (view.cut?.length && view.status !== "running") {
      entry.notes ??= new Map();
      entry.whole ??= new Map();
      const base = `/api/runs/${encodeURIComponent(entry.runId)}/tool-calls/${entry.index}/output`;
      const list = LIST_NAMES[view.kind];
      const shellShows = view.kind === "shell" && (view.stdout != null || Boolean(view.stderr));
      for (const field of view.cut) {
        if (entry.whole.has(field) || (field === "output" && shellShows)) continue;
        const what = (field === "output" && list) || FIELD_NAMES[field] || field;
        if (!entry.notes.has(field)) {
          entry.notes.set(field, [cutNote(`${base}?field=${encodeURIComponent(field)}`, null, (text) => {
            if (!shownInPlace(entry.view, field)) {
              entry.notes.set(field, [h("p", { class: "card-note", text: `The whole ${what}:` }), wholeText(text, what)]);
              this.draw(entry);
              return;
            }
            entry.notes.delete(field);
            entry.whole.set(field, text);
            const folded = [...entry.el.querySelectorAll("details.card-output")].filter((d) => d.querySelector("pre[data-cut-lines]"));
            this.draw(entry);
            for (const d of folded) if (!d.querySelector("pre[data-cut-lines]")) d.open = true; // shown as asked
          }, what)]);
        }
        more.push(entry.notes.get(field));
      }
      if (entry.whole.size) {
        const loaded = [...entry.whole.keys()];
        view = { ...view, ...Object.fromEntries(entry.whole), cut: view.cut.filter((f) => !entry.whole.has(f)), loaded };
      }
    }
    drawCard(entry.el, view, this.workspace, more);
  }

  /** Where the whole request of record `seq` is, when the server cut it (`truncated`). */
  wholeRequest(seq, truncated) {
    const cuts = (truncated || []).filter((t) => String(t.field).startsWith("/payload/"));
    if (!cuts.length || !seq) return null;
    const url = `/api/chats/${encodeURIComponent(this.chatId)}/events/${seq}/value?field=${encodeURIComponent("/payload")}`;
    return { url, bytes: cuts.reduce((n, t) => n + (Number(t.bytes) || 0), 0) };
  }

  /** A request of an ACP run (a permission, a question, a plan) as a card with its buttons;
   * `answer` (if any) shows its decision instead. `live`: it just arrived (announce it).
   * `whole`: where its whole payload is, when the server cut it (wholeRequest). */
  request(runId, request, answer, live, whole = null) {
    if (!request || !request.request_id || this.requests.has(request.request_id)) return;
    this.foldThinking();
    const card = createRequestCard(request, (body) => this.onAnswer(runId, request.request_id, body), whole);
    card.dataset.runId = runId || "";
    this.requests.set(request.request_id, card);
    this.container.append(card);
    answer ??= this.early.get(request.request_id);
    if (answer) showAnswer(card, answer);
    else if (live) {
      // Never move the focus onto a button that answers: a person typing in the prompt box,
      // or about to press Stop, would press it with their next Space or Enter. The card is
      // announced; it takes the focus itself (no button) only when the focus is nowhere.
      const where = this.placingLate ? "in its place in the conversation, above the end"
        : "at the end of the conversation";
      announce(`${card.getAttribute("aria-label") || "The agent asks you something"}. Its card is ${where}.`);
      const a = document.activeElement;
      if (!a || a === document.body) focusRequest(card);
    }
  }

  /** An `answered` record: its card shows the decision. */
  answered(answer) {
    const card = answer && this.requests.get(answer.request_id);
    if (card) showAnswer(card, answer);
    else if (answer?.request_id) this.early.set(answer.request_id, answer); // its request is loading
  }

  /** The kinds of run `runId`'s rejected tool calls (not allowed in this chat); empty if none. */
  rejectedKinds(runId) {
    return this.rejected.get(runId) || new Set();
  }

  /** Show an offer (an element) at the end of the stream; the next prompt removes it. */
  addOffer(el) {
    el.classList.add("offer");
    this.container.append(el);
    this.schedule();
  }

  failure(message, errorType) {
    this.foldThinking();
    // the page's remedy in place of the library's (an error the agent reported has no type:
    // the library's remedy at its end says which)
    const plain = REMEDIES[errorType] || !errorType ? withoutLibraryRemedy(String(message), errorType) : null;
    if (plain) message = plain.text;
    const remedy = remedyFor(errorType || plain?.type, message);
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

  render(entry, done = true) {
    this.dirty.delete(entry);
    if (done && entry.streaming) return this.settle(entry);
    // A streaming text whose last block takes long to render again (an answer that is one long
    // list: every frame rendered it whole, 230 ms a frame by 219,000 characters) is rendered
    // again at most once per STREAM_RENDER_SHARE of its own render times: the reader keeps the
    // rest of the page's time. The text complete is rendered whole (settle), as it arrived.
    const start = performance.now();
    if (!done && start < (entry.notBefore ?? 0)) return this.schedule(entry);
    // Only the blocks that may have changed are rendered again (a long answer streaming in).
    entry.markdown ??= new GrowingMarkdown(entry.el);
    entry.markdown.show(entry.text, addCodeCopyButtons);
    const took = performance.now() - start;
    entry.notBefore = took > STREAM_RENDER_FREE_MS ? start + took * STREAM_RENDER_SHARE : 0;
  }

  /** A streamed text is complete: one node with its whole text takes the place of the one it
   * streamed into, so the log announces it once, whole. The focus, if on one of its copy
   * buttons, goes to the same button of the new node. */
  settle(entry) {
    entry.streaming = false;
    const old = entry.el;
    const el = h("div", { class: "msg assistant" });
    entry.markdown = new GrowingMarkdown(el);
    entry.markdown.show(entry.text, addCodeCopyButtons);
    const focused = [...old.querySelectorAll("button")].indexOf(document.activeElement);
    old.replaceWith(el);
    entry.el = el;
    if (focused >= 0) el.querySelectorAll("button")[focused]?.focus();
  }

  /** Once per frame: render the streaming texts that changed (`entry`, if any, is one), show
   * the live thinking's text, and scroll to the end if the reader was there. */
  schedule(entry) {
    if (entry) this.dirty.add(entry);
    if (this.frame) return;
    const flush = () => {
      this.frame = 0;
      this.sayEnded();
      for (const entry of [...this.dirty]) this.render(entry, false); // (one not due waits again)
      const t = this.thinking;
      if (t && t.shown !== t.text.length) {
        t.body.textContent = t.text;
        t.shown = t.text.length;
      }
      if (this.stick) this.scrollToEnd();
    };
    this.frame = document.hidden ? setTimeout(flush, 50) : requestAnimationFrame(flush);
  }

  /** Say, in one line, the calls that ended since the last frame: each ("Shell ls: done"),
   * or for a burst (a reconnect catching up) how many. */
  sayEnded() {
    const lines = this.ended;
    if (!lines.length) return;
    this.ended = [];
    if (lines.length <= 3) return announce(lines.join(". "));
    const done = lines.filter((line) => line.endsWith(": done")).length;
    const other = lines.length - done;
    announce(`${lines.length} tool calls ended: ${done} done${other ? `, ${other} did not (failed, rejected or stopped)` : ""}.`);
  }

  nearBottom() {
    const el = this.container;
    return el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  }

  scrollToEnd() {
    this.container.scrollTop = this.container.scrollHeight;
    this.autoTop = this.container.scrollTop;  // clamped to the end: where the page put it
    this.stick = true;
  }
}
