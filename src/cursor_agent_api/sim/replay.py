"""Scripted replay: ``CURSOR_AGENT_SIM_SCRIPT=FILE`` streams a recording instead of the
built-in agent.

Every ``session_id`` of the recording (and any other occurrence of that id, such as a shell
call's ``conversationId``) is rewritten to the current chat, and the recorded ``cwd`` to the
current workspace. Without ``--stream-partial-output`` the recording's deltas are dropped, as
a real build would not have sent them. Non-JSON lines are replayed as they are. With
``CURSOR_AGENT_SIM_SPEED`` > 0 the gaps between ``timestamp_ms`` values are reproduced,
multiplied by the speed and each capped at :data:`~.settings.MAX_GAP_S` seconds.

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.ndjson"
    >>> _ = p.write_text('{"type":"user","session_id":"old","message":{"content":"hi"}}\\n')
    >>> [item.obj["session_id"] for item in replay(p, session_id="new", workspace="/ws")]
    ['new']
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ..protocol import EventType, event_from_object
from .settings import MAX_GAP_S


@dataclass(slots=True)
class ScriptItem:
    """One line of a script: a JSON object (``obj``) or a raw line (``raw``).

    Example:
        >>> ScriptItem(raw="banner").obj is None
        True
    """

    obj: dict[str, Any] | None = None
    raw: str | None = None


def _first(lines: list[bytes], key: str) -> str | None:
    for line in lines:
        try:
            obj: Any = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get(key), str):
            return str(obj[key])
    return None


def _escaped(text: str) -> str:
    return orjson.dumps(text).decode()[1:-1]


def replay(
    path: str | os.PathLike[str],
    *,
    session_id: str,
    workspace: str,
    partial: bool = True,
    speed: float = 0.0,
) -> Iterator[ScriptItem]:
    """The items of the script at ``path``, rewritten for this chat; sleeps between them at
    ``speed`` > 0. Raises ``OSError`` at once when the file cannot be read, ``ValueError``
    when it is empty or holds no JSON object (not a stream-json recording).

    Example:
        >>> try:
        ...     replay("/nonexistent.ndjson", session_id="s", workspace="/ws")
        ... except OSError:
        ...     print("unreadable")
        unreadable
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.ndjson"
        >>> _ = p.write_text("not json at all\\n")
        >>> replay(p, session_id="s", workspace="/ws")
        Traceback (most recent call last):
        ValueError: holds no JSON object: not a recording of --output-format stream-json
    """
    with open(path, "rb") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    if not lines:
        raise ValueError("is empty: nothing to replay")
    if not any(_is_object(line) for line in lines):
        raise ValueError("holds no JSON object: not a recording of --output-format stream-json")
    return _items(lines, session_id, workspace, partial, speed)


def _is_object(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def _items(
    lines: list[bytes], session_id: str, workspace: str, partial: bool, speed: float
) -> Iterator[ScriptItem]:
    old_sid = _first(lines, "session_id")
    old_cwd = _first(lines, "cwd")
    replacements: list[tuple[str, str]] = []
    if old_sid:
        replacements.append((_escaped(old_sid), _escaped(session_id)))
    if old_cwd:
        replacements.append((_escaped(old_cwd), _escaped(workspace)))
    previous_ts: int | None = None
    for line in lines:
        text = line.decode("utf-8", "replace")
        for old, new in replacements:
            text = text.replace(old, new)
        try:
            obj: Any = orjson.loads(text)
        except orjson.JSONDecodeError:
            yield ScriptItem(raw=text)
            continue
        if not isinstance(obj, dict):
            yield ScriptItem(raw=text)
            continue
        ts = obj.get("timestamp_ms")
        if isinstance(ts, int) and not isinstance(ts, bool):
            if speed > 0 and previous_ts is not None and ts > previous_ts:
                time.sleep(min(MAX_GAP_S, (ts - previous_ts) / 1000 * speed))
            previous_ts = ts
        if not partial and event_from_object(obj).type is EventType.ASSISTANT_DELTA:
            continue
        yield ScriptItem(obj=obj)
