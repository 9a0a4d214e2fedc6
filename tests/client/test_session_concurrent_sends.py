"""Two ``send()`` at once on one conversation session (audit 17, finding 3): the turns run one
after the other, in call order, on the same chat — as ``send_stream`` already waits for the
previous stream — on both faces. Before, both started at once: two chats before a first turn
(the session id switching), the second refused after one ("running a turn already")."""

from __future__ import annotations

import asyncio
import threading
import time

from cursor_agent_api import AsyncConversationSession, ConversationSession
from cursor_agent_api.testing import Script, ScriptTransport

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
OTHER = "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"


class Chats(ScriptTransport):
    resumed: list[str | None]  # what each turn that ran resumed, in the order they ran


def script() -> Chats:
    """A turn that resumes nothing starts a new chat (CHAT first, then OTHER); each takes a
    while (its lines 0.3 s apart), so that two turns started at once overlap."""
    made: list[str] = []

    def turn(prompt: bytes) -> Script:
        # the turn that runs is the last opened (a session's deferred stream opens its turn
        # as it starts, a placeholder before)
        resumed = t.turns[-1].config.resume
        t.resumed.append(resumed)
        chat = resumed or (CHAT if not made else OTHER)
        made.append(chat)
        return Script([{"type": "system", "subtype": "init", "session_id": chat},
                       {"type": "result", "subtype": "success", "result": prompt.decode(),
                        "session_id": chat}], delay=0.3)

    t = Chats(turn)
    t.resumed = []
    return t


def test_async_sends_at_once_run_in_call_order_on_one_chat() -> None:
    async def main() -> tuple[list[object], Chats, AsyncConversationSession]:
        t = script()
        async with AsyncConversationSession(transport=t) as session:
            results = await asyncio.gather(session.send("one"), session.send("two"),
                                           session.send("three"), return_exceptions=True)
        return list(results), t, session

    results, t, session = asyncio.run(main())
    assert [getattr(r, "result", r) for r in results] == ["one", "two", "three"]
    assert t.resumed == [None, CHAT, CHAT]
    assert [h.prompt for h in session.history] == ["one", "two", "three"]
    assert session.session_id == CHAT


def test_sync_sends_from_two_threads_run_in_call_order_on_one_chat() -> None:
    t = script()
    with ConversationSession(transport=t) as session:
        results: dict[str, object] = {}

        def send(prompt: str) -> None:
            try:
                results[prompt] = session.send(prompt).result
            except Exception as exc:  # (reported by the assertion)
                results[prompt] = exc

        first = threading.Thread(target=send, args=("one",))
        first.start()
        deadline = time.monotonic() + 60
        while not t.turns and time.monotonic() < deadline:  # the first turn has started
            time.sleep(0.01)
        second = threading.Thread(target=send, args=("two",))
        second.start()
        first.join(120)
        second.join(120)
    assert results == {"one": "one", "two": "two"}
    assert t.resumed == [None, CHAT]
    assert [h.prompt for h in session.history] == ["one", "two"]
    assert session.session_id == CHAT


def test_a_cancelled_send_with_a_send_queued_behind_it_records_nothing() -> None:
    """A ``send()`` cancelled while another waits behind it (review 56): the queued send
    finalized the shared stream and recorded the cancelled turn — history
    ``[("one", False), ("two", True)]`` — though its send raised. As with no send queued, a
    send that did not end records nothing."""
    def turn(prompt: bytes) -> Script:
        slow = prompt == b"one"  # (cancelled long before its result would come)
        return Script([{"type": "system", "subtype": "init", "session_id": CHAT},
                       {"type": "result", "subtype": "success", "result": prompt.decode(),
                        "session_id": CHAT}], delay=30.0 if slow else 0.0)

    async def main() -> tuple[BaseException | None, str, AsyncConversationSession]:
        t = ScriptTransport(turn)
        async with AsyncConversationSession(transport=t) as session:
            one = asyncio.ensure_future(session.send("one"))
            for _ in range(6000):  # its turn has started
                if t.turns:
                    break
                await asyncio.sleep(0.01)
            two = asyncio.ensure_future(session.send("two"))
            for _ in range(20):  # (two waits behind one)
                await asyncio.sleep(0)
            one.cancel()
            try:
                await one
                raised: BaseException | None = None
            except BaseException as exc:
                raised = exc
            second = await two
        return raised, second.result, session

    raised, second, session = asyncio.run(main())
    assert isinstance(raised, asyncio.CancelledError)
    assert second == "two"
    assert [(h.prompt, h.success) for h in session.history] == [("two", True)]


def test_an_interrupt_as_a_turn_takes_the_call_order_lock_gives_its_place_up() -> None:
    """A ``KeyboardInterrupt`` landing after the wait for the lock but before the turn's body
    (here: as the condition is left) held the lock for ever: every later turn waited."""
    from cursor_agent_api.sessions import _InCallOrder

    class Interrupted(threading.Condition):
        armed = True

        def __exit__(self, *exc: object) -> None:
            super().__exit__(*exc)
            if Interrupted.armed and exc[0] is None:
                Interrupted.armed = False
                raise KeyboardInterrupt

    order = _InCallOrder()
    order._cond = Interrupted()
    try:
        with order():
            raise AssertionError("the body ran")
    except KeyboardInterrupt:
        pass
    done = threading.Event()

    def next_turn() -> None:
        with order():
            done.set()

    threading.Thread(target=next_turn, daemon=True).start()
    assert done.wait(60), "the next turn waited for a lock nobody holds"
