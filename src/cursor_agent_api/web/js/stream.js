// One chat's live stream over the server's WebSocket (protocol version 1, see
// docs/websocket.md): the stored records after our last seq (the seq of the state the page
// opened with, at first), then live; each with the changes it made to its run's turn.
//
// The page keeps the last seq it applied and reconnects by itself with
// after_seq = that seq, so it catches up with no gap; records at or below it
// are dropped, so none is applied twice. A record that skips a seq (which the
// server never sends) makes it reconnect and fill the gap from the store.

const PING_EVERY_MS = 15_000;
const SILENT_LIMIT_MS = 40_000;
const MAX_BACKOFF_MS = 5_000;

export class ChatStream {
  /**
   * chatId: the chat to follow; afterSeq: the seq the page's state is at (its records are
   * not sent again).
   * onRecord(record, changes): called once per record, in seq order, with what it changed in
   * its run's folded turn (the page applies them).
   * onState(state, detail): "connecting" | "replaying" | "live" | "reconnecting" | "closed" | "error".
   * onTrouble(): called after repeated failed connections (the page checks auth then).
   * onSignedOut(): the session the page signed in with has ended (close code 4401); the
   * stream does not reconnect.
   */
  constructor(chatId, { afterSeq, onRecord, onState, onTrouble, onSignedOut }) {
    this.chatId = chatId;
    this.onRecord = onRecord;
    this.onState = onState;
    this.onTrouble = onTrouble || (() => {});
    this.onSignedOut = onSignedOut || this.onTrouble;
    this.lastSeq = afterSeq || 0;
    this.ws = null;
    this.stopped = false;
    this.failures = 0;
    this.timer = null;
    this.pinger = null;
    this.lastMessageAt = 0;
    this.nonce = 0;
    this.everConnected = false;
    this.onOnline = () => this.reconnectNow();
    window.addEventListener("online", this.onOnline);
  }

  start() {
    this.connect();
    return this;
  }

  /** Close for good (the page moved to another chat). */
  stop() {
    this.stopped = true;
    window.removeEventListener("online", this.onOnline);
    clearTimeout(this.timer);
    clearInterval(this.pinger);
    if (this.ws) {
      this.ws.onclose = null;
      this.ws.close(1000, "bye");
      this.ws = null;
    }
    this.onState("closed");
  }

  /** Drop the current socket (if any) and connect again at once. */
  reconnectNow() {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.failures = 0;
    if (this.ws) this.drop(this.ws, "reconnect");
    else this.connect();
  }

  /** Close `ws` and connect again as soon as it has closed (no backoff). */
  drop(ws, reason) {
    ws.reconnectAtOnce = true;
    ws.close(4001, reason);
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const id = encodeURIComponent(this.chatId);
    return `${scheme}://${location.host}/api/chats/${id}/stream?after_seq=${this.lastSeq}`;
  }

  connect() {
    if (this.stopped) return;
    this.onState(this.everConnected ? "reconnecting" : "connecting");
    const ws = new WebSocket(this.url());
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.lastMessageAt = Date.now();
      clearInterval(this.pinger);
      this.pinger = setInterval(() => this.keepAlive(ws), PING_EVERY_MS);
    };
    ws.onmessage = (msg) => this.handle(ws, msg.data);
    ws.onerror = () => {}; // followed by onclose, where the decision is made
    ws.onclose = (ev) => {
      clearInterval(this.pinger);
      if (this.ws === ws) this.ws = null;
      if (this.stopped) return;
      if (ev.code === 4401) {
        this.onState("closed"); // (the sign-in form says why: not a stream error too)
        this.onSignedOut();
        return;
      }
      if (ev.code === 4404 || ev.code === 4400) {
        this.onState("error", this.lastError || "this chat does not exist on the server");
        return;
      }
      if (ws.reconnectAtOnce || ev.code === 4000) {
        this.connect(); // resync or our own reconnect: catch up at once
        return;
      }
      if (!opened) this.failures += 1;
      if (this.failures >= 3 && this.failures % 3 === 0) this.onTrouble();
      const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(this.failures, 5));
      this.onState("reconnecting", `reconnecting in ${Math.round(delay / 100) / 10} s`);
      this.timer = setTimeout(() => this.connect(), delay);
    };
  }

  keepAlive(ws) {
    if (ws !== this.ws) return;
    if (Date.now() - this.lastMessageAt > SILENT_LIMIT_MS) {
      this.drop(ws, "silent"); // a dead network: no close frame will ever come
      return;
    }
    this.nonce += 1;
    ws.send(JSON.stringify({ op: "ping", nonce: this.nonce }));
  }

  handle(ws, text) {
    if (ws !== this.ws) return;
    this.lastMessageAt = Date.now();
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    switch (msg.op) {
      case "hello":
        this.everConnected = true;
        this.onState("replaying", msg.last_seq > this.lastSeq ? "catching up" : "");
        break;
      case "live":
        this.failures = 0;
        this.onState("live");
        break;
      case "event":
        if (msg.seq <= this.lastSeq) return; // already applied: never twice
        if (msg.seq !== this.lastSeq + 1) {
          this.drop(ws, "gap"); // never expected; fill it from the store
          return;
        }
        this.lastSeq = msg.seq;
        this.onRecord(msg.event, msg.changes || []);
        break;
      case "resync":
        this.drop(ws, "resync"); // we fell behind: catch up from the store
        break;
      case "error":
        this.lastError = msg.detail; // shown if the server closes the socket over it
        break;
      default:
        break; // pong and anything newer
    }
  }
}
