// The REST API, as the page uses it. Authentication is the HttpOnly cookie the
// server set when the token URL was opened (or after the login form): the page
// never sees or stores the token itself.

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

async function call(method, path, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
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
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const detail = data && typeof data.detail === "string" ? data.detail : `HTTP ${response.status}`;
    throw new ApiError(response.status, detail);
  }
  return data;
}

const enc = encodeURIComponent;

export const api = {
  config: () => call("GET", "/api/config"),
  health: () => call("GET", "/api/health"),
  login: (token) => call("POST", "/api/auth/login", { token }),
  logout: () => call("POST", "/api/auth/logout"),
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
};
