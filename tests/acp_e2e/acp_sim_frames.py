"""Validation of the frames the client wrote to the simulator against the
``agent-client-protocol`` package's schema models (the rules of tests/acp_mode/test_acp_frames.py)."""

from __future__ import annotations

from typing import Any

from test_acp_frames import ANSWERS, NOTIFICATIONS, REQUESTS, _same


def validate(client_frames: list[dict[str, Any]], agent_frames: list[dict[str, Any]]) -> dict[str, int]:
    """Every standard frame the client wrote validates; the count of frames per kind.

    The agent's requests are numbered per process: an answer is matched to the latest
    request with its id written before it (the logs of several processes are appended)."""
    asked: dict[Any, list[str]] = {}
    for frame in agent_frames:
        if "method" in frame and "id" in frame:
            asked.setdefault(frame["id"], []).append(frame["method"])
    counts: dict[str, int] = {}
    answered: dict[Any, int] = {}
    for frame in client_frames:
        assert frame["jsonrpc"] == "2.0"
        method = frame.get("method")
        if method is not None:
            if "id" in frame:
                assert isinstance(frame["id"], int)
                model = REQUESTS[method]  # the client sends no request outside this table
            else:
                model = NOTIFICATIONS[method]
            _same(model, frame["params"])
            counts[method] = counts.get(method, 0) + 1
            continue
        n = answered.get(frame["id"], 0)
        answered[frame["id"]] = n + 1
        methods = asked.get(frame["id"]) or ["?"]
        what = methods[min(n, len(methods) - 1)]
        assert ("result" in frame) != ("error" in frame)
        if "error" in frame:
            assert isinstance(frame["error"]["code"], int) and frame["error"]["message"]
            key = f"{what}:error{frame['error']['code']}"
        elif what in ANSWERS:
            _same(ANSWERS[what], frame["result"])
            key = f"{what}:{frame['result']['outcome']['outcome']}"
        else:  # Cursor's own cursor/* methods: not in the ACP schema
            assert what.startswith("cursor/"), what
            assert isinstance(frame["result"], dict)
            key = f"{what}:result"
        counts[key] = counts.get(key, 0) + 1
    return counts
