"""A scripted ``agent acp`` for the request-card tests: a prompt ``STEPS:<json list>`` plays
its steps, one after another, and the client's answers go to ``$SCRIPTED_AGENT_LOG`` (one
JSON object per line: ``{"method": ..., "answer": ...}``).

Steps: ``["text", TEXT]`` (a message chunk), ``["permission", COMMAND_OR_TOOLCALL, OPTIONS?]``
(``session/request_permission``; the three usual options unless given), ``["question",
PARAMS]`` (``cursor/ask_question``), ``["plan", PARAMS]`` (``cursor/create_plan``). Each
request waits for its answer. Big values stay small in the prompt: ``{"$repeat": [TEXT, N]}``
is TEXT N times, ``{"$join": [PART, …]}`` the parts (made) joined, ``{"$each": TEMPLATE,
"n": N}`` a list of N copies of TEMPLATE with ``{i}`` in its strings replaced by 0, 1, ….

Run as ``python scripted_agent.py [flags…] acp`` (:func:`agent_binary` writes such a command).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

LOCK = threading.Lock()
ANSWERS: dict[int, Any] = {}
ARRIVED: dict[int, threading.Event] = {}
NEXT = [100]

THREE_OPTIONS = [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                 {"optionId": "allow-always", "name": "Allow always", "kind": "allow_always"},
                 {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}]


def agent_binary(root: Path) -> Path:
    """An executable that runs this agent (for ``--agent-binary``)."""
    binary = root / "agent"
    binary.write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} \"$@\"\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    return binary


def steps(*items: Any) -> str:
    """The prompt that plays ``items``."""
    return "STEPS:" + json.dumps(list(items))


def expand(value: Any, i: int | None = None) -> Any:
    """``value`` with its ``$repeat`` and ``$each`` made (see the module's text)."""
    if isinstance(value, dict):
        if "$repeat" in value:
            text, n = value["$repeat"]
            return str(text) * int(n)
        if "$join" in value:
            return "".join(expand(part, i) for part in value["$join"])
        if "$each" in value:
            return [expand(value["$each"], k) for k in range(int(value["n"]))]
        return {k: expand(v, i) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, i) for v in value]
    if isinstance(value, str) and i is not None:
        return value.replace("{i}", str(i))
    return value


def send(obj: dict[str, Any]) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def log(entry: dict[str, Any]) -> None:
    path = os.environ.get("SCRIPTED_AGENT_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def ask(method: str, params: dict[str, Any]) -> None:
    with LOCK:
        NEXT[0] += 1
        rid = NEXT[0]
        ARRIVED[rid] = threading.Event()
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    ARRIVED[rid].wait()
    log({"method": method, "answer": ANSWERS.pop(rid)})


def play(sid: str, step: list[Any]) -> None:
    kind, arg = step[0], expand(step[1])
    if kind == "text":
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": arg}}}})
    elif kind == "permission":
        tool = arg if isinstance(arg, dict) else {
            "toolCallId": f"call-{uuid.uuid4()}", "title": f"`{arg}`", "kind": "execute",
            "status": "pending", "rawInput": {"command": arg},
            "content": [{"type": "content", "content": {"type": "text", "text": "Not in allowlist"}}]}
        options = step[2] if len(step) > 2 else THREE_OPTIONS
        ask("session/request_permission", {"sessionId": sid, "toolCall": tool, "options": options})
    elif kind == "question":
        ask("cursor/ask_question", {"toolCallId": f"call-q-{uuid.uuid4()}", **arg})
    elif kind == "plan":
        ask("cursor/create_plan", {"toolCallId": f"call-p-{uuid.uuid4()}", **arg})


def turn(rid: int, sid: str, text: str) -> None:
    script = json.loads(text[len("STEPS:"):]) if text.startswith("STEPS:") else [["text", "hi"]]
    for step in script:
        play(sid, step)
    play(sid, ["text", "done."])
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


def main() -> None:
    sid = str(uuid.uuid4())
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, rid = msg.get("method"), msg.get("id")
        if method is None and rid in ARRIVED:
            ANSWERS[rid] = msg.get("result", msg.get("error"))
            ARRIVED[rid].set()
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": 1, "agentCapabilities": {"loadSession": True},
                "authMethods": []}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid}})
        elif method == "session/prompt":
            prompt = msg["params"].get("prompt") or []
            text = "".join(b.get("text", "") for b in prompt if isinstance(b, dict))
            threading.Thread(target=turn, args=(rid, sid, text), daemon=True).start()
        elif rid is not None and method is not None and method != "session/cancel":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})


if __name__ == "__main__":
    main()
