// The prompts the page could not send, kept for their chats (docs/web.md, "Prompt"): a prompt
// of a chat the page left while it waited, one whose request failed while the page was
// elsewhere, what was typed in a chat's box and not sent when the page left that chat. Each goes back into its own chat's box
// as that chat opens. Those of a chat deleted since are "orphans": they go into the box of the
// chat open then. While the page is signed out (its session ended), they cross its going (the
// reload after signing in, the sign-in link opened in the tab) in the tab's sessionStorage,
// read back and removed by the next load. Data only: app.js puts them in the box and says so.

const STORAGE_KEY = "cursor-agent-api:kept-prompts";
const SIGNED_OUT_KEY = "cursor-agent-api:signed-out"; // (localStorage: every tab of this server's page)
const SIGNED_OUT_CHANNEL = "cursor-agent-api:signed-out"; // (BroadcastChannel: the same tabs)

// Sign out told to this server's other tabs. BroadcastChannel is the platform's tool for it
// (a message to every other page of this origin, with no storage involved: it works where the
// browser refuses localStorage, in some private modes or under a policy); localStorage's storage
// event is the fallback for a browser without it, and its marker is what a page restored from
// the back-forward cache compares (no message reaches a page while it is cached). A Sign out is
// a mark of its own: heard by both ways, it is handled once.
let channel = null;
try {
  channel = new BroadcastChannel(SIGNED_OUT_CHANNEL);
} catch {
  // (no BroadcastChannel: localStorage alone)
}

/** The last Sign out's mark in localStorage (null: none, or storage refused). */
function lastSignOutMark() {
  try {
    return localStorage.getItem(SIGNED_OUT_KEY);
  } catch {
    return null;
  }
}

const heardMarks = new Set([lastSignOutMark()]); // (one before this page loaded is not news)

/** Sign out pressed in this page: every other tab of this server's page in the browser hears
 * it (`whenSignedOutElsewhere`), and drops what it keeps too. Both ways are this origin's (host
 * and port) only: another server's tabs do not hear it. */
export function tellSignedOut() {
  const mark = `${Date.now()} ${Math.random()}`; // (a new value: heard)
  heardMarks.add(mark);
  try {
    channel?.postMessage(mark);
  } catch {
    // (the channel closed: localStorage still tells them)
  }
  try {
    localStorage.setItem(SIGNED_OUT_KEY, mark);
  } catch {
    // (storage refused: the channel told them; without either, the other tabs hear of the
    // ended session at their next request, and keep their prompts)
  }
}

/** `handler()` runs when Sign out is pressed in another tab of this server's page (tellSignedOut),
 * once per Sign out, and when this page comes back from the back-forward cache after one (the
 * `pageshow` event, `persisted`: the mark in localStorage is not the one it last heard). */
export function whenSignedOutElsewhere(handler) {
  const hear = (mark) => {
    if (typeof mark !== "string" || !mark || heardMarks.has(mark)) return;
    heardMarks.add(mark);
    handler();
  };
  channel?.addEventListener("message", (ev) => hear(ev.data));
  window.addEventListener("storage", (ev) => {
    if (ev.key === SIGNED_OUT_KEY) hear(ev.newValue);
  });
  window.addEventListener("pageshow", (ev) => {
    if (ev.persisted) hear(lastSignOutMark());
  });
}

/** Two prompts as one text, `before` first, a blank line between (either may be missing; the
 * same text twice is kept once). */
export function joinPrompts(before, after) {
  if (!before) return after ?? "";
  return after && after !== before ? `${before}\n\n${after}` : before;
}

export class KeptPrompts {
  constructor() {
    this.byChat = new Map(); // chat id -> {title, prompt}
    this.orphans = null; // {titles, prompt}: kept for chats deleted since, for the next chat to open
    this.closed = false; // after Sign out: nothing is kept any more in this page
  }

  /** The prompt kept for chat `id` (undefined: none). */
  get(id) {
    return this.byChat.get(id)?.prompt;
  }

  /** What is kept for `chat` ({id, title}) is now `prompt` (nothing, once closed). */
  set(chat, prompt) {
    if (!this.closed) this.byChat.set(chat.id, { title: chat.title || "", prompt });
  }

  /** The prompt kept for chat `id`, no longer kept (undefined: none). */
  take(id) {
    const kept = this.byChat.get(id);
    this.byChat.delete(id);
    return kept?.prompt;
  }

  /** The chats something is kept for, as [{id, title}], in the order they were kept. */
  chats() {
    return [...this.byChat].map(([id, kept]) => ({ id, title: kept.title }));
  }

  /** Whether something is kept for chat `id`. */
  has(id) {
    return this.byChat.has(id);
  }

  /** The ids of the chats something is kept for that `chats` (the list) does not hold; the
   * titles of those it holds are brought up to date, for the alerts. */
  unlisted(chats) {
    const listed = new Map(chats.map((c) => [c.id, c]));
    const missing = [];
    for (const [id, kept] of this.byChat) {
      const chat = listed.get(id);
      if (chat) kept.title = chat.title || "";
      else missing.push(id);
    }
    return missing;
  }

  /** Chat `id` is gone: what was kept for it joins the orphans. False if nothing was. */
  orphan(id) {
    const kept = this.byChat.get(id);
    if (!kept) return false;
    this.byChat.delete(id);
    const orphans = this.orphans ?? { titles: [], prompt: "" };
    orphans.titles.push(kept.title);
    orphans.prompt = joinPrompts(orphans.prompt, kept.prompt);
    this.orphans = orphans;
    return true;
  }

  /** The orphans, {titles, prompt}, no longer kept (null: none). */
  takeOrphans() {
    const orphans = this.orphans;
    this.orphans = null;
    return orphans;
  }

  /** Sign out: forget everything kept, and keep nothing from now on in this page (a prompt
   * still on its way when it was pressed included): nothing is left for whoever signs in next. */
  close() {
    this.byChat.clear();
    this.orphans = null;
    this.closed = true;
    try {
      sessionStorage.removeItem(STORAGE_KEY); // (none in a page that has loaded: unstash emptied it)
    } catch {
      // (storage refused: nothing was stashed)
    }
  }

  /** Signed in again (in another tab) after Sign out: prompts are kept again from now on. */
  reopen() {
    this.closed = false;
  }

  /** As a page whose session ended (not by Sign out) goes (the reload after signing in with the
   * form, the sign-in link opened in this tab): everything kept (what was typed in the chat open
   * when the session ended included) into the tab's sessionStorage, which the next load of this
   * server's page in the tab reads back and empties at once (unstash).
   * sessionStorage is this tab's and this origin's (host and port) only, and goes with the tab.
   * Storage refused (disabled, full): they are lost with the reload, as before they were kept. */
  stash() {
    if (this.closed || (!this.byChat.size && !this.orphans)) return;
    try {
      sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ drafts: [...this.byChat], orphans: this.orphans }));
    } catch {
      // (nothing else to do: the reload loses them)
    }
  }

  /** What stash kept across the reload, back in memory and out of the tab's storage (anything
   * malformed is passed over: the page loads all the same). */
  unstash() {
    let kept;
    try {
      const stored = sessionStorage.getItem(STORAGE_KEY);
      sessionStorage.removeItem(STORAGE_KEY);
      kept = JSON.parse(stored ?? "null");
    } catch {
      return; // (storage refused, or not this page's JSON: nothing to restore)
    }
    const text = (v) => typeof v === "string" && v !== "";
    for (const entry of Array.isArray(kept?.drafts) ? kept.drafts : []) {
      const [id, draft] = Array.isArray(entry) ? entry : [];
      if (text(id) && text(draft?.prompt)) this.set({ id, title: text(draft.title) ? draft.title : "" }, draft.prompt);
    }
    const orphans = kept?.orphans;
    if (text(orphans?.prompt) && Array.isArray(orphans.titles)) {
      this.orphans = { titles: orphans.titles.map((t) => (text(t) ? t : "")), prompt: orphans.prompt };
    }
  }
}
