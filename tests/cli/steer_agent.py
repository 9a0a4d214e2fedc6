"""A scripted ``agent acp`` for the terminal-steering tests: each prompt plays the steps of
``$STEER_AGENT_STEPS`` (a JSON list), and the client's answers go to ``$STEER_AGENT_LOG``
(one JSON object per line: ``{"method": ..., "answer": ...}``).

Steps: ``["text", TEXT]`` (a message chunk), ``["wait_file", PATH]`` (go on once PATH exists),
``["exit_when_file", PATH]`` (from now on, exit with status 3 once PATH exists: a crash while
a request is open), ``["permission", COMMAND]`` (ask to run a shell command, wait for the
answer), ``["plan", PARAMS]`` (``cursor/create_plan``, wait for the answer).

Run as ``python steer_agent.py [flags…] acp`` (:func:`agent_binary` writes such a command).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

LOCK = threading.Lock()
ANSWERS: dict[int, Any] = {}
ARRIVED: dict[int, threading.Event] = {}
NEXT = [100]


def agent_binary(root: Path) -> Path:
    """An executable that runs this agent (for ``--agent-binary``)."""
    binary = root / "agent"
    binary.write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} \"$@\"\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    return binary


def send(obj: dict[str, Any]) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def log(entry: dict[str, Any]) -> None:
    path = os.environ.get("STEER_AGENT_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def ask(method: str, params: dict[str, Any]) -> Any:
    with LOCK:
        NEXT[0] += 1
        rid = NEXT[0]
        ARRIVED[rid] = threading.Event()
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    ARRIVED[rid].wait()
    answer = ANSWERS.pop(rid)
    log({"method": method, "answer": answer})
    return answer


def wait_file(path: str) -> None:
    for _ in range(600):
        if os.path.exists(path):
            return
        time.sleep(0.05)


def turn(rid: int, sid: str) -> None:
    def chunk(text: str) -> None:
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})

    for step, arg in json.loads(os.environ.get("STEER_AGENT_STEPS", "[]")):
        if step == "text":
            chunk(arg)
        elif step == "wait_file":
            wait_file(arg)
        elif step == "exit_when_file":
            threading.Thread(target=lambda p=arg: (wait_file(p), os._exit(3)), daemon=True).start()
        elif step == "permission":
            cid = f"call-{uuid.uuid4()}"
            ask("session/request_permission", {
                "sessionId": sid,
                "toolCall": {"toolCallId": cid, "title": f"`{arg}`", "kind": "execute",
                             "status": "pending", "rawInput": {"command": arg},
                             "content": [{"type": "content", "content": {
                                 "type": "text", "text": f"Not in allowlist: {arg.split()[0]}"}}]},
                "options": [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                            {"optionId": "allow-always", "name": "Allow always",
                             "kind": "allow_always"},
                            {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}]})
        elif step == "plan":
            ask("cursor/create_plan", {"toolCallId": "call-plan", **arg})
    chunk("done.")
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
            threading.Thread(target=turn, args=(rid, sid), daemon=True).start()
        elif rid is not None and method is not None and method != "session/cancel":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})


if __name__ == "__main__":
    main()
