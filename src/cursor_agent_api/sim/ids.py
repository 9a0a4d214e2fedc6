"""Ids and time for one turn, in the real formats, derived from the chat and the prompt.

* chat ids: UUIDs (random, or from ``CURSOR_AGENT_SIM_SEED``);
* ``request_id``: a UUID derived from the chat id, the turn number and the prompt;
* ``model_call_id``: ``<request_id>-<n>-<4 chars>`` (PROTOCOL.md §3.4);
* tool call ids: ``tool_<uuid minus its last digit>`` (Composer models, recording 03) or
  ``call_<24 letters>\\nfc_<50 hex>`` with a newline (GPT-style models, recording 02).

:class:`Clock` gives wall-clock milliseconds, or with a seed a fake clock that advances by
fixed steps, so that a seeded run is byte-for-byte reproducible.

Example:
    >>> ids = TurnIds("8ef40118-8378-436d-8ba8-2436b19cc877", 0, "hi", call_style="tool")
    >>> ids.model_call_id(0).startswith(ids.request_id + "-0-")
    True
    >>> ids.call_id(0, 0).startswith("tool_")
    True
"""

from __future__ import annotations

import hashlib
import time
import uuid

_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _digest(*parts: object) -> bytes:
    h = hashlib.sha256()
    for part in parts:
        h.update(str(part).encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.digest()


def derived_uuid(*parts: object) -> str:
    """A version-4-shaped UUID derived from ``parts``.

    Example:
        >>> derived_uuid("a") == derived_uuid("a") != derived_uuid("b")
        True
    """
    return str(uuid.UUID(bytes=_digest(*parts)[:16], version=4))


def new_chat_id(seed: str | None, *parts: object) -> str:
    """A new chat id: random, or derived from ``seed`` and ``parts`` when a seed is set.

    Example:
        >>> new_chat_id("s", "ws", "hi") == new_chat_id("s", "ws", "hi")
        True
    """
    if seed is None:
        return str(uuid.uuid4())
    return derived_uuid("chat", seed, *parts)


def _chars(alphabet: str, n: int, *parts: object) -> str:
    out: list[str] = []
    counter = 0
    while len(out) < n:
        for byte in _digest(counter, *parts):
            out.append(alphabet[byte % len(alphabet)])
            if len(out) == n:
                break
        counter += 1
    return "".join(out)


class TurnIds:
    """The ids of one turn of one chat.

    ``call_style`` is ``"tool"`` (``tool_…``), ``"call"`` (``call_…\\nfc_…``) or ``"auto"``
    (``call-<uuid>-<n>\\nfc_<uuid>_0``, ``n`` counting the turn's calls from 0).

    Example:
        >>> ids = TurnIds("c", 1, "read a.txt", call_style="call")
        >>> "\\n" in ids.call_id(0, 0), len(ids.call_id(0, 0).split("\\n")[1])
        (True, 53)
    """

    def __init__(self, chat_id: str, turn: int, prompt: str, *, call_style: str) -> None:
        self.chat_id = chat_id
        self.turn = turn
        self.prompt = prompt
        self.call_style = call_style
        self.request_id = derived_uuid("request", chat_id, turn, prompt)
        self._numbers: dict[tuple[int, int], int] = {}

    def model_call_id(self, n: int) -> str:
        """The id of the ``n``-th model call of the turn.

        Example:
            >>> TurnIds("c", 0, "p", call_style="call").model_call_id(2).split("-")[-2]
            '2'
        """
        return f"{self.request_id}-{n}-{_chars(_BASE36, 4, 'mc', self.request_id, n)}"

    def call_id(self, model_call: int, index: int) -> str:
        """The id of the ``index``-th tool call of model call ``model_call``.

        Example:
            >>> len(TurnIds("c", 0, "p", call_style="tool").call_id(0, 1))
            40
            >>> auto = TurnIds("c", 0, "p", call_style="auto")
            >>> [auto.call_id(0, k).split("\\n")[0][-2:] for k in (0, 1)], auto.call_id(1, 0)[-2:]
            (['-0', '-1'], '_0')
        """
        if self.call_style == "tool":
            return "tool_" + derived_uuid("tool", self.request_id, model_call, index)[:-1]
        if self.call_style == "auto":  # the 2026.10.01 fragment (model Auto)
            n = self._numbers.setdefault((model_call, index), len(self._numbers))
            uid = derived_uuid("auto-call", self.request_id, model_call, index)
            return f"call-{uid}-{n}\nfc_{derived_uuid('auto-fc', self.request_id, model_call, index)}_0"
        letters = _chars(_ALNUM, 24, "call", self.request_id, model_call, index)
        hexes = _digest("fc", self.request_id, model_call, index).hex()
        hexes += _digest("fc2", self.request_id, model_call, index).hex()
        return f"call_{letters}\nfc_{hexes[:50]}"


class Clock:
    """Milliseconds since the epoch: the wall clock, or a fake one when seeded.

    The fake clock starts at a time derived from the seed and advances ``step_ms`` at every
    reading, so two seeded runs read the same times.

    Example:
        >>> c = Clock(seed="x")
        >>> b = c.now_ms(); c.now_ms() - b
        7
    """

    def __init__(self, seed: str | None = None, step_ms: int = 7) -> None:
        self._fake: int | None = None
        self._seed = seed
        self._step = step_ms
        if seed is not None:
            self._fake = 1_789_000_000_000 + int.from_bytes(_digest("clock", seed)[:4], "big") % 10**8

    @property
    def fake(self) -> bool:
        """True when this is the seeded, fake clock.

        Example:
            >>> Clock().fake, Clock("s").fake
            (False, True)
        """
        return self._fake is not None

    def now_ms(self) -> int:
        """The current time in milliseconds.

        Example:
            >>> Clock().now_ms() > 1_700_000_000_000
            True
        """
        if self._fake is None:
            return time.time_ns() // 1_000_000
        self._fake += self._step
        return self._fake

    def advance(self, ms: int) -> None:
        """Move the fake clock forward (a no-op on the wall clock).

        Example:
            >>> c = Clock("s"); t = c.now_ms(); c.advance(100); c.now_ms() - t
            107
        """
        if self._fake is not None:
            self._fake += ms

    def elapsed_ms(self, measured_ms: int, *key: object) -> int:
        """How long something took, as reported: ``measured_ms`` on the wall clock; on the fake
        one a duration from 5 to 54 ms derived from the seed and ``key`` (what ran), so that a
        seeded run reports the same durations however long its commands really took.

        Example:
            >>> Clock().elapsed_ms(1234, "sleep 1")
            1234
            >>> c = Clock("s"); c.elapsed_ms(1234, "sleep 1") == c.elapsed_ms(3, "sleep 1")
            True
            >>> 5 <= Clock("s").elapsed_ms(1234, "sleep 1") < 55
            True
        """
        if self._seed is None:
            return measured_ms
        return 5 + int.from_bytes(_digest("elapsed", self._seed, *key)[:4], "big") % 50
