// The page: chats list, new-chat form, one open chat with its live stream,
// the prompt box, Stop. Routes are hashes: "#/new", "#/chat/<id>", "" (welcome).

import { api, ApiError } from "./api.js";
import { h, replace, formatAgo } from "./dom.js";
import { ChatStream } from "./stream.js";
import { Timeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const LIST_REFRESH_MS = 10_000;

const state = {
  config: null,
  chats: [],
  chat: null, // the open chat
  stream: null,
  timeline: null,
  busy: false, // a prompt is on its way
  opening: null, // the id of the chat being opened (a later click wins)
};

// ---- start -------------------------------------------------------------------------------

async function boot() {
  dropTokenFromAddress();
  bindStaticHandlers();
  try {
    state.config = await api.config();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return showLogin();
    return showAlert(`Cannot load the server's settings: ${err.message}`);
  }
  $("sim-badge").hidden = !state.config.simulate;
  document.body.classList.toggle("simulated", Boolean(state.config.simulate));
  fillRoots();
  await refreshChats();
  setInterval(refreshChats, LIST_REFRESH_MS);
  window.addEventListener("hashchange", route);
  route();
}

/** The server already swaps ?token= for the cookie with a redirect; make sure it is gone. */
function dropTokenFromAddress() {
  const url = new URL(location.href);
  if (url.searchParams.has("token")) {
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
}

function bindStaticHandlers() {
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
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && state.timeline?.activeRun && !$("chat-view").hidden) {
      ev.preventDefault();
      stopRun();
    } else if (ev.key === "Escape" && document.body.classList.contains("menu-open")) {
      toggleMenu(false);
      $("menu-toggle").focus();
    }
  });
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

function showAlert(message) {
  const el = $("alert");
  el.textContent = message;
  el.hidden = !message;
}

function showLogin() {
  closeChat();
  show("login-view");
  $("login-token").focus();
}

async function onLogin(ev) {
  ev.preventDefault();
  try {
    await api.login($("login-token").value.trim());
    $("login-token").value = "";
    location.reload();
  } catch (err) {
    showAlert(err.status === 401 ? "That token is not this server's token." : err.message);
  }
}

function route() {
  showAlert("");
  const hash = location.hash;
  const m = hash.match(/^#\/chat\/(.+)$/);
  if (m) return openChat(decodeURIComponent(m[1]));
  closeChat();
  if (hash === "#/new") {
    show("new-view");
    $("new-subdir").focus();
  } else {
    show("welcome-view");
  }
  markCurrentInList();
}

// ---- chats list --------------------------------------------------------------------------

async function refreshChats() {
  try {
    const data = await api.listChats();
    state.chats = data.chats;
  } catch (err) {
    if (err.status === 401) return showLogin();
    return; // the stream shows the connection state; the list retries later
  }
  renderChats();
}

function renderChats() {
  const list = $("chat-list");
  replace(list, state.chats.map((chat) => {
    const status = chat.id === state.chat?.id && state.timeline?.latestRun
      ? state.timeline.latestRun.status : chat.status;
    return h("li", { class: "chat-item", dataset: { chatId: chat.id } },
      h("a", { href: `#/chat/${encodeURIComponent(chat.id)}`, onclick: () => toggleMenu(false) },
        h("span", { class: "chat-item-title", text: chat.title || "Untitled chat" }),
        h("span", { class: "chat-item-ws", text: chat.workspace }),
        h("span", { class: "chat-item-meta" },
          h("span", { class: `pill status-${status}`, text: status }),
          " ",
          h("time", { datetime: new Date(chat.updated_ms).toISOString(), text: formatAgo(chat.updated_ms) }))));
  }));
  $("chat-list-empty").hidden = state.chats.length > 0;
  markCurrentInList();
}

function markCurrentInList() {
  for (const li of $("chat-list").children) {
    const link = li.querySelector("a");
    if (li.dataset.chatId === state.chat?.id) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

// ---- new chat ----------------------------------------------------------------------------

function fillRoots() {
  const select = $("new-root");
  replace(select, (state.config.roots || []).map((root, i) => h("option", { value: root, selected: i === 0, text: root })));
}

async function onCreateChat(ev) {
  ev.preventDefault();
  const root = $("new-root").value;
  const sub = $("new-subdir").value.trim().replace(/^\/+/, "");
  const body = {
    workspace: sub ? `${root.replace(/\/+$/, "")}/${sub}` : root,
    options: {
      trust: $("opt-trust").checked,
      force: $("opt-force").checked,
      approve_mcps: $("opt-mcps").checked,
      stream_partial_output: $("opt-partial").checked,
    },
  };
  const model = $("new-model").value.trim();
  if (model) body.model = model;
  const title = $("new-title-input").value.trim();
  if (title) body.title = title;
  try {
    const chat = await api.createChat(body);
    $("new-form").reset();
    await refreshChats();
    location.hash = `#/chat/${encodeURIComponent(chat.id)}`;
  } catch (err) {
    showAlert(`Could not create the chat: ${err.message}`);
  }
}

// ---- one chat ----------------------------------------------------------------------------

function closeChat() {
  if (state.stream) state.stream.stop();
  state.stream = null;
  state.chat = null;
  state.timeline = null;
  setConn("");
}

async function openChat(id) {
  if (state.chat?.id === id && state.stream) return show("chat-view");
  closeChat();
  state.opening = id;
  let chat;
  try {
    chat = await api.getChat(id);
    if (state.opening !== id) return; // another chat was opened meanwhile
  } catch (err) {
    if (state.opening !== id) return;
    if (err.status === 401) return showLogin();
    show("welcome-view");
    return showAlert(err.status === 404 ? "That chat does not exist on this server." : err.message);
  }
  state.chat = chat;
  show("chat-view");
  $("chat-title").textContent = chat.title || "Untitled chat";
  const opts = Object.entries(chat.options || {}).filter(([, on]) => on).map(([k]) => k).join(", ");
  $("chat-meta").textContent = [chat.workspace, chat.model ? `model ${chat.model}` : "default model", opts]
    .filter(Boolean).join(" · ");
  state.timeline = new Timeline($("timeline"), $("result-bar"), { onRunChange, workspace: chat.workspace });
  updateRunControls();
  markCurrentInList();
  state.stream = new ChatStream(id, {
    onRecord: (rec) => state.timeline.apply(rec),
    onState: setConn,
    onTrouble: checkAuth,
  }).start();
  $("prompt").focus();
}

function onRunChange() {
  updateRunControls();
  const run = state.timeline.latestRun;
  const chat = state.chats.find((c) => c.id === state.chat?.id);
  if (chat && run && chat.status !== run.status) {
    chat.status = run.status;
    chat.updated_ms = Date.now();
    renderChats();
  }
}

function updateRunControls() {
  const active = state.timeline?.activeRun;
  $("stop-button").hidden = !active;
  $("stop-button").disabled = false;
  $("run-state").textContent = active ? (active.status === "queued" ? "Queued: waiting for a free slot…" : "The agent is working…") : "";
  document.body.classList.toggle("running", Boolean(active));
}

const CONN_TEXT = {
  connecting: "Connecting…",
  replaying: "Catching up…",
  live: "Live",
  reconnecting: "Reconnecting…",
  closed: "",
};

function setConn(status, detail) {
  const el = $("conn");
  el.dataset.state = status || "";
  if (status === "error") el.textContent = `Stream error: ${detail}`;
  else el.textContent = CONN_TEXT[status] ?? "";
  if (status === "reconnecting" && detail) el.title = detail;
}

/** Repeated connection failures: a restarted server with a new token needs a new sign-in. */
async function checkAuth() {
  try {
    await api.health();
  } catch (err) {
    if (err.status === 401) showLogin();
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

async function sendPrompt() {
  const input = $("prompt");
  const prompt = input.value;
  if (!prompt.trim() || !state.chat || state.busy) return;
  state.busy = true;
  try {
    // A run that is just ending (its process exiting after the answer, or its last records
    // still being replayed) gets a moment before the prompt is refused.
    if (!(await settled(() => !state.timeline?.activeRun, 3000))) {
      return showAlert("The agent is still working on the previous prompt: wait for it, or press Stop (Esc).");
    }
    await api.startRun(state.chat.id, prompt);
    input.value = "";
    showAlert("");
  } catch (err) {
    if (err.status === 401) return showLogin();
    showAlert(`The prompt was not sent: ${err.message}`);
  } finally {
    state.busy = false;
  }
}

async function stopRun() {
  const run = state.timeline?.activeRun;
  if (!run) return;
  $("stop-button").disabled = true;
  $("run-state").textContent = "Stopping…";
  try {
    await api.cancelRun(run.id);
  } catch (err) {
    if (err.status !== 409) showAlert(`Could not stop the run: ${err.message}`);
  } finally {
    $("stop-button").disabled = false;
    $("prompt").focus(); // the Stop button disappears with the run: keep the focus useful
  }
}

boot();
