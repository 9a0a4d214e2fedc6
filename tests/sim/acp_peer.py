"""A raw JSON-RPC client for ``cursor-agent-sim acp`` in the tests, written apart from the
project's ACP codec on purpose, and the validation of every standard frame the simulator writes
against the PyPI ``agent-client-protocol`` schema models (only its models: its router never
forwards ``cursor/*`` methods).

A frame validates when its model accepts it **and** dumping the model gives the frame back:
the models salvage or drop what they do not know, so a plain ``model_validate`` would let a
misspelt field through.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from acp import schema
from pydantic import BaseModel

from .conftest import SIM, Sim, kill_group

WAIT = 60.0

RESPONSES: dict[str, type[BaseModel]] = {
    "initialize": schema.InitializeResponse,
    "authenticate": schema.AuthenticateResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/list": schema.ListSessionsResponse,
    "session/prompt": schema.PromptResponse,
    "session/set_mode": schema.SetSessionModeResponse,
    "session/set_config_option": schema.SetSessionConfigOptionResponse,
}
"""The result model of each standard method the tests call."""

AGENT_REQUESTS: dict[str, type[BaseModel]] = {"session/request_permission": schema.RequestPermissionRequest}
NOTIFICATIONS: dict[str, type[BaseModel]] = {"session/update": schema.SessionNotification}


class FrameError(AssertionError):
    """A frame the schema does not accept as it is."""


def _same(model: type[BaseModel], obj: Any) -> None:
    try:
        parsed = model.model_validate(obj)
    except Exception as e:
        raise FrameError(f"{model.__name__} rejects {obj!r}: {e}") from None
    back = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if back != obj:
        raise FrameError(f"{model.__name__} does not round-trip:\n sent {obj!r}\n back {back!r}")


def validate(frame: dict[str, Any], method_of: Callable[[Any], str | None]) -> bool:
    """Check one frame the simulator wrote; True when a schema model covered it (False for
    Cursor's own ``cursor/*`` requests and for answers to non-standard methods, whose envelope
    alone is checked). ``method_of(id)`` names the client request an answer belongs to."""
    if frame.get("jsonrpc") != "2.0":
        raise FrameError(f"not JSON-RPC 2.0: {frame!r}")
    if "method" in frame:
        method = frame["method"]
        table = AGENT_REQUESTS if "id" in frame else NOTIFICATIONS
        schema.AgentRequest.model_validate(
            frame
        ) if "id" in frame else schema.AgentNotification.model_validate(frame)
        model = table.get(method)
        if model is None:
            if not method.startswith("cursor/"):
                raise FrameError(f"an unexpected method from the agent: {method}")
            return False
        _same(model, frame.get("params"))
        return True
    if "error" in frame:
        _same(schema.AgentErrorMessage, {"id": frame["id"], "error": frame["error"]})
        if set(frame) != {"jsonrpc", "id", "error"}:
            raise FrameError(f"bad error envelope: {frame!r}")
        return True
    if set(frame) != {"jsonrpc", "id", "result"}:
        raise FrameError(f"bad response envelope: {frame!r}")
    method = method_of(frame["id"]) or ""
    model = RESPONSES.get(method)
    if model is None:
        return False
    result = frame["result"]
    if method in ("session/new", "session/load") and isinstance(result, dict) and "models" in result:
        result = {k: v for k, v in result.items() if k != "models"}
        _check_models(frame["result"]["models"])
    _same(model, result)
    return True


def _check_models(models: Any) -> None:
    """Cursor's ``models`` (ACP's unstable session model state, which the package's schema does
    not have): ``currentModelId`` and ``availableModels`` of ``{modelId, name}``, checked by hand."""
    ok = (
        isinstance(models, dict)
        and set(models) == {"currentModelId", "availableModels"}
        and isinstance(models["currentModelId"], str)
        and isinstance(models["availableModels"], list)
        and all(
            isinstance(m, dict)
            and set(m) == {"modelId", "name"}
            and all(isinstance(v, str) for v in m.values())
            for m in models["availableModels"]
        )
        and models["currentModelId"] in [m["modelId"] for m in models["availableModels"]]
    )
    if not ok:
        raise FrameError(f"bad models block: {models!r}")


Handler = Callable[[dict[str, Any]], dict[str, Any]]
"""Answers an agent request: returns ``{"result": …}`` or ``{"error": …}``."""


def method_not_found(request: dict[str, Any]) -> dict[str, Any]:
    return {"error": {"code": -32601, "message": "Method not found"}}


def allow_once(request: dict[str, Any]) -> dict[str, Any]:
    return {"result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}


def reject_once(request: dict[str, Any]) -> dict[str, Any]:
    return {"result": {"outcome": {"outcome": "selected", "optionId": "reject-once"}}}


@dataclass
class Peer:
    """One ``cursor-agent-sim acp`` process and the client's side of its pipe."""

    proc: subprocess.Popen[bytes]
    frames: list[dict[str, Any]] = field(default_factory=list)
    noise: list[bytes] = field(default_factory=list)
    validated: int = 0
    sent: dict[Any, str] = field(default_factory=dict)
    handlers: dict[str, Handler] = field(default_factory=dict)
    _next: int = 0
    _queue: queue.Queue[dict[str, Any] | None] = field(default_factory=queue.Queue)

    @classmethod
    def start(cls, sim: Sim, *args: str, env: dict[str, str] | None = None) -> Peer:
        proc = subprocess.Popen(
            [SIM, *args, "acp"],
            cwd=sim.workspace,
            env=sim.env(**(env or {})),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        sim.procs.append(proc)
        peer = cls(proc)
        threading.Thread(target=peer._read, daemon=True).start()
        return peer

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                self.noise.append(line)
                continue
            self._queue.put(obj)
        self._queue.put(None)

    # ---- sending --------------------------------------------------------------------------------

    def write(self, obj: Any) -> None:
        assert self.proc.stdin is not None
        data = obj if isinstance(obj, bytes) else orjson.dumps(obj) + b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any = None) -> int:
        request_id = self._next
        self._next += 1
        self.sent[request_id] = method
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        self.write(frame)
        return request_id

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def answer(self, request: dict[str, Any], reply: dict[str, Any]) -> None:
        self.write({"jsonrpc": "2.0", "id": request["id"], **reply})

    # ---- receiving ------------------------------------------------------------------------------

    def next(self, wait: float = WAIT) -> dict[str, Any] | None:
        """The next frame (validated), ``None`` when stdout ended."""
        try:
            frame = self._queue.get(timeout=wait)
        except queue.Empty:
            raise AssertionError(f"no frame within {wait} s; last frames: {self.frames[-3:]!r}") from None
        if frame is None:
            self._queue.put(None)
            return None
        self.frames.append(frame)
        if validate(frame, self.sent.get):
            self.validated += 1
        return frame

    def until(self, request_id: int, *, stop_on: str | None = None) -> dict[str, Any]:
        """Read until the answer to ``request_id`` (answering agent requests with
        :attr:`handlers`, else ``-32601``), or until an agent request ``stop_on`` (returned)."""
        while True:
            frame = self.next()
            if frame is None:
                raise AssertionError(f"stdout ended before the answer to {request_id}: {self.stderr()}")
            if "method" in frame and "id" in frame:
                if frame["method"] == stop_on:
                    return frame
                self.answer(frame, self.handlers.get(frame["method"], method_not_found)(frame))
                continue
            if "method" not in frame and frame.get("id") == request_id:
                return frame

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        """A request and its answer (the whole frame)."""
        return self.until(self.request(method, params))

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Every ``session/update`` payload received so far."""
        return [
            f["params"]["update"]
            for f in self.frames
            if f.get("method") == "session/update"
            and (session_id is None or f["params"]["sessionId"] == session_id)
        ]

    def stderr(self) -> str:
        return (
            "" if self.proc.stderr is None or self.proc.poll() is None else self.proc.stderr.read().decode()
        )

    def close(self) -> int | None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        kill_group(self.proc)
        return self.proc.returncode

    # ---- conveniences ---------------------------------------------------------------------------

    def init(self) -> dict[str, Any]:
        return self.call("initialize", {"protocolVersion": 1, "clientCapabilities": CLIENT_CAPS})["result"]  # type: ignore[no-any-return]

    def new_session(self, cwd: str | os.PathLike[str]) -> str:
        reply = self.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        assert "result" in reply, reply
        return str(reply["result"]["sessionId"])

    def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        return self.call(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )


CLIENT_CAPS = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}


def text_of(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)
