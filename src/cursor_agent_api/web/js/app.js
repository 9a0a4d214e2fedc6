// The page: chats list, new-chat form, one open chat with its live stream,
// the prompt box, Stop. Routes are hashes: "#/new", "#/chat/<id>", "" (welcome).

import { api, ApiError, SessionEnded, sessionAgain, signedOutHere, signOuts, whenSessionEnds } from "./api.js";
import { h, replace, announce, formatAgo, showControls } from "./dom.js";
import { KeptPrompts, joinPrompts, tellSignedOut, whenSignedOutElsewhere } from "./kept.js";
import { ChatStream } from "./stream.js";
import { Timeline, setLibraryRemedies } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const LIST_REFRESH_MS = 10_000;
const ACTIVE_LIST_REFRESH_MS = 2_000; // while a chat in the list is queued or running
const ACTIVE = new Set(["queued", "running"]);
const SIGNED_OUT = "You were signed out: sign in again."; // the session ended (not by Sign out)
const SIGNED_OUT_HERE = "You signed out."; // by this page's Sign out
const TURNS_PAGE = 30; // a chat opens with its newest runs; "Show earlier turns" loads more
const LIST_PAGE = 200; // chats fetched a page at a time; "More chats" shows the next page
const CONFIG_RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000]; // the settings at load, tried again
const OPTION_BOXES = { trust: "copt-trust", force: "copt-force", approve_mcps: "copt-mcps", stream_partial_output: "copt-partial" };

const state = {
  config: null,
  chats: [],
  chat: null, // the open chat
  stream: null,
  timeline: null,
  connLost: false, // the open chat's stream lost its connection (said), and is not back yet
  sending: null, // the prompt on its way: {chatId, prompt, taken (out of the box, its request made), signOuts (api.js's count then), done, edited (keepTyped)}
  waiting: null, // the prompt sent while another was on its way: it goes once that one is done
  alerts: 0, // alerts shown so far: a prompt's answer clears only an alert older than its request
  alertAbout: { chats: [], named: [], untilChat: false }, // the kept prompts the alert shown speaks of (showAlert)
  pinned: [], // alerts on kept prompts replaced while still true, as notes: {li, p, chats, named, untilChat, say} (pinAlert)
  heard: null, // a note said as it came, for the chat the page opens next to say again ({text, moves}: afterHeard)
  notes: 0, // notes made so far: each note's text has an id of its own (its Close button's description)
  creating: new Set(), // New chat's forms on their way (formValues): the same form again makes nothing
  moves: 0, // the page's moves (route): a slow New chat opens its chat only if the user has not moved since
  opening: null, // the latest opening of a chat (its own object: a later open wins, even of the same chat)
  stops: 0, // Stop/Esc presses: a prompt waiting for a run to end is dropped by one
  kept: new KeptPrompts(), // prompts not sent, kept for their chats (kept.js): back in their box
  signedOut: false, // the session ended (the sign-in form shown); false again once signed in again (signedInAgain)
  listTimer: 0,
  storeDegraded: false, // the server cannot write its database (GET /api/health)
  listLimit: LIST_PAGE, // how many chats the list shows (more after "More chats")
  moreChats: false, // the server may have older chats than those listed
};

// ---- start -------------------------------------------------------------------------------

async function boot() {
  // A link's ?code= or ?token= never reaches the page: the server swaps a valid one for the
  // session cookie, and redirects a refused one here with ?signin=refused.
  const linkRefused = dropSignInFromAddress();
  bindStaticHandlers();
  whenSessionEnds(sessionEnded);
  whenSignedOutElsewhere(signedOutElsewhere);
  state.kept.unstash();
  state.config = await loadConfig(linkRefused);
  if (!state.config) return;
  setLibraryRemedies(state.config.library_remedies); // the page says its own remedies
  // A Sign out heard as the settings loaded (in another tab: signedOutElsewhere) stands: the
  // sign-in form stays, and the page goes on as any signed-out page does (a chat asked for).
  if (!state.signedOut) document.body.classList.remove("signed-out");
  $("sim-badge").hidden = !state.config.simulate;
  document.body.classList.toggle("simulated", Boolean(state.config.simulate));
  fillRoots();
  await refreshChats(); // (a kept prompt's chat deleted meanwhile: its prompt is orphaned)
  window.addEventListener("hashchange", route);
  if (state.signedOut) return; // (the session ended as the page loaded: the sign-in form shows)
  const kept = state.kept.chats();
  if (kept.length) {
    // Every chat with a prompt kept is named: in the alert, or, if the alert already says
    // something (a kept prompt's chat deleted meanwhile, say), in a note under it. The chat the
    // page reopens, if one of them, is said apart (its text goes back in its box as it opens):
    // the alert is about the others, and stays as it opens (route clears an alert about it);
    // it still names that chat (`named`) while its text is kept (its open failed, say).
    const back = kept.find((c) => c.id === chatInAddress());
    const others = back && kept.length > 1 ? kept.filter((c) => c !== back) : kept;
    const named = others === kept ? [] : [back.id];
    const text = sayKeptWhileSignedOut(others.map((c) => c.id), named);
    const about = { chats: others.map((c) => c.id), named, untilChat: false, say: sayKeptWhileSignedOut };
    if ($("alert").hidden) showAlert(text, { chat: others[0].id, ...about });
    else addNote(text, about, { announced: true });
  } else if ($("alert").hidden) {
    sayOrphansKept(); // (prompts of chats deleted meanwhile: for the next chat to open)
  }
  route();
}

/** keptWhileSignedOut for the chats of `ids` still kept (a note's text, as some of them open),
 * the chat of `named`, the one the page reopens, said apart (backAsItOpens) if others are too. */
function sayKeptWhileSignedOut(ids, named = []) {
  const kept = state.kept.chats();
  const others = kept.filter((c) => ids.includes(c.id));
  const back = kept.filter((c) => named.includes(c.id));
  if (!others.length) return keptWhileSignedOut(back);
  return (back.length ? `${backAsItOpens(back[0])} ` : "") + keptWhileSignedOut(others);
}

/** What the first alert after signing in again says of the prompt kept for `chat` ({id,
 * title}), the chat the page reopens, when prompts are kept for other chats too. */
function backAsItOpens(chat) {
  return `Your prompt for “${showControls(chat.title || "Untitled chat")}”, kept while you were signed out, `
    + "goes back into its prompt box as it opens, not sent.";
}

/** What the first alert after signing in again says of the prompts kept for `chats` ({id,
 * title}, one at least): every chat named (titles are data: text only, as all alerts are). */
function keptWhileSignedOut(chats) {
  const names = chats.map((c) => `“${showControls(c.title || "Untitled chat")}”`);
  if (names.length === 1) {
    return `Your prompt for ${names[0]} was kept while you were signed out, `
      + "not sent: it is back in that chat's prompt box when you open it.";
  }
  const listed = `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  return `Your prompts for ${names.length} chats, ${listed}, were kept while you were signed out, `
    + "not sent: each is back in its chat's prompt box when you open that chat.";
}

/** GET /api/config, tried again (after 1, 2, 5, 10, then every 30 s) while the server cannot be
 * reached or fails (restarting as the page loads, say), the page saying so; null when signed
 * out (the sign-in form shows). */
async function loadConfig(linkRefused) {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await api.config();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        // (a printed link works once: opening it again is refused again, so the way to a new
        // one is said, as serve says it under a link printed to a file: docs/server.md)
        showLogin(linkRefused
          ? "The link was refused: its login code works once and was already used or has expired, or it is not this server's (a restarted server prints a new link). "
            + "Paste the server's token here (the `Token:` line serve printed, or the one given with --token), "
            + `or ask for a new link with it: POST /api/auth/codes (curl -X POST -H "Authorization: token …" ${location.origin}/api/auth/codes gives its url).`
          : "");
        return null;
      }
      const wait = CONFIG_RETRY_MS[Math.min(attempt, CONFIG_RETRY_MS.length - 1)];
      showAlert(`Cannot load the server's settings: ${err.message}. Trying again in ${wait / 1000} s (or reload the page).`,
        { unreachable: true });
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** The server swaps a link's secret for the cookie and strips it; a refused one comes back as
 * ?signin=refused (or, from an older server, the ?token= itself). Take both out of the address.
 * Returns true if the link was refused. */
function dropSignInFromAddress() {
  const url = new URL(location.href);
  const refused = url.searchParams.get("signin") === "refused" || url.searchParams.has("token");
  if (!refused && !url.searchParams.has("signin")) return false;
  for (const name of ["signin", "token", "code"]) url.searchParams.delete(name);
  history.replaceState(null, "", url.pathname + url.search + url.hash);
  return refused;
}

function bindStaticHandlers() {
  // Signed out (the session ended, not by Sign out): the prompts kept for chats cross the page's
  // going (the reload after signing in, the sign-in link opened in this tab) in the tab's storage.
  window.addEventListener("pagehide", () => {
    if (state.signedOut) state.kept.stash();
  });
  window.addEventListener("pageshow", (ev) => { if (ev.persisted) state.kept.unstash(); }); // (back from the cache: out of storage)
  $("menu-toggle").addEventListener("click", () => toggleMenu());
  $("new-chat-button").addEventListener("click", () => { location.hash = "#/new"; toggleMenu(false); });
  $("login-form").addEventListener("submit", onLogin);
  $("new-form").addEventListener("submit", onCreateChat);
  $("prompt-form").addEventListener("submit", (ev) => { ev.preventDefault(); sendPrompt(); });
  $("prompt").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      sendPrompt();
    }
  });
  $("stop-button").addEventListener("click", stopRun);
  $("sign-out-button").addEventListener("click", signOut);
  $("more-chats-button").addEventListener("click", async () => {
    const button = $("more-chats-button");
    const before = $("chat-list").children.length;
    state.listLimit += LIST_PAGE;
    await refreshChats({ all: true });
    // the focus was on the button (a keyboard user): it goes to the first chat loaded, not to
    // the page's <body> as the button hides with the last page
    if (document.activeElement !== button && document.activeElement !== document.body) return;
    const first = $("chat-list").children[before]?.querySelector("a");
    if (first) first.focus();
    else if (button.hidden) $("chat-list").lastElementChild?.querySelector("a")?.focus();
  });
  $("options-button").addEventListener("click", () => toggleOptions());
  $("chat-options").addEventListener("submit", saveOptions);
  $("chat-options-cancel").addEventListener("click", () => toggleOptions(false));
  $("delete-chat-button").addEventListener("click", deleteChat);
  // a session mode is ACP's: the mode choice follows the transport choice
  for (const [transport, mode] of [["opt-transport", "opt-mode"], ["copt-transport", "copt-mode"]]) {
    $(transport).addEventListener("change", () => syncMode(transport, mode));
  }
  document.addEventListener("keydown", onEscape);
  $("skip-link").addEventListener("click", skipToPrompt);
}

/** Esc closes what is open (the Chats menu, the options form) before it stops the run; an Esc
 * that ends an input method's composition (Japanese, say) is the input method's. */
function onEscape(ev) {
  if (ev.key !== "Escape" || ev.isComposing) return;
  if (document.body.classList.contains("menu-open") && getComputedStyle($("menu-toggle")).display !== "none") {
    toggleMenu(false);
    $("menu-toggle").focus();
  } else if (!$("chat-options").hidden) {
    toggleOptions(false);
    $("options-button").focus();
  } else if (state.timeline?.activeRun && !$("chat-view").hidden) {
    ev.preventDefault();
    stopRun();
  }
}

/** The skip link moves the focus; its "#prompt" must not become the address (no route: the
 * open chat stays open). Without a chat open, to the first field of the view shown. */
function skipToPrompt(ev) {
  ev.preventDefault();
  focusView();
}

/** The focus to the prompt box, or without a chat open to the first field of the view shown. */
function focusView() {
  const view = ["chat-view", "new-view", "login-view", "welcome-view"].map($).find((el) => !el.hidden);
  const target = view?.id === "chat-view" ? $("prompt") : view?.querySelector("input, select, textarea, button, a[href]");
  target?.focus();
}

function toggleMenu(open) {
  const was = document.body.classList.contains("menu-open");
  const next = open ?? !was;
  document.body.classList.toggle("menu-open", next);
  $("menu-toggle").setAttribute("aria-expanded", String(next));
  // At phone width the list is a menu: move the focus into it, and back when it closes.
  if (next && !was && getComputedStyle($("menu-toggle")).display !== "none") $("new-chat-button").focus();
  if (!next && was && document.activeElement?.closest("#sidebar")) $("menu-toggle").focus();
}

// ---- views -------------------------------------------------------------------------------

function show(viewId) {
  for (const id of ["login-view", "welcome-view", "new-view", "chat-view"]) $(id).hidden = id !== viewId;
}

/** The page's alert (its role, alert, has it announced); `unreachable`: it says the server
 * could not be reached, and goes by itself once the chats list is fetched again ("list": the
 * list itself could not be fetched, which stays true whatever view is shown); `chat`: the id of
 * the chat it is about (a prompt of that chat not sent), so that what happens in another chat
 * does not clear it (`chats`: all the chats it is about, if several); `untilChat`: it stays
 * until a chat opens (prompts of a deleted chat wait for one); `say`: what it says of the
 * chats of the ids given, for when only some of its `chats` are still kept (a note's text is
 * brought down to those: see prunePinned); `named`: chats it names too but is not about as
 * they open (route leaves it: the chat the page reopens after signing in), still kept or not.
 *
 * An alert that says where a kept prompt is (`chat`, `untilChat`) is the only place that tells
 * the user where their text went: replaced or cleared while that is still true, it stays, as a
 * note under the alert with its own Close button (pinAlert), until closed or no longer true. */
function showAlert(message, { unreachable = false, chat = "", chats = null, named = [], untilChat = false, say = null } = {}) {
  const el = $("alert");
  const about = chats ?? (chat ? [chat] : []);
  state.alerts += 1;
  if (!el.hidden && el.textContent !== message) pinAlert(el.textContent, state.alertAbout, { chats: about, untilChat });
  // (a note the new alert says again, about the same chats or the same orphans, goes)
  for (const note of state.pinned.filter((p) => supersedes({ chats: about, untilChat }, p))) dropNote(note);
  el.textContent = message;
  el.hidden = !message;
  el.dataset.unreachable = unreachable === "list" ? "list" : unreachable ? "yes" : "";
  el.dataset.chat = chat;
  el.dataset.untilChat = untilChat ? "yes" : "";
  state.alertAbout = message ? { chats: about, named, untilChat, say } : { chats: [], named: [], untilChat: false, say: null };
  prunePinned();
}

/** Whether what an alert is about (`by`: {chats, untilChat}) says again what note `p` says. */
function supersedes(by, p) {
  return (by.untilChat && p.untilChat) || (p.chats.length > 0 && p.chats.every((id) => by.chats.includes(id)));
}

/** Whether what an alert says of kept prompts (`about`: {chats, named, untilChat}) is still
 * true: something is kept for one of its chats (or those it names), or prompts of deleted chats
 * wait for a box. */
function stillKept(about) {
  return [...about.chats, ...(about.named ?? [])].some((id) => state.kept.has(id))
    || (about.untilChat && Boolean(state.kept.orphans));
}

/** The alert `text`, about `about`, replaced by one about `next`: if it said where a kept prompt
 * is, and that is still true, it stays as a note (text only), with its own Close button. */
function pinAlert(text, about, next) {
  if (!text || !(about.chats.length || about.untilChat) || !stillKept(about) || supersedes(next, about)) return;
  addNote(text, about);
}

/** A note (text only) under the alert, about `about` ({chats, untilChat, say}), with its own
 * Close button, described by the note's text (several notes: each button says which it closes);
 * `announced`: the note is said as it comes (it is new, not an alert the user heard before). */
function addNote(text, about, { announced = false } = {}) {
  state.notes += 1;
  const id = `kept-note-${state.notes}`;
  const close = h("button", { type: "button", class: "small", text: "Close", "aria-label": "Close this note", "aria-describedby": id });
  const p = h("p", { id, text });
  const li = h("li", { class: "alert kept-note" }, p, close);
  const note = { li, p, chats: about.chats, named: about.named ?? [], untilChat: about.untilChat, say: about.say ?? null };
  close.addEventListener("click", () => {
    const next = li.nextElementSibling ?? li.previousElementSibling;
    dropNote(note);
    const button = next?.querySelector("button"); // (this one is gone: the focus to a useful place)
    if (button) button.focus();
    else focusView();
  });
  state.pinned.push(note);
  $("kept-notes").append(li);
  $("kept-notes").hidden = false;
  if (announced) {
    announce(text);
    state.heard = { text, moves: state.moves + 1 }; // (the page's next move: route, right after boot)
  }
}

/** `line` for the polite region (it replaces what the region said): after the note said as it
 * came (addNote's `announced`) if this is still the move it came before, so that a screen reader
 * that speaks only the region's last words hears both. */
function afterHeard(line) {
  const heard = state.heard;
  state.heard = null;
  return heard && heard.moves === state.moves ? `${heard.text} ${line}` : line;
}

function dropNote(note) {
  state.pinned = state.pinned.filter((p) => p !== note);
  note.li.remove();
  $("kept-notes").hidden = state.pinned.length === 0;
}

/** The notes (pinAlert) no longer true go: their chat opened (its prompt back in its box), was
 * deleted, or Sign out dropped what was kept. A note about several chats, some of them no longer
 * kept, names only those still kept (if it can say so: `say`). */
function prunePinned() {
  for (const note of state.pinned.filter((p) => !stillKept(p))) dropNote(note);
  for (const note of state.pinned) {
    const kept = note.chats.filter((id) => state.kept.has(id));
    const named = note.named.filter((id) => state.kept.has(id));
    if (!note.say || (kept.length === note.chats.length && named.length === note.named.length)) continue;
    note.chats = kept;
    note.named = named;
    note.p.textContent = note.say(kept, named);
  }
}

/** Whether the alert shown is about chats none of which is `chatId` (null: no chat). */
function alertAboutAnotherChat(chatId) {
  const { chats } = state.alertAbout;
  return Boolean($("alert").dataset.chat) && !chats.includes(chatId);
}

/** The server answered again: an alert that it could not be reached is over. */
function clearUnreachable() {
  if ($("alert").dataset.unreachable) showAlert("");
}

/** The page is signed out: its list is no longer refreshed, and what it keeps for chats crosses
 * its next load (pagehide: KeptPrompts.stash). */
function markSignedOut() {
  state.signedOut = true;
  clearTimeout(state.listTimer);
}

/** The server answered one of the page's requests for chat `id` with what only a session gets
 * (the chat, or a 404: every /api path asks for a session first) while the page counted itself
 * signed out: it is signed in (again, in another tab: the cookie
 * is the browser's). It is a signed-in page again: the list shows and is refreshed (and again
 * every 10 s), what is typed and left is kept for its chat (after Sign out too), and the alert
 * that said to sign in goes as route() would clear it. Nothing while signed in. */
function signedInAgain(id) {
  if (!state.signedOut) return;
  state.signedOut = false;
  sessionAgain(); // (a 401 to a request asked before now does not sign it out again)
  state.kept.reopen();
  document.body.classList.remove("signed-out");
  clearAlertFor(id);
  refreshChats();
}

/** The sign-in form; `reason` says why it is shown (empty: simply not signed in yet). */
function showLogin(reason = "") {
  markSignedOut();
  closeChat(); // (what is typed in the open chat's box is kept for it: keepTyped)
  document.body.classList.add("signed-out"); // no chats list, no "New chat"
  toggleMenu(false);
  show("login-view");
  showAlert(reason);
  $("login-token").focus();
}

/** The session the page signed in with has ended (signed out in another tab, expired, the
 * server restarted with a new token): a request answered 401, whichever it was (api.js), or the
 * open chat's stream closed with 4401. The sign-in form says so, once: after Sign out it keeps
 * saying "You signed out." (a view shown since gives way to it again, saying that), and a
 * sign-in form that already says something (the session ended before, a prompt not sent, a
 * wrong token) keeps its words; the page is signed out all the same (a list asked for before
 * and answered after had said otherwise). What the page keeps for chats is kept (showLogin,
 * KeptPrompts.stash). */
function sessionEnded() {
  if ($("login-view").hidden) return showLogin(state.kept.closed ? SIGNED_OUT_HERE : SIGNED_OUT);
  markSignedOut(); // (the form shows: its words stay, if it has some)
  if ($("alert").hidden && !state.kept.closed) showAlert(SIGNED_OUT);
}

/** Sign out: the server deletes the session (its sockets close with 4401); the sign-in form.
 * The prompts kept for chats (and the box's text) go too: not for whoever signs in next here. */
async function signOut() {
  try {
    await api.logout(); // (already signed out: done all the same)
  } catch (err) {
    return showAlert(`Could not sign out: ${err.message}`);
  }
  showLogin(SIGNED_OUT_HERE);
  dropKept();
  tellSignedOut(); // (the other tabs drop theirs too: signedOutElsewhere)
}

/** Sign out pressed in another tab of this page (kept.js: its message, or the mark a tab back
 * from the back-forward cache finds): the session is
 * the browser's, so this page is signed out too, and shows the sign-in form at once, saying so
 * ("You were signed out: sign in again."); what it keeps for chats goes, as with Sign out here
 * (its tab's storage included): a shared computer keeps nothing for whoever signs in next. */
function signedOutElsewhere() {
  const el = $("alert");
  const promised = Boolean(el.dataset.chat || el.dataset.untilChat || state.pinned.length); // (a prompt kept, or not sent)
  sessionEnded();
  dropKept();
  // an alert that promised a prompt back in a box after signing in: that prompt is gone now
  if (promised) showAlert(`${SIGNED_OUT} The prompts this page kept for chats are gone: Sign out was pressed in another tab.`);
}

/** After Sign out (here or in another tab): the prompts kept for chats, the box's text, and a
 * prompt still on its way (see sendPrompt) go; nothing is kept until the page is signed in again. */
function dropKept() {
  signedOutHere(); // (one count, api.js's: a request on its way now is dropped, whatever its answer)
  state.kept.close();
  $("prompt").value = "";
  prunePinned(); // (the notes on kept prompts: nothing is kept now)
}

async function onLogin(ev) {
  ev.preventDefault();
  try {
    await api.login($("login-token").value.trim());
    $("login-token").value = "";
    location.reload(); // (what is kept crosses it: see bindStaticHandlers' pagehide)
  } catch (err) {
    showAlert(err.status === 401 ? "That token is not this server's token." : err.message);
  }
}

/** As the page goes to chat `id` (null: another view): the alert is about what was shown,
 * except what stays true in any view: the list that cannot be fetched (it goes once it is), a
 * prompt of another chat not sent (it goes as that chat opens, the prompt back in its box), and
 * prompts of deleted chats waiting for a box (untilChat). */
function clearAlertFor(id) {
  const el = $("alert");
  if (el.dataset.unreachable !== "list" && !alertAboutAnotherChat(id) && !el.dataset.untilChat) showAlert("");
}

/** The chat the address names ("#/chat/<id>"); null: another view, or an id that cannot be
 * (a malformed %-escape: no chat has that id). */
function chatInAddress() {
  const m = location.hash.match(/^#\/chat\/(.+)$/);
  try {
    return m ? decodeURIComponent(m[1]) : null;
  } catch {
    return null;
  }
}

function route() {
  state.moves += 1;
  const hash = location.hash;
  const m = hash.match(/^#\/chat\/(.+)$/);
  const id = chatInAddress();
  // While signed out only the sign-in form shows, saying why: Back or a link to a view that
  // asks nothing of the server leaves it as it is; a chat is asked for: the chat or a 404
  // (signed in again in another tab) makes the page a signed-in page again (signedInAgain),
  // showing the chat or why not; any other answer, or none at all, keeps the form as it is.
  if (state.signedOut) return id === null ? undefined : openChat(id);
  clearAlertFor(id);
  if (id !== null) return openChat(id);
  closeChat();
  if (m) {
    show("welcome-view");
    markCurrentInList();
    return showAlert("That chat does not exist on this server.");
  }
  if (hash === "#/new") {
    show("new-view");
    $("new-subdir").focus();
  } else {
    show("welcome-view");
  }
  markCurrentInList();
}

// ---- chats list --------------------------------------------------------------------------

/** Fetch the chats list and draw it. The list is most recently active first, and every change
 * of a chat (a record, a new title, a run's status) makes it the most recently active: what
 * changed since the last refresh is at the top. So a refresh fetches pages from the first only
 * until a page ends with a chat unchanged since (same `updated_ms`); the chats after it are
 * kept as they were (a refresh every 2 s while a chat runs fetched every page shown: "More
 * chats" made that 5 requests for 1,000 chats). A chat deleted among the kept ones is not a
 * change of order: one chat, the last listed, is asked for where it should be, and if it is not
 * there every page shown is fetched again. `all`: fetch every page shown (at the start, and for
 * "More chats"). */
async function refreshChats({ all = false } = {}) {
  clearTimeout(state.listTimer);
  // Only a signed-in page refreshes its list (signedInAgain is what makes it one again; a list
  // that answered says nothing of the form shown meanwhile).
  if (state.signedOut) return;
  try {
    let listed = await fetchChats(all);
    if (listed.kept && !(await lastInPlace(listed.chats))) listed = await fetchChats(true);
    if (state.signedOut) return; // asked before the session ended: that answer is old
    state.chats = listed.chats;
    state.moreChats = listed.more;
  } catch (err) {
    // (a 401 asked before the page was signed in again was asked again under this session: api.js)
    if (err instanceof SessionEnded) return; // (the sign-in form shows: sessionEnded)
    await checkStore(); // (a database that cannot be read either: the list fails too)
    if (state.signedOut) return; // (its 401: the sign-in form shows, and the list waits for it)
    const wait = scheduleRefresh(); // the list retries later
    // An open chat's stream shows the connection state in the top bar; with none open, the
    // page would show nothing at all: the alert says so (unless it says something else).
    const el = $("alert");
    if (!state.chat && (el.hidden || el.dataset.unreachable === "list")) {
      showAlert(`The chats could not be loaded: ${err.message}. Trying again in ${wait / 1000} s.`,
        { unreachable: "list" });
    }
    return;
  }
  clearUnreachable();
  renderChats();
  await checkStore();
  if (state.signedOut) return; // (its 401: no refresh left behind across the session's end)
  scheduleRefresh();
  await checkDrafts();
}

/** The chats to list: {chats, more (the server may have older ones), kept (some were kept
 * from the last refresh, not fetched)}. Page by page (the server gives at most 500 at once),
 * a chat seen twice (the order changed between pages) listed once. */
async function fetchChats(all) {
  const known = new Map(state.chats.map((c) => [c.id, c]));
  const seen = new Set();
  const chats = [];
  let full = false;
  let keptAfter = null; // the unchanged chat that ended the last page fetched
  for (let offset = 0; offset < state.listLimit; offset += LIST_PAGE) {
    const page = (await api.listChats(LIST_PAGE, offset)).chats;
    for (const chat of page) {
      if (seen.has(chat.id)) continue;
      seen.add(chat.id);
      chats.push(chat);
    }
    full = page.length === LIST_PAGE;
    if (!full) break;
    const last = page[page.length - 1];
    if (!all && known.get(last.id)?.updated_ms === last.updated_ms) {
      if (offset + LIST_PAGE < state.listLimit) keptAfter = last.id;
      break;
    }
  }
  if (keptAfter === null) return { chats, more: full, kept: false };
  // the chats listed after it, as they were (those that changed since are in the pages fetched;
  // those listed before it and not fetched again are gone)
  const from = state.chats.findIndex((c) => c.id === keptAfter) + 1;
  for (const chat of state.chats.slice(from)) if (!seen.has(chat.id)) chats.push(chat);
  const more = state.moreChats || chats.length > state.listLimit; // (new chats pushed some past it)
  chats.length = Math.min(chats.length, state.listLimit);
  return { chats, more, kept: true };
}

/** Whether the last of `chats` is where the server lists it, unchanged: else a chat listed
 * before it (one kept from the last refresh) was deleted, or moved, since. One chat asked for. */
async function lastInPlace(chats) {
  if (!chats.length) return true;
  const mine = chats[chats.length - 1];
  const [theirs] = (await api.listChats(1, chats.length - 1)).chats;
  return theirs?.id === mine.id && theirs.updated_ms === mine.updated_ms;
}

/** A chat gone from the server (deleted here, or found deleted on opening it): out of the
 * list now (a refresh keeps the pages it does not fetch again as they were). */
function dropChat(id) {
  state.chats = state.chats.filter((c) => c.id !== id);
  renderChats();
}

/** After a refresh of the list: a chat with a prompt kept for it that the list no longer shows
 * is asked for (one request; none while every such chat is listed); if it is gone (deleted in
 * another tab or by the command line), its prompt is orphaned (see orphanDraft). A listed one's
 * title is kept up to date for the alerts. */
async function checkDrafts() {
  for (const id of state.kept.unlisted(state.chats)) {
    try {
      await api.getChat(id);
    } catch (err) {
      if (err.status === 404) orphanDraft(id);
    }
  }
  placeOrphans(); // (waiting for the open chat's box to be empty: see orphanDraft)
  prunePinned();
}

/** With the list: whether the server can write its database. While it cannot (locked, full,
 * unreachable), runs go on and their output waits in the server's memory; the page says so,
 * or a running chat would simply look stuck. */
async function checkStore() {
  let store;
  try {
    store = (await api.health()).store;
  } catch {
    return; // the list and the stream say what is wrong with the connection
  }
  const el = $("store-state");
  state.storeDegraded = store?.status === "degraded";
  el.hidden = !state.storeDegraded;
  if (!state.storeDegraded) return;
  const since = store.degraded_since_ms ? ` since ${new Date(store.degraded_since_ms).toLocaleTimeString()}` : "";
  const waiting = store.buffered?.events
    ? `${store.buffered.events} events wait in the server's memory and show here`
    : "their output shows here";
  // (health is "degraded" from a failed write until one succeeds: an idle server's note can
  // outlast the outage until the next write, which then clears it)
  el.textContent = `The server could not write to its database${since} (${showControls(store.reason || "no reason given")}), `
    + `and no write has succeeded since. Running agents go on: ${waiting} once a write succeeds. New chats and prompts may be refused until then.`;
}

/** The list is refreshed every 10 s, and every 2 s while one of its chats has a run going
 * (its end must show even when that chat is not open) or the server cannot write its database.
 * Returns the wait, in ms. */
function scheduleRefresh() {
  clearTimeout(state.listTimer);
  const active = state.storeDegraded || state.chats.some((c) => ACTIVE.has(c.status));
  const wait = active ? ACTIVE_LIST_REFRESH_MS : LIST_REFRESH_MS;
  state.listTimer = setTimeout(() => refreshChats(), wait);
  return wait;
}

/** Draw the list from state.chats, in place: each chat keeps its item (keyed by chat id),
 * only what changed is written, items move only when the order changed. (Drawing it again
 * from scratch cost a long freeze with thousands of chats, and a click across it was lost.) */
function renderChats() {
  const list = $("chat-list");
  const items = new Map([...list.children].map((li) => [li.dataset.chatId, li]));
  const focused = document.activeElement?.closest?.("#chat-list .chat-item");
  let next = list.firstElementChild;
  for (const chat of state.chats) {
    let li = items.get(chat.id);
    items.delete(chat.id);
    if (!li) li = chatItem(chat.id);
    drawChatItem(li, chat);
    if (li === next) next = next.nextElementSibling;
    else list.insertBefore(li, next);
  }
  for (const li of items.values()) li.remove(); // no longer listed
  $("chat-list-empty").hidden = state.chats.length > 0;
  $("more-chats-button").hidden = !state.moreChats;
  markCurrentInList();
  // a keyboard user's focus on a chat that moved stays on it
  if (focused?.isConnected && !focused.contains(document.activeElement)) focused.querySelector("a").focus();
}

/** An empty item of the list for chat `id` (drawChatItem fills it). */
function chatItem(id) {
  const parts = {
    title: h("span", { class: "chat-item-title" }),
    ws: h("span", { class: "chat-item-ws" }),
    pill: h("span", { class: "pill" }),
    time: h("time"),
  };
  const li = h("li", { class: "chat-item", dataset: { chatId: id } },
    h("a", { href: `#/chat/${encodeURIComponent(id)}`, onclick: (ev) => onChatLink(ev, id) },
      parts.title, parts.ws, h("span", { class: "chat-item-meta" }, parts.pill, " ", parts.time)));
  li.parts = parts;
  return li;
}

/** A click (or Enter) on a chat's link. The address is already that chat's when its opening
 * failed (the server was unreachable): no hash change would come, so it opens it again. */
function onChatLink(ev, id) {
  toggleMenu(false);
  if (new URL(ev.currentTarget.href).hash !== location.hash || state.chat?.id === id) return;
  ev.preventDefault();
  route();
}

/** Show `chat` in its item: only the texts and attributes that changed are written. */
function drawChatItem(li, chat) {
  const open = chat.id === state.chat?.id;
  const status = open && state.timeline?.latestRun ? state.timeline.latestRun.status : chat.status;
  if (open) chat.status = status;
  if (open && chat.title !== state.chat.title) {
    state.chat.title = chat.title; // renamed (after its first prompt, or elsewhere)
    showChatHeader();
  }
  const { title, ws, pill, time } = li.parts;
  const set = (el, key, value) => { if (el[key] !== value) el[key] = value; };
  set(title, "textContent", showControls(chat.title || "Untitled chat"));
  set(ws, "textContent", showControls(chat.workspace));
  set(pill, "className", `pill status-${status}`);
  set(pill, "textContent", status);
  set(time, "dateTime", new Date(chat.updated_ms).toISOString());
  set(time, "textContent", formatAgo(chat.updated_ms));
}

/** The open chat's item (or the opening one's) is the list's current page. */
function markCurrentInList() {
  const current = state.chat?.id ?? state.opening?.id;
  for (const li of $("chat-list").children) {
    const link = li.querySelector("a");
    if (li.dataset.chatId === current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

// ---- new chat ----------------------------------------------------------------------------

function fillRoots() {
  const select = $("new-root");
  replace(select, (state.config.roots || []).map((root, i) => h("option", { value: root, selected: i === 0, text: root })));
}

/** New chat's form submitted. A second submit of the same form while its chat is on its way
 * (Enter pressed again, the server slow) makes nothing: one chat (the form is emptied only once
 * it is made). A form filled in again otherwise meanwhile is another chat. */
async function onCreateChat(ev) {
  ev.preventDefault();
  const sent = formValues($("new-form"));
  if (state.creating.has(sent)) return sayCreating("This chat is already being created.");
  sayCreating("");
  state.creating.add(sent);
  try {
    await createChat(sent);
  } finally {
    state.creating.delete(sent);
    if (!state.creating.size) sayCreating("");
  }
}

/** `line` under New chat's form, seen (#new-status) and heard (the polite region); "": none. */
function sayCreating(line) {
  $("new-status").textContent = line;
  $("new-status").hidden = !line;
  if (line) announce(line);
}

/** Create the chat New chat's form (holding `sent`: formValues) says, and open it. */
async function createChat(sent) {
  const root = $("new-root").value;
  const sub = $("new-subdir").value.trim().replace(/^\/+/, "");
  const body = {
    workspace: sub ? `${root.replace(/\/+$/, "")}/${sub}` : root,
    options: {
      trust: $("opt-trust").checked,
      force: $("opt-force").checked,
      approve_mcps: $("opt-mcps").checked,
      stream_partial_output: $("opt-partial").checked,
      transport: $("opt-transport").value,
      mode: $("opt-transport").value === "acp" ? $("opt-mode").value : "agent",
    },
  };
  const model = $("new-model").value.trim();
  if (model) body.model = model;
  const title = $("new-title-input").value.trim();
  if (title) body.title = title;
  const moves = state.moves; // the user going elsewhere meanwhile stays there
  try {
    const chat = await api.createChat(body); // (asked again after a late 401: api.js)
    await refreshChats();
    // The form is emptied once its chat is made, unless the user filled it in again meanwhile
    // (back at New chat while this one was slow): what they typed since stays.
    if (formValues($("new-form")) === sent) $("new-form").reset();
    if (state.moves === moves) location.hash = `#/chat/${encodeURIComponent(chat.id)}`;
    else announce(`The new chat “${showControls(chat.title || "Untitled chat")}” was created: it is in the list.`);
  } catch (err) {
    if (err instanceof SessionEnded) return;
    showAlert(`Could not create the chat: ${err.message}`);
  }
}

/** What `form`'s fields hold (values, boxes ticked), as one string to compare. */
function formValues(form) {
  return JSON.stringify([...form.elements].map((el) => (el.type === "checkbox" ? el.checked : el.value)));
}

// ---- one chat ----------------------------------------------------------------------------

function closeChat() {
  state.opening = null; // a chat still loading is not shown once the page went elsewhere
  toggleOptions(false);
  showTitle(null);
  if (state.stream) state.stream.stop();
  state.stream = null;
  keepTyped(state.chat);
  $("prompt").readOnly = true; // until a chat opens: typed meanwhile, it belonged to no chat
  state.chat = null;
  state.timeline?.close();
  state.timeline = null;
  setConn("");
}

async function openChat(id) {
  if (state.chat?.id === id && state.stream) return show("chat-view");
  if (state.opening?.id === id) return; // (still loading: its list entry or link clicked again)
  closeChat();
  // Opened twice while loading (a route and a hash change at once): only the last goes on,
  // or two streams would feed one timeline and show every record twice.
  const opening = { id };
  state.opening = opening;
  if (!state.signedOut) showOpening(id); // (signed out: the sign-in form stays until an answer)
  let chat;
  let turns;
  try {
    // The chat's folded state, then the records after its last_seq (see docs/web.md).
    [chat, turns] = await Promise.all([api.getChat(id), api.turns(id, TURNS_PAGE)]);
    if (state.opening !== opening) return; // another chat (or this one again) was opened meanwhile
  } catch (err) {
    if (state.opening !== opening) return;
    state.opening = null; // (not opening any more: not the list's current chat, and asked again if opened again)
    if (err instanceof SessionEnded) return;
    // Signed out, only a 404 proves a session (every /api path asks for one first): a 403, a
    // 5xx (a proxy's 502, the session store's 503) or no answer says nothing of it: the form stays.
    if (state.signedOut && err.status !== 404) return;
    signedInAgain(id); // (signed in, in another tab, say)
    show("welcome-view");
    // the focus was in the sign-in form (signed out), now hidden: to the view's heading
    if (document.activeElement === document.body || document.activeElement?.closest("[hidden]")) $("welcome-title").focus();
    showTitle(null); // (the tab no longer names the chat that did not open)
    markCurrentInList();
    if (err.status === 404) dropChat(id); // deleted (in another tab, say): out of the list too
    showAlert(err.status === 404 ? "That chat does not exist on this server." : `The chat did not open: ${err.message}`,
      { unreachable: err.status === 0 });
    if (err.status === 404) orphanDraft(id); // (a prompt kept for it: the alert says where it goes)
    return;
  }
  state.chat = chat;
  signedInAgain(id); // (the server answered: signed in, in another tab, say)
  if ($("alert").dataset.unreachable === "list") showAlert(""); // the server answered
  show("chat-view");
  showChatHeader();
  $("send-button").disabled = false;
  state.timeline = new Timeline($("timeline"), $("result-bar"), {
    onRunChange, workspace: chat.workspace, chatId: id, onAnswer: api.answerRequest,
    earlier: (beforeRun) => api.turns(id, TURNS_PAGE, beforeRun),
  });
  state.timeline.load(turns); // out of a screen reader's hearing: this line says what opened
  announce(afterHeard(openedLine(chat, turns)));
  $("prompt").readOnly = false;
  clearOnItsWay(id);
  restoreDraft(id);
  placeOrphans({ opening: true });
  prunePinned(); // (a note on this chat's prompt: it is back in the box)
  updateRunControls();
  markCurrentInList();
  state.stream = new ChatStream(id, {
    afterSeq: turns.last_seq,
    onRecord: (rec, changes) => state.timeline.apply(rec, changes),
    onState: setConn,
    onTrouble: checkAuth,
    onSignedOut: sessionEnded,
  }).start();
  $("prompt").focus();
}

/** Chat `id` is opening (its state asked for, a slow or large chat): the chat view shows at
 * once, saying so, under the chat's title if the list has it ("Loading…" if not). Nothing of the
 * chat shown before stays (its header, its conversation, its result); the box takes no typing
 * (closeChat), and Send, Options and Delete are off, until the chat is open. */
function showOpening(id) {
  const listed = state.chats.find((c) => c.id === id);
  showTitle(listed ? showControls(listed.title || "Untitled chat") : "Loading…", { tab: Boolean(listed) });
  $("chat-meta").textContent = "";
  $("chat-meta").title = "";
  // (out of the log's hearing: "Opened …" is said once the chat is open)
  replace($("timeline"), h("p", { class: "notice loading", "aria-live": "off", text: "Loading the conversation…" }));
  replace($("result-bar"));
  $("result-bar").hidden = true;
  updateRunControls(); // (no run: no Stop)
  for (const button of ["send-button", "options-button", "delete-chat-button"]) $(button).disabled = true;
  show("chat-view");
  markCurrentInList();
}

/** `title` in the chat's header (shown in two lines at most: the whole title on hover) and,
 * unless `tab` is false, in the tab's title; null: the tab's title names no chat. */
function showTitle(title, { tab = true } = {}) {
  if (title === null) {
    document.title = "cursor-agent-api";
    return;
  }
  $("chat-title").textContent = title;
  $("chat-title").title = title;
  if (tab) document.title = `${title} — cursor-agent-api`;
}

/** What a screen reader hears when a chat opens (its history is not read out). */
function openedLine(chat, turns) {
  const n = (turns.runs || []).length;
  const count = n ? `${n} turn${n === 1 ? "" : "s"}${turns.has_more ? " shown (Show earlier turns, at the top, loads more)" : ""}` : "no turns yet";
  return `Opened ${showControls(chat.title || "Untitled chat")}: ${count}.`;
}

/** The open chat's title, workspace, model and options, in the header and the tab's title. */
function showChatHeader() {
  const chat = state.chat;
  showTitle(showControls(chat.title || "Untitled chat"));
  const opts = Object.entries(chat.options || {}).filter(([, on]) => on === true).map(([k]) => k).join(", ");
  const acpMode = { plan: "plan mode: you accept or reject its plans", ask: "ask mode" }[chat.options?.mode];
  const mode = chat.options?.transport === "acp"
    ? ["ACP: you approve each tool call", acpMode].filter(Boolean).join(", ") : "print mode";
  $("chat-meta").textContent = [showControls(chat.workspace), chat.model ? `model ${chat.model}` : "default model", mode, opts]
    .filter(Boolean).join(" · ");
  $("chat-meta").title = $("chat-meta").textContent; // one line on a phone: the rest on hover
  $("chat-view").dataset.transport = chat.options?.transport || "print";
}

// A prompt refused while the chat's run goes on: said until that run ends (or another alert).
const BUSY = "The agent is still working on the previous prompt: wait for it, or press Stop (Esc).";

function onRunChange(changed) {
  updateRunControls();
  const run = state.timeline.latestRun;
  const alert = $("alert");
  if (run && !ACTIVE.has(run.status) && !alert.hidden && alert.textContent === BUSY && state.busyChat === state.chat?.id) {
    showAlert(""); // no longer true: the prompt in the box can go now
  }
  const chat = state.chats.find((c) => c.id === state.chat?.id);
  if (chat && run && chat.status !== run.status) {
    chat.status = run.status;
    chat.updated_ms = Date.now();
    const li = [...$("chat-list").children].find((item) => item.dataset.chatId === chat.id);
    if (li) drawChatItem(li, chat); // this chat's item only (its place comes with the refresh)
    if (!ACTIVE.has(run.status)) { // order, title and status from the server (once per burst)
      clearTimeout(state.listTimer);
      state.listTimer = setTimeout(() => refreshChats(), 250);
    }
  }
  // ACP chats ask before each tool call (the cards): no "run again with --force" dead end.
  if (changed === run && !ACTIVE.has(run.status) && state.chat?.options?.transport !== "acp") {
    const kinds = state.timeline.rejectedKinds(run.id);
    const changes = {};
    if (kinds.size && !state.chat?.options?.force) changes.force = true;
    if ((kinds.has("mcp") || kinds.has("mcp_tools")) && !state.chat?.options?.approve_mcps) changes.approve_mcps = true;
    if (Object.keys(changes).length) state.timeline.addOffer(allowToolsOffer(run, changes));
  }
}

/** After a run whose tool call was rejected (print mode, tools not allowed): allow them for
 * this chat (force) and send the same prompt again. */
function allowToolsOffer(run, changes) {
  const chatId = state.chat.id; // the run's chat: the prompt goes there, even if the page left it
  const button = h("button", { type: "button", class: "primary", text: "Allow tools for this chat and run again" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await setOptions(chatId, changes);
      await startPrompt(chatId, run.prompt || "");
    } catch (err) {
      if (!(err instanceof SessionEnded)) showAlert(`Could not run it again: ${err.message}`);
    } finally {
      button.disabled = false;
    }
  });
  return h("div", { role: "note" },
    h("p", { text: "A tool call was rejected: in this chat the agent runs shell commands and writes files only when tools are allowed (--force; MCP servers need --approve-mcps)." }),
    button);
}

// ---- the open chat's options -----------------------------------------------------------

function toggleOptions(open) {
  const form = $("chat-options");
  const next = open ?? form.hidden;
  if (next && state.chat) {
    for (const [key, id] of Object.entries(OPTION_BOXES)) $(id).checked = Boolean(state.chat.options?.[key]);
    $("copt-transport").value = state.chat.options?.transport === "acp" ? "acp" : "print";
    $("copt-mode").value = ["plan", "ask"].includes(state.chat.options?.mode) ? state.chat.options.mode : "agent";
    syncMode("copt-transport", "copt-mode");
  }
  form.hidden = !next;
  $("options-button").setAttribute("aria-expanded", String(next));
  if (next) $("copt-trust").focus();
}

/** The session-mode select is usable for ACP chats only (print mode runs as Agent). */
function syncMode(transportId, modeId) {
  const acp = $(transportId).value === "acp";
  $(modeId).disabled = !acp;
  if (!acp) $(modeId).value = "agent";
}

/** PATCH chat `chatId`'s options (409 while a run is active); if it is still open, the header
 * shows the new ones. */
async function setOptions(chatId, changes) {
  const chat = await api.updateChat(chatId, { options: changes });
  if (state.chat?.id !== chat.id) return;
  state.chat.options = chat.options;
  showChatHeader();
}

async function saveOptions(ev) {
  ev.preventDefault();
  const changes = {};
  for (const [key, id] of Object.entries(OPTION_BOXES)) changes[key] = $(id).checked;
  changes.transport = $("copt-transport").value;
  changes.mode = changes.transport === "acp" ? $("copt-mode").value : "agent";
  try {
    await setOptions(state.chat.id, changes);
    toggleOptions(false);
    $("options-button").focus();
  } catch (err) {
    if (!(err instanceof SessionEnded)) showAlert(`The options were not changed: ${err.message}`);
  }
}

/** Delete the open chat, once confirmed; then the welcome view, and the list without it. */
async function deleteChat() {
  const chat = state.chat;
  if (!chat || !confirm(`Delete the chat “${chat.title}” with all its runs? This cannot be undone.`)) return;
  try {
    await api.deleteChat(chat.id);
  } catch (err) {
    if (err instanceof SessionEnded) return;
    if (err.status !== 404) return showAlert(`The chat was not deleted: ${err.message}`);
  }
  if (state.chat?.id === chat.id) {
    $("prompt").value = ""; // what was typed in it goes with it (not kept for it: keepTyped)
    location.hash = "#/";
    route(); // now, not at the hash change: the focus goes to the welcome view's link
    $("welcome-new-link").focus(); // (it was on Delete, now gone with the chat)
    announce("The chat was deleted.");
  }
  dropChat(chat.id);
  state.kept.take(chat.id); // what was kept for it goes with it (the page left it meanwhile, say)
  prunePinned();
  await refreshChats();
}

function updateRunControls() {
  const active = state.timeline?.activeRun;
  $("stop-button").hidden = !active;
  $("stop-button").disabled = false;
  $("run-state").textContent = active ? (active.status === "queued" ? "Queued: waiting for a free slot…" : "The agent is working…") : "";
  $("options-button").disabled = Boolean(active); // options change between runs only
  $("delete-chat-button").disabled = Boolean(active); // the server refuses it meanwhile (409)
  if (active) toggleOptions(false);
  document.body.classList.toggle("running", Boolean(active));
}

const CONN_TEXT = {
  connecting: "Connecting…",
  replaying: "Catching up…",
  live: "Live",
  reconnecting: "Reconnecting…",
  closed: "",
};

/** Show the open chat's connection state in the top bar. A screen reader hears only what
 * matters, in the status region: the connection lost (a failed connection, waiting to try
 * again), back, or ended by an error — not "Connecting…" and "Live" each time a chat opens,
 * nor a reconnection that catches up at once (a resync). */
function setConn(status, detail) {
  const el = $("conn");
  el.dataset.state = status || "";
  if (status === "error") el.textContent = `Stream error: ${detail}`;
  else el.textContent = CONN_TEXT[status] ?? "";
  if (status === "reconnecting" && detail) el.title = detail;
  if (status === "reconnecting" && detail && !state.connLost) {
    announce("Lost the connection to the server: reconnecting…");
    state.connLost = true;
  } else if (status === "live" && state.connLost) {
    announce("Connected again.");
  } else if (status === "error") {
    announce(`Stream error: ${detail}`);
  }
  if (!["reconnecting", "connecting", "replaying"].includes(status)) state.connLost = false;
}

/** Repeated connection failures: a restarted server with a new token needs a new sign-in
 * (a 401: sessionEnded). */
async function checkAuth() {
  try {
    await api.health();
  } catch {
    // (anything else: the stream says what is wrong with the connection)
  }
}

/** Resolve true once check() holds, false after ms milliseconds. */
async function settled(check, ms) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

/** Enter or Send. A prompt sent while the one before it is still on its way (waiting for a run
 * to end, or its request not answered yet) waits in the box for that one, then goes as if sent
 * at that moment; if that one, in the same chat, was not sent, neither is this one, and the page
 * says so. The same prompt sent again before it went is the one on its way; of several sent
 * meanwhile (the box edited), the last goes. */
async function sendPrompt() {
  const input = $("prompt");
  const prompt = input.value;
  const chat = state.chat; // the chat it was typed in: it goes there or nowhere
  if (!chat) return;
  const ahead = state.sending;
  if (ahead && !ahead.taken && ahead.chatId === chat.id && ahead.prompt === prompt) return; // Enter again: it is on its way
  if (!prompt.trim()) {
    // (with a prompt on its way, an empty box is an Enter pressed again as that one went)
    return ahead ? undefined : showAlert("Type a prompt first: the box is empty.");
  }
  const size = new TextEncoder().encode(prompt).length, limit = state.config?.max_prompt_bytes;
  if (limit && size > limit) return showAlert(`The prompt was not sent: it is ${size} bytes, over the server's limit of ${limit}; it is still in the box.`);
  const stops = state.stops; // a Stop pressed from now on drops this prompt
  // A Sign out from now on drops it too, signed in again in another tab since or not (Sign out
  // keeps nothing for whoever signs in next: KeptPrompts.close, which signing in again reopens).
  const outs = signOuts();
  if (ahead) {
    const waiting = { chatId: chat.id, prompt };
    state.waiting = waiting;
    const sent = await ahead.done;
    if (state.waiting !== waiting) return; // sent again since (the box edited): that one goes
    state.waiting = null;
    if (!sent && ahead.chatId === chat.id) { // (it followed that one: it does not go without it)
      const said = $("alert").hidden ? "" : $("alert").textContent;
      const why = said ? `${said}${said.endsWith(".") ? "" : "."} ` : "";
      if (signOuts() !== outs) return; // (Sign out meanwhile: nothing kept, nothing said)
      if (state.chat?.id !== chat.id) {
        // the page left that chat: this one is kept for it, after the one it followed (even
        // if it is the same text: it was sent twice), and the alert that says why stays
        const kept = state.kept.get(chat.id);
        if (!waiting.edited) state.kept.set(chat, kept ? `${kept}\n\n${prompt}` : prompt); // (edited: its new version is kept)
        if ($("prompt").value === prompt) $("prompt").value = "";
        return showAlert(`${why}The prompt you sent after it was not sent either: ${waiting.edited
          ? "what you edited it into is kept for that chat too, after it." : "it is kept for that chat too, after it."}`, { chat: chat.id });
      }
      const both = $("prompt").value !== prompt && $("prompt").value.includes(prompt);
      return showAlert(`${why}The prompt you sent after it was not sent either: ${both
        ? "both are in the box, one after the other; edit it and press Enter to send it."
        : "it is in the box; press Enter to send it."}`);
    }
  }
  const sending = { chatId: chat.id, prompt, taken: false, signOuts: outs };
  sending.done = new Promise((resolve) => { sending.finish = resolve; });
  state.sending = sending;
  let sent = false;
  try {
    sent = await deliver(chat, prompt, stops, sending);
  } finally {
    state.sending = null;
    sending.finish(sent);
  }
}

/** Send `prompt` to `chat` once its run has ended (a moment is waited for); true once the
 * server has taken it, false (the page saying why) if it was not sent. */
async function deliver(chat, prompt, stops, sending) {
  const input = $("prompt");
  const left = () => state.chat?.id !== chat.id;
  try {
    // A run that is just ending (its process exiting after the answer, or its last records
    // still being replayed) gets a moment before the prompt is refused.
    if (!(await settled(() => !state.timeline?.activeRun || state.stops !== stops || left(), 3000))) {
      showAlert(BUSY);
      state.busyChat = chat.id; // the alert goes once that chat's run ends (onRunChange)
      return false;
    }
    if (signOuts() !== sending.signOuts) return false; // Sign out meanwhile: dropped, and nothing said
    if (left()) {
      keepDraft(chat, sending.edited ? null : prompt); // (edited in the box: its new version is kept)
      return false;
    }
    if (state.stops !== stops) {
      // Stop means stop: what was typed during the run is not sent on its own afterwards.
      showAlert("Your prompt was not sent, because you stopped the run: it is still in the box; press Enter to send it.");
      return false;
    }
    // The box empties as the prompt goes (not when the server has answered: a request
    // the run sends meanwhile takes the focus only from an empty box); it comes back if
    // the prompt was not sent and nothing was typed meanwhile.
    if (input.value === prompt) input.value = "";
    sending.taken = true;
    try {
      await startPrompt(chat.id, prompt);
    } catch (err) {
      // signed out: the page has left the chat for the sign-in form (sessionEnded), so the
      // prompt is kept for that chat, back in its box when it opens after signing in (across
      // the reload: KeptPrompts.stash); after Sign out, nowhere (signed in again meanwhile
      // or not: a prompt on its way then is not kept)
      if (signOuts() === sending.signOuts) err.putBack = putBack(chat, prompt);
      throw err;
    }
    return true;
  } catch (err) {
    if (signOuts() !== sending.signOuts) return false; // (Sign out meanwhile: the form says so)
    const { note = "", chat: about } = err.putBack ?? {};
    if (err instanceof SessionEnded) showAlert(`${SIGNED_OUT} Your prompt was not sent${note}.`, { chat: about });
    else showAlert(`The prompt was not sent: ${err.message}${note}`, { chat: about });
    return false;
  }
}

/** A prompt taken out of the box whose request failed goes back where it was typed, and
 * nothing typed since is lost: into its box, before what was typed after it (a blank line
 * between), or, if the page left its chat meanwhile, into that chat's kept prompt (back in its
 * box as it opens). Returns what the alert adds: {note, chat (the chat left, if so)}. */
function putBack(chat, prompt) {
  const input = $("prompt");
  if (state.chat?.id !== chat.id) {
    state.kept.set(chat, joinPrompts(prompt, state.kept.get(chat.id)));
    return { note: `; it is back in the prompt box of “${showControls(chat.title || "Untitled chat")}” when you open it again`, chat: chat.id };
  }
  const typed = input.value;
  input.value = joinPrompts(prompt, typed);
  return { note: typed && typed !== prompt ? "; it is back in the box, before what you typed after it" : "" };
}

/** A prompt waiting for its chat's run to end when the page left that chat (Back, another
 * chat, New chat) is not sent anywhere: it goes back in that chat's prompt box when the chat
 * opens again, and the page says so. (Sent to the chat now open, it went where it was not
 * typed; sent to the chat left, it started a run nobody watches, past a 3 s wait the user may
 * have left it to cancel.) `prompt` null: it was edited in the box before the page left, and
 * that new version is what is kept (keepTyped); the page says so all the same. */
function keepDraft(chat, prompt) {
  const input = $("prompt");
  if (input.value === prompt) input.value = "";
  if (state.kept.closed) return; // (Sign out: nothing is kept, the sign-in form says why)
  if (prompt !== null) {
    // the prompt sent after it, waiting for it, edited in the box and kept as edited (keepTyped):
    // it came after this one, and goes after it
    const next = state.waiting;
    const kept = state.kept.get(chat.id);
    state.kept.set(chat, next?.edited && next.chatId === chat.id ? joinPrompts(prompt, kept) : joinPrompts(kept, prompt));
  }
  const title = `“${showControls(chat.title || "Untitled chat")}”`;
  if (state.signedOut) { // the session ended as it waited
    return showAlert(`${SIGNED_OUT} Your prompt for ${title} was not sent: `
      + `${prompt === null ? "what you edited it into" : "it"} is back in that chat's prompt box when you open it after signing in.`, { chat: chat.id });
  }
  const back = prompt === null ? "What you edited it into is" : "It is";
  showAlert(`Your prompt for ${title} was not sent: you left that chat `
    + `while its run was going. ${back} back in that chat's prompt box when you open it again.`, { chat: chat.id });
}

/** Whether the box holds a prompt on its way (sent, waiting for its run, not taken yet) to a
 * chat `to(chatId)` accepts: that text is not typed text, it goes (or is kept) from its own copy. */
function boxOnItsWay(to) {
  const text = $("prompt").value;
  return [state.sending, state.waiting].some((p) => p && !p.taken && p.prompt === text && to(p.chatId));
}

/** As the page leaves `chat`: what is typed in its box and not sent stays that chat's, back in
 * its box when it opens again (the box shows in every chat: sent from another, it went where it
 * was not typed). A prompt on its way stays as it is (it goes, or is kept, from its own copy). */
function keepTyped(chat) {
  const input = $("prompt");
  const typed = input.value;
  if (!chat) return;
  const last = state.waiting ?? state.sending;
  const waits = last && !last.taken && last.chatId === chat.id;
  // An edit is a change of its text: the box holding that prompt as it was sent (typed into
  // and back, or its edit kept and put back then undone) is no edit, and the prompt goes (or
  // is kept) as sent.
  if (waits && typed === last.prompt) last.edited = false;
  if (!typed || boxOnItsWay((to) => to === chat.id)) return;
  // The last prompt sent to it and not taken yet (waiting for its run) stayed in the box, and
  // the box was edited since: what it holds is that prompt's new version, kept instead of it.
  if (waits) last.edited = true;
  state.kept.set(chat, joinPrompts(state.kept.get(chat.id), typed));
  input.value = "";
}

/** As chat `id` opens: a prompt on its way to another chat (waiting for that chat's run) leaves
 * the box, where it stayed while it waited: it is not this chat's, and it goes (or is kept for
 * its chat: keepDraft) from its own copy. What is put back in the box next is not joined to it. */
function clearOnItsWay(id) {
  if (boxOnItsWay((to) => to !== id)) $("prompt").value = "";
}

/** A prompt kept for chat `id`, back in the box as that chat opens: before what the box holds,
 * if anything (a blank line between), the page saying so. */
function restoreDraft(id) {
  const kept = state.kept.take(id);
  if (kept === undefined) return;
  const input = $("prompt");
  const typed = input.value;
  input.value = joinPrompts(kept, typed);
  if (typed && typed !== kept) {
    showAlert("Your prompt kept for this chat, not sent, is back in the box, before what was already in it. Edit the box before you press Enter.");
  }
}

/** Chat `id` is gone (deleted in another tab, by the command line, or here): what was kept for
 * it has no chat to go back to. It goes into the box of the chat open now if that box is empty
 * and no prompt of it is on its way (placeOrphans), else as soon as it is (at the list's next
 * refresh), or into the box of the next chat to open; the alert says so and stays until then.
 * It is never sent by itself: Enter sends it to the chat it is in, which the alert names. */
function orphanDraft(id) {
  if (!state.kept.orphan(id)) return;
  if (state.chat && state.chat.id !== id && placeOrphans()) return; // (not into the deleted chat's own box)
  sayOrphansKept();
}

/** The alert while prompts of deleted chats wait for a box (it stays until a chat opens). */
function sayOrphansKept() {
  const { orphans } = state.kept;
  if (!orphans) return;
  const one = orphans.titles.length === 1;
  const where = state.chat ? "into this chat's prompt box once it is empty, or into the next chat's you open"
    : "into the prompt box of the next chat you open";
  showAlert(`${orphansDeleted(orphans)} ${one ? "It goes" : "They go"} ${where}, not sent.`, { untilChat: true });
}

/** The prompts of deleted chats (orphanDraft) into the open chat's box; true once they are.
 * As a chat opens (`opening`), before what the box holds (a blank line between); otherwise only
 * into an empty box with no prompt on its way (never in front of text being typed). The alert
 * says whose they were, and where Enter would send them. */
function placeOrphans({ opening = false } = {}) {
  const input = $("prompt");
  if (!state.kept.orphans || !state.chat) return false;
  if (!opening && (input.value || state.sending || state.waiting)) return false;
  const orphans = state.kept.takeOrphans();
  const typed = input.value;
  input.value = joinPrompts(orphans.prompt, typed);
  const one = orphans.titles.length === 1;
  const where = typed && typed !== orphans.prompt ? ", before what was already in it" : "";
  showAlert(`${orphansDeleted(orphans)} ${one ? "It is" : "They are"} now in this chat's prompt box${where}: written for the deleted chat, if you send `
    + `${one ? "it, it goes" : "them, they go"} to this chat, “${showControls(state.chat.title || "Untitled chat")}”. Edit or clear the box as you see fit.`);
  return true;
}

/** "The chat “A” was deleted, with a prompt of yours kept for it, never sent." (or the chats). */
function orphansDeleted({ titles }) {
  const names = titles.map((t) => `“${showControls(t || "Untitled chat")}”`).join(", ");
  return titles.length === 1 ? `The chat ${names} was deleted, with a prompt of yours kept for it, never sent.`
    : `The chats ${names} were deleted, with prompts of yours kept for them, never sent.`;
}

/** Start a run of chat `chatId` (the one the prompt was typed or the offer clicked in, even if
 * the page went elsewhere meanwhile); then the list (and the header) pick up its new title. */
async function startPrompt(chatId, prompt) {
  const alerts = state.alerts; // an alert shown from now on is newer than this request: it stays
  await api.startRun(chatId, prompt);
  // (an alert about another chat's prompt not sent stays: it goes as that chat opens)
  if (state.chat?.id === chatId && state.alerts === alerts && !alertAboutAnotherChat(chatId)
    && !$("alert").dataset.untilChat) showAlert("");
  refreshChats();
}

async function stopRun() {
  const run = state.timeline?.activeRun;
  if (!run) return;
  state.stops += 1;
  $("stop-button").disabled = true;
  $("run-state").textContent = "Stopping…";
  try {
    await api.cancelRun(run.id);
  } catch (err) {
    if (err instanceof SessionEnded) return; // (the sign-in form has the focus: sessionEnded)
    if (err.status !== 409) showAlert(`Could not stop the run: ${err.message}`);
  } finally {
    $("stop-button").disabled = false;
  }
  $("prompt").focus(); // the Stop button disappears with the run: keep the focus useful
}

boot();
