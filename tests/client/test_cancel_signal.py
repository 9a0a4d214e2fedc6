"""``cancel(sig)`` refuses what cannot stop the agent, before anything is sent or changed.

``stream.cancel(999)`` (or ``-1``) was accepted: the turn's supervisor then died on
``os.killpg``'s EINVAL, ``wait()`` raised a bare ``OSError`` and ``result`` stayed ``None``.
``cancel(0)`` sent nothing (the turn ended by SIGKILL after the grace), ``cancel(SIGCONT)``
stopped the iteration while the turn went on to a successful result. Now each is a
``ValueError`` naming the value; the stream is untouched (not cancelled, still iterable) and
a real cancel afterwards works as usual.
"""

from __future__ import annotations

import asyncio
import re
import signal
from typing import Any

import pytest

from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient
from cursor_agent_api.runtime.stop_policy import stop_signal

REFUSED: list[Any] = [999, -1, 0, signal.SIGCONT, signal.SIGCHLD, signal.NSIG, 15.0, True, "15"]


@pytest.mark.parametrize("sig", REFUSED, ids=repr)
def test_a_value_that_cannot_stop_the_agent_is_refused_by_name(sig: Any) -> None:
    with pytest.raises(ValueError, match=r"cancel\(\) needs a signal that stops the agent") as e:
        stop_signal(sig)
    assert repr(sig) in str(e.value)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT, signal.SIGHUP,
                                 signal.SIGSTOP, 15, 9])
def test_the_stopping_signals_pass(sig: int) -> None:
    assert stop_signal(sig) == sig and type(stop_signal(sig)) is int


def test_sync_stream_refuses_a_bad_signal_and_sends_nothing(sim):
    with CursorAgentClient(sim("silence")) as client:
        stream = client.query_stream("hi")
        next(iter(stream))
        for sig in REFUSED:
            with pytest.raises(ValueError, match=re.escape(repr(sig))):
                stream.cancel(sig)
        assert not stream.cancelled and not stream.done
        stream.cancel()
        r = stream.wait(timeout=60)
    assert stream.cancelled and r.cancelled and r.exit_code == 143


def test_async_stream_refuses_a_bad_signal_and_sends_nothing(sim):
    async def main() -> Any:
        client = AsyncCursorAgentClient(sim("silence"))
        try:
            stream = client.query_stream("hi")
            await stream.__anext__()
            for sig in REFUSED:
                with pytest.raises(ValueError, match=re.escape(repr(sig))):
                    stream.cancel(sig)
            assert not stream.cancelled and not stream.done
            stream.cancel()
            return stream, await asyncio.wait_for(stream.wait(), 60)
        finally:
            await client.aclose()

    stream, r = asyncio.run(main())
    assert stream.cancelled and r.cancelled and r.exit_code == 143


def test_an_unstarted_async_stream_refuses_a_bad_signal_and_can_still_start(sim):
    async def main() -> Any:
        client = AsyncCursorAgentClient(sim())
        try:
            stream = client.query_stream("hi")
            with pytest.raises(ValueError, match="999"):
                stream.cancel(999)
            return await asyncio.wait_for(stream.wait(), 60)
        finally:
            await client.aclose()

    assert asyncio.run(main()).success
