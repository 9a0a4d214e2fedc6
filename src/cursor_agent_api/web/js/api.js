// The REST API, as the page uses it. Authentication is the HttpOnly cookie the
// server set when the token URL was opened (or after the login form): the page
// never sees or stores the token itself. Whatever a request is, a 401 outside the sign-in
// requests means one thing, decided here: the session ended (SessionEnded, whenSessionEnds);
// one asked before the page was last signed in again (sessionAgain) tells of an older session:
// the request is asked once more, under the session the page has now (see call).

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

/** A request answered 401, other than the sign-in requests' own (where 401 means a wrong
 * token, not signed in yet, or already signed out): the session the page signed in with has
 * ended (signed out in another tab, expired, the server restarted with a new token). */
export class SessionEnded extends ApiError {}

let onSessionEnded = () => {};

/** `handler()` is told each time a request finds the session ended, before the request's
 * caller hears of it (its SessionEnded error): the page shows its sign-in form (app.js). */
export function whenSessionEnds(handler) {
  onSessionEnded = handler;
}

let signedIn = 0; // the page's sign-ins again (signedInAgain): a 401 to a request asked before the last is old
let signedOut = 0; // the page's Sign outs (signedOutHere): a request asked before one is dropped

/** The page is signed in again (in another tab: app.js's signedInAgain): a 401 to a request
 * asked before now tells of the session that ended then, not of this one: the request is asked
 * again (see call), and the page stays signed in. */
export function sessionAgain() {
  signedIn += 1;
}

/** Sign out, pressed in this page or in another tab of it (app.js's dropKept, for both): a
 * request on its way now is dropped, whatever its answer (see call); so is a prompt on its way
 * (app.js compares signOuts() before and after). The page's one count of them. */
export function signedOutHere() {
  signedOut += 1;
}

/** How many Sign outs (signedOutHere) the page has heard of so far. */
export function signOuts() {
  return signedOut;
}

const SIGN_IN = { signIn: true }; // a sign-in request: its 401 is its own answer

/** `path`'s answer: its JSON (null for 204), or its text (`text`). Fails with an ApiError
 * (status 0: the server cannot be reached), a SessionEnded for a 401 unless `signIn`.
 *
 * A 401 to a request asked before the page was last signed in again (sessionAgain: another
 * tab signed in meanwhile) tells of the session that ended then: the server did nothing, and
 * the request is asked once more, now, under the session the page has (a list refresh, a
 * prompt, a new chat, Save options, Delete, Stop: what was asked happens, as if the answer had
 * been slow); its own 401, if any, is the one that counts. Unless a Sign out was pressed since
 * it was asked, in this page or in another tab of it (signedOutHere): Sign out drops what was on its way (a SessionEnded, and nothing
 * said: the page's callers say nothing of one). */
async function call(method, path, body, { signIn = false, text = false } = {}) {
  const asked = signedIn;
  const outs = signedOut;
  const init = { method, headers: { Accept: text ? "*/*" : "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, "the server cannot be reached (is `cursor-agent-api serve` running?)");
  }
  if (response.ok && text) return response.text();
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const detail = data && typeof data.detail === "string" ? data.detail : `HTTP ${response.status}`;
    if (response.status !== 401 || signIn) throw new ApiError(response.status, detail);
    if (outs !== signedOut) throw new SessionEnded(401, detail); // (Sign out pressed since: dropped)
    if (asked !== signedIn) return call(method, path, body, { text }); // (an older session's 401)
    onSessionEnded();
    throw new SessionEnded(401, detail);
  }
  return data;
}

const enc = encodeURIComponent;

export const api = {
  config: () => call("GET", "/api/config", undefined, SIGN_IN), // (401: not signed in yet)
  health: () => call("GET", "/api/health"),
  login: (token) => call("POST", "/api/auth/login", { token }, SIGN_IN), // (401: a wrong token)
  logout: async () => { // (401: already signed out)
    try {
      await call("POST", "/api/auth/logout", undefined, SIGN_IN);
    } catch (err) {
      if (err.status !== 401) throw err;
    } // (the page's Sign out then counts: app.js's dropKept calls signedOutHere)
  },
  listChats: (limit, offset = 0) => call("GET", `/api/chats?limit=${limit}&offset=${offset}`),
  getChat: (id) => call("GET", `/api/chats/${enc(id)}`),
  // a page of the chat's turns: the newest `limit` runs before run `beforeRun` (if any)
  turns: (id, limit, beforeRun = null) => call("GET",
    `/api/chats/${enc(id)}/turns?limit=${limit}${beforeRun ? `&before_run=${enc(beforeRun)}` : ""}`),
  updateChat: (id, body) => call("PATCH", `/api/chats/${enc(id)}`, body),
  deleteChat: (id) => call("DELETE", `/api/chats/${enc(id)}`),
  createChat: (body) => call("POST", "/api/chats", body),
  startRun: (chatId, prompt) => call("POST", `/api/chats/${enc(chatId)}/runs`, { prompt }),
  cancelRun: (runId) => call("POST", `/api/runs/${enc(runId)}/cancel`),
  answerRequest: (runId, requestId, body) => call("POST", `/api/runs/${enc(runId)}/requests/${enc(requestId)}`, body),
  // a value the server cut, whole, as text (cut.js: `url` is the server's own address for it)
  wholeValue: (url) => call("GET", url, undefined, { text: true }),
};
