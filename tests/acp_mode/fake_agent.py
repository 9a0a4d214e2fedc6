"""A small ACP agent for the tests: real-shaped frames from ACP.md, scripted by the prompt.

Run as ``python fake_agent.py [flags…] acp``. Environment:

* ``FAKE_ACP_DIR``: where sessions are kept (one JSON file each: the prompts so far), so a
  second process can ``session/load`` them;
* ``FAKE_ACP_LOG``: every line received is appended there (the tests validate the frames);
* ``FAKE_ACP_NO_CANCEL=1``: ``session/cancel`` is ignored (a build without cancel);
* ``FAKE_ACP_NO_IMAGE=1``: no ``promptCapabilities.image``;
* ``FAKE_ACP_HANG=METHOD`` (``initialize``, ``session/new``…): that request is never answered;
* ``FAKE_ACP_HISTORY_DELAY=S``: a turn reads the session's file ``S/2`` seconds after it starts,
  and takes ``S`` seconds to write its prompt there as it ends (so a turn that starts as the
  previous one ends reads while that one writes).
* ``FAKE_ACP_CANCEL_LAG=S``: a cancelled ``slow`` turn goes on a while before it answers
  ``cancelled``: until the session's next ``session/prompt`` arrives (at most ``S`` seconds),
  then it says `` (stopped late)`` (an update written after the cancel).
* ``FAKE_ACP_CANCEL_ASKS=1``: a cancelled ``slow`` turn asks permission to run ``rm -rf build``
  before it answers ``cancelled``, and says the answer (a build still finishing a step).
* ``FAKE_ACP_CANCEL_ERROR=1``: a cancelled ``slow`` turn's prompt is answered with a JSON-RPC
  error (``-32603``, "Request cancelled"), not ``stopReason: cancelled``.

What a prompt does is chosen by its first word: ``say TEXT``, ``run CMD`` (a shell call that
asks permission), ``edit PATH`` (a new file, Cursor's malformed diff), ``mcp``, ``ask``,
``plan``, ``todos``, ``flood N`` (N permission requests at once), ``unknown`` (an agent
request no client knows), ``unreadable deep`` / ``unreadable N`` (a permission request nested
too deeply / padded with N bytes, says the error code of its answer), ``slow`` (waits for a
cancel), ``crash`` (exits mid-turn), ``history`` (the earlier prompts of the session).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
import uuid

LOCK = threading.Lock()
WAITING: dict[int, dict[str, object]] = {}
EVENTS: dict[int, threading.Event] = {}
CANCELS: dict[str, threading.Event] = {}
PROMPTED: dict[str, threading.Event] = {}  # set when the session's next prompt arrives
NEXT_ID = [0]
STATE = os.environ.get("FAKE_ACP_DIR", ".")
LOG = os.environ.get("FAKE_ACP_LOG")
LIVE: set[str] = set()
HISTORY = threading.Lock()  # a session's file is read, added to and written by one turn at a time
BACKGROUND: list[threading.Thread] = []


def send(obj: dict[str, object]) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def update(sid: str, upd: dict[str, object]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": sid, "update": upd}})


def ask(method: str, params: dict[str, object]) -> dict[str, object]:
    with LOCK:
        rid = NEXT_ID[0]
        NEXT_ID[0] += 1
        event = EVENTS[rid] = threading.Event()
        if LOG:
            with open(LOG + ".sent", "a") as f:
                f.write(json.dumps({"id": rid, "method": method}) + "\n")
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    event.wait()
    return WAITING.pop(rid)


def chunk(sid: str, text: str, kind: str = "agent_message_chunk") -> None:
    update(sid, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})


def history_path(sid: str) -> str:
    return os.path.join(STATE, f"{sid}.json")


def load_history(sid: str) -> list[str] | None:
    try:
        with open(history_path(sid)) as f:
            return list(json.load(f))
    except OSError:
        return None


def save_history(sid: str, prompts: list[str], delay: float = 0.0) -> None:
    """Written whole (a temporary file, then renamed): a turn starting meanwhile, or another
    process's ``session/load``, reads the old list or the new one, never a truncated file."""
    path = history_path(sid)
    tmp = f"{path}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as f:
        time.sleep(delay)
        json.dump(prompts, f)
    os.replace(tmp, path)


def add_history(sid: str, prompt: str) -> None:
    """Append ``prompt`` to the session's prompts (two turns of a session may end together)."""
    with HISTORY:
        save_history(sid, [*(load_history(sid) or []), prompt], history_delay())


def history_delay() -> float:
    return float(os.environ.get("FAKE_ACP_HISTORY_DELAY") or 0)


PERMISSION_OPTIONS = [
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Allow always", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
]


def permission(sid: str, call: dict[str, object]) -> str:
    answer = ask("session/request_permission", {"sessionId": sid, "toolCall": call,
                                                "options": PERMISSION_OPTIONS})
    outcome = (answer.get("result") or {}).get("outcome", {})  # type: ignore[union-attr]
    if outcome.get("outcome") == "selected":
        return str(outcome.get("optionId"))
    return "cancelled"


def turn(rid: int, sid: str, text: str, cancel: threading.Event,
         next_prompt: threading.Event) -> None:
    time.sleep(history_delay() / 2)
    prompts = load_history(sid) or []
    word, _, rest = text.partition(" ")
    stop = "end_turn"
    if len(prompts) == 0:
        update(sid, {"sessionUpdate": "session_info_update", "title": text[:20]})
    if word == "say":
        chunk(sid, "Thinking about it", "agent_thought_chunk")
        for part in rest.split(" "):
            chunk(sid, part + " ")
    elif word == "history":
        for thread in BACKGROUND:
            thread.join()
        prompts = load_history(sid) or []
        chunk(sid, "earlier: " + " | ".join(prompts))
    elif word == "background":
        def late() -> None:  # a background task asks after the turn ended
            time.sleep(0.2)
            if rest == "plan":  # ``background plan``: it proposes a plan
                answer = ask("cursor/create_plan", {"toolCallId": "bg-plan", "name": "Deploy",
                                                    "plan": "1. make deploy", "todos": []})
                choice = str(answer.get("result", {}).get("outcome", {}).get("outcome"))  # type: ignore[union-attr]
            else:
                choice = permission(sid, {"toolCallId": "bg-1", "title": "`make deploy`",
                                          "kind": "execute", "status": "pending"})
            add_history(sid, f"background got {choice}")

        thread = threading.Thread(target=late, daemon=True)
        BACKGROUND.append(thread)
        thread.start()
        chunk(sid, "started in the background")
    elif word == "flood":  # many permission requests at once, each awaited in its thread
        choices: list[str] = []

        def one(i: int) -> None:
            choices.append(permission(sid, {"toolCallId": f"flood-{i}", "title": "`ls`",
                                            "kind": "execute", "status": "pending"}))

        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(int(rest))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        chunk(sid, f"{choices.count('cancelled')} cancelled, {choices.count('allow-once')} allowed")
    elif word == "run":
        cid = f"call-{uuid.uuid4()}-0\nfc_{uuid.uuid4().hex}_0"
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": cid, "title": "Terminal",
                     "kind": "execute", "status": "pending", "rawInput": {}})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": cid,
                     "title": f"`{rest}`", "rawInput": {"command": rest}})
        choice = permission(sid, {"toolCallId": cid, "title": f"`{rest}`", "kind": "execute",
                                  "status": "pending", "content": [{"type": "content", "content": {
                                      "type": "text", "text": f"Not in allowlist: {rest.split()[0]}"}}]})
        if choice.startswith("allow"):
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": cid,
                         "status": "in_progress"})
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": cid,
                         "status": "completed",
                         "rawOutput": {"exitCode": 0, "stdout": f"ran {rest}\n", "stderr": ""}})
            chunk(sid, f"I ran {rest}.")
        else:
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": cid,
                         "status": "completed"})
            chunk(sid, f"{rest} was not allowed ({choice}).")
    elif word == "edit":
        cid = "call-edit-1"
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": cid, "title": "Edit File",
                     "kind": "edit", "status": "pending", "rawInput": {}})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": cid, "status": "completed",
                     "content": [{"type": "diff", "path": rest, "oldText": "-- /dev/null",
                                  "newText": f"++ b/{rest}\nprint('hi')\n"}]})
        chunk(sid, "Edited.")
    elif word == "mcp":
        cid = "call-mcp-1"
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": cid, "title": "MCP: add",
                     "kind": "other", "status": "pending", "rawInput": {}})
        choice = permission(sid, {"toolCallId": cid, "title": "calc-add: add", "kind": "other",
                                  "status": "pending", "content": [{"type": "content", "content": {
                                      "type": "text", "text": '```json\n{"a": 1}\n```'}}]})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": cid, "status": "completed",
                     "rawOutput": {"success": True}})
        chunk(sid, f"mcp {choice}")
    elif word == "askfallback":
        fallback = ask("session/request_permission", {
            "sessionId": sid, "toolCall": {"toolCallId": "call-q", "title": "Which approach?",
                                           "kind": "other", "status": "pending"},
            "options": [{"optionId": "small", "name": "Small change", "kind": "allow_once"},
                        {"optionId": "full", "name": "Full rewrite", "kind": "allow_once"},
                        {"optionId": "__ask_question_skip__", "name": "Skip",
                         "kind": "reject_once"}]})
        choice = fallback.get("result", {}).get("outcome", {}).get("optionId")  # type: ignore[union-attr]
        chunk(sid, f"fallback answer: {choice}")
    elif word == "ask":
        question = {"id": "q1", "prompt": "Which approach?", "allowMultiple": False,
                    "options": [{"id": "small", "label": "Small change"},
                                {"id": "full", "label": "Full rewrite"}]}
        answer = ask("cursor/ask_question", {"toolCallId": "call-q", "title": "Choose an approach",
                                             "questions": [question]})
        if "error" in answer:
            fallback = ask("session/request_permission", {
                "sessionId": sid, "toolCall": {"toolCallId": "call-q", "title": "Which approach?",
                                               "kind": "other", "status": "pending"},
                "options": [{"optionId": "small", "name": "Small change", "kind": "allow_once"},
                            {"optionId": "full", "name": "Full rewrite", "kind": "allow_once"},
                            {"optionId": "__ask_question_skip__", "name": "Skip",
                             "kind": "reject_once"}]})
            choice = fallback.get("result", {}).get("outcome", {}).get("optionId")  # type: ignore[union-attr]
            chunk(sid, f"fallback answer: {choice}")
        else:
            chunk(sid, "answer: " + json.dumps(answer["result"]["outcome"]))  # type: ignore[index]
    elif word == "plan":
        answer = ask("cursor/create_plan", {"toolCallId": "call-plan", "name": "Rename",
                                            "overview": "o", "plan": "# Rename\n\n1. do it",
                                            "todos": [{"id": "t1", "content": "do it",
                                                       "status": "pending"}],
                                            "isProject": False, "phases": []})
        chunk(sid, "plan: " + str(answer.get("result", {}).get("outcome", {}).get("outcome")))  # type: ignore[union-attr]
    elif word == "todos":
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": "call-todo", "title": "",
                     "kind": "other", "status": "pending", "rawInput": {"_toolName": "updateTodos"}})
        ask("cursor/update_todos", {"toolCallId": "call-todo", "merge": True,
                                    "todos": [{"id": "1", "content": "Implement",
                                               "status": "in_progress"}]})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call-todo",
                     "status": "completed"})
        ask("cursor/task", {"toolCallId": "call-task", "description": "Explore",
                            "prompt": "look around", "subagentType": "explore"})
        chunk(sid, "todos done")
    elif word == "unknown":
        answer = ask("cursor/brand_new_thing", {"sessionId": sid})
        chunk(sid, "unknown answered " + json.dumps(answer.get("error", {}).get("code")))  # type: ignore[union-attr]
    elif word == "slow":
        chunk(sid, "working")
        if cancel.wait(60):
            stop = "cancelled"
            lag = float(os.environ.get("FAKE_ACP_CANCEL_LAG") or 0)
            if lag:
                next_prompt.wait(lag)
                chunk(sid, " (stopped late)")
            if os.environ.get("FAKE_ACP_CANCEL_ASKS") == "1":
                choice = permission(sid, {"toolCallId": "call-late", "title": "`rm -rf build`",
                                          "kind": "execute", "status": "pending",
                                          "rawInput": {"command": "rm -rf build"}})
                chunk(sid, f" rm -rf build after the cancel: {choice}")
            if os.environ.get("FAKE_ACP_CANCEL_ERROR") == "1":
                raise CancelledByError
    elif word == "crash":
        chunk(sid, "about to crash")
        sys.stderr.write("fatal: the fake agent crashed\n")
        sys.stderr.flush()
        os._exit(3)
    elif word == "unreadable":  # a permission request the client cannot decode: too deep or too long
        args: object = {"a": 1}
        if rest == "deep":
            for _ in range(300):
                args = {"a": args}
        else:
            args = {"pad": "x" * int(rest)}
        answer = ask("session/request_permission", {
            "sessionId": sid, "options": PERMISSION_OPTIONS,
            "toolCall": {"toolCallId": "call-odd", "title": "odd", "kind": "other",
                         "rawInput": args}})
        chunk(sid, "answered " + json.dumps(answer.get("error", {}).get("code")))  # type: ignore[union-attr]
    elif word == "noise":
        with LOCK:
            sys.stdout.write("\x1b[33mwarning: something odd\x1b[0m\n")
            sys.stdout.flush()
        chunk(sid, "ok")
    else:
        chunk(sid, "ok")
    if cancel.is_set():
        stop = "cancelled"
    add_history(sid, text)
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": stop}})


class CancelledByError(Exception):
    """``FAKE_ACP_CANCEL_ERROR``: the cancelled prompt is answered with an error."""


def run_turn(rid: int, sid: str, text: str, cancel: threading.Event,
             next_prompt: threading.Event) -> None:
    """A turn, whose prompt is answered even if the fake fails (an error, not a silence that
    the client can only wait out)."""
    try:
        turn(rid, sid, text, cancel, next_prompt)
    except CancelledByError:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "Internal error",
                                                    "data": {"details": "Request cancelled"}}})
    except Exception as exc:
        traceback.print_exc()
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "Internal error",
                                                    "data": {"details": f"fake agent: {exc!r}"}}})


def setup_result() -> dict[str, object]:
    return {"modes": {"currentModeId": "agent", "availableModes": [
        {"id": "agent", "name": "Agent"}, {"id": "plan", "name": "Plan"}, {"id": "ask", "name": "Ask"}]},
        "models": {"currentModelId": "default[]", "availableModels": [
            {"modelId": "default[]", "name": "Auto"}]},
        "configOptions": [{"id": "mode", "category": "mode", "type": "select", "currentValue": "agent",
                           "options": []}]}


def handle(msg: dict[str, object]) -> None:
    method = msg.get("method")
    rid = msg.get("id")
    params = msg.get("params") or {}
    assert isinstance(params, dict)
    if method is None:  # a response to one of our requests
        assert isinstance(rid, int)
        WAITING[rid] = msg
        EVENTS.pop(rid).set()
        return
    if method is not None and method == os.environ.get("FAKE_ACP_HANG"):
        return  # a stuck agent: this request is never answered
    if method == "initialize" and os.environ.get("FAKE_ACP_INIT_ERROR"):
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "Internal error",
                                                    "data": {"details": "no can do"}}})
    elif method == "initialize":
        image = os.environ.get("FAKE_ACP_NO_IMAGE") != "1"
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": 1, "agentCapabilities": {
                "loadSession": True, "mcpCapabilities": {"http": True, "sse": True},
                "promptCapabilities": {"audio": False, "embeddedContext": False, "image": image},
                "sessionCapabilities": {"list": {}}},
            "authMethods": [{"id": "cursor_login", "name": "Cursor Login"}]}})
    elif method in ("session/new", "session/prompt") and os.environ.get("FAKE_ACP_LOGGED_OUT"):
        send({"jsonrpc": "2.0", "id": rid, "error": {
            "code": -32000, "message": "Authentication required", "data": {"message": (
                "Authentication required. Please run 'agent login' first, then call "
                "authenticate() with methodId 'cursor_login'.")}}})
    elif method == "session/new":
        sid = str(uuid.uuid4())
        save_history(sid, [])
        LIVE.add(sid)
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid, **setup_result()}})
    elif method == "session/load":
        sid = str(params.get("sessionId"))
        prompts = load_history(sid)
        if prompts is None:
            send({"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32602, "message": "Invalid params",
                "data": {"message": f'Session "{sid}" not found'}}})
            return
        for p in prompts:
            update(sid, {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": p}})
            chunk(sid, "(replayed)")
        LIVE.add(sid)
        send({"jsonrpc": "2.0", "id": rid, "result": setup_result()})
    elif method == "session/prompt":
        sid = str(params.get("sessionId"))
        if sid not in LIVE:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid params",
                                                        "data": {"message": "Session not loaded"}}})
            return
        blocks = params.get("prompt") or []
        text = " ".join(b.get("text", "") for b in blocks if b.get("type") == "text")  # type: ignore[union-attr]
        images = [b for b in blocks if b.get("type") == "image"]  # type: ignore[union-attr]
        if images:
            text = f"say got {len(images)} image(s) of {images[0].get('mimeType')}"
        assert isinstance(rid, int)
        # the turn's cancel is known before the next line is read: a session/cancel right
        # behind the prompt finds it even if the turn's thread has not run yet
        cancel = CANCELS[sid] = threading.Event()
        previous = PROMPTED.get(sid)
        if previous is not None:
            previous.set()
        prompted = PROMPTED[sid] = threading.Event()
        threading.Thread(target=run_turn, args=(rid, sid, text, cancel, prompted),
                         daemon=True).start()
    elif method == "session/cancel":
        if rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
            return
        if os.environ.get("FAKE_ACP_NO_CANCEL") == "1":
            return
        if os.environ.get("FAKE_ACP_NO_CANCEL") == "error":  # as reported of the 02.27 build
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "Method not found"}})
            return
        event = CANCELS.get(str(params.get("sessionId")))
        if event is not None:
            event.set()
    elif method == "session/set_mode":
        sid = str(params.get("sessionId"))
        mode = params.get("modeId")
        if mode not in ("agent", "plan", "ask"):
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "Internal error",
                                                        "data": {"details": f"Invalid mode ID: {mode}"}}})
            return
        update(sid, {"sessionUpdate": "current_mode_update", "currentModeId": mode})
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "session/set_config_option":
        send({"jsonrpc": "2.0", "id": rid, "result": {"configOptions": [
            {"id": params.get("configId"), "currentValue": params.get("value")}]}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})


def main() -> None:
    assert sys.argv[-1] == "acp", sys.argv
    print("Cursor Agent (fake) starting…", flush=True)  # noise on stdout, as some builds
    for line in sys.stdin:
        if LOG:
            with open(LOG, "a") as f:
                f.write(line if line.endswith("\n") else line + "\n")
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        handle(msg)
    time.sleep(0.05)


if __name__ == "__main__":
    main()
