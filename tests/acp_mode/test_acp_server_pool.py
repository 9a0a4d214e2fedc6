"""The server's shared ``agent acp`` clients (``server/runner.py``'s :class:`AcpClients`) on a
fake agent that runs turns of different sessions at once: with room for two turns per
process, two runs share one process, each permission request reaches the run that asked,
a cancel ends one run and not the other, and — on a build that refuses ``session/cancel`` —
the fallback stops the process: the other run then fails typed and its next prompt works."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from acp_fake import FakeAgent

from cursor_agent_api.permissions import Accept, Allow, Deny, PermissionRequest, Skip
from cursor_agent_api.protocol import EventType
from cursor_agent_api.server.runner import AcpClients, AgentLaunch, close_stream, open_stream
from cursor_agent_api.server.settings import ServerSettings


class Steer:
    """A run's callbacks (the server's are :class:`RunSteering`): answers, remembers what it saw."""

    def __init__(self, allow: bool, gate: asyncio.Event | None = None) -> None:
        self.allow = allow
        self.gate = gate
        self.asked: list[str | None] = []

    async def can_use_tool(self, request: PermissionRequest) -> Allow | Deny:
        self.asked.append(request.command)
        if self.gate is not None:
            await self.gate.wait()
        return Allow() if self.allow else Deny("not here")

    async def on_question(self, request: Any) -> Skip:
        return Skip("no")

    async def on_plan(self, plan: Any) -> Accept:
        self.asked.append(f"plan {plan.name}")
        return Accept()


def _settings(fake: FakeAgent, **env: str) -> ServerSettings:
    return ServerSettings(token="t" * 16, agent_binary=str(fake.binary), agent_env={
        "FAKE_ACP_DIR": str(fake.state), "FAKE_ACP_LOG": str(fake.log), **env})


def _launch(fake: FakeAgent, pool: AcpClients, prompt: str, steer: Steer | None = None,
            resume: str | None = None) -> AgentLaunch:
    return AgentLaunch(prompt, str(fake.workspace), None, {"transport": "acp", "trust": True},
                       resume=resume, steering=cast(Any, steer), clients=pool)


async def _run(settings: ServerSettings, launch: AgentLaunch, started: asyncio.Event | None = None,
               pids: list[int | None] | None = None) -> Any:
    stream = await open_stream(settings, launch)
    try:
        if pids is not None:
            pids.append(stream.pid)
        async for event in stream:
            if started is not None and event.type is EventType.ASSISTANT_DELTA:
                started.set()
        return await stream.wait()
    finally:
        await close_stream(stream)


def test_two_runs_share_a_process_and_their_answers(fake: FakeAgent) -> None:
    async def main() -> tuple[Any, Any, Steer, Steer, list[int | None], int]:
        pool = AcpClients(turns_per_process=2)
        settings = _settings(fake)
        yes, no = Steer(True), Steer(False)
        pids: list[int | None] = []
        try:
            ran, refused = await asyncio.gather(
                _run(settings, _launch(fake, pool, "run echo-left", yes), pids=pids),
                _run(settings, _launch(fake, pool, "run echo-right", no), pids=pids))
            return ran, refused, yes, no, pids, len(pool)
        finally:
            await pool.aclose()

    ran, refused, yes, no, pids, size = asyncio.run(main())
    assert yes.asked == ["echo-left"] and no.asked == ["echo-right"]
    assert "I ran echo-left." in ran.result and "not allowed" in refused.result
    assert ran.session_id != refused.session_id
    assert len(set(pids)) == 1 and pids[0] is not None and size == 1


def test_cancel_ends_one_run_and_not_the_other(fake: FakeAgent) -> None:
    async def main() -> tuple[Any, Any, list[int | None]]:
        pool = AcpClients(turns_per_process=2)
        settings = _settings(fake)
        gate = asyncio.Event()
        pids: list[int | None] = []
        try:
            other = asyncio.create_task(
                _run(settings, _launch(fake, pool, "run make", Steer(True, gate)), pids=pids))
            stream = await open_stream(settings, _launch(fake, pool, "slow", Steer(True)))
            pids.append(stream.pid)
            async for event in stream:
                if event.type is EventType.ASSISTANT_DELTA:
                    stream.cancel()
            cancelled = await stream.wait()
            await close_stream(stream)
            gate.set()  # only now may the other run go on
            return cancelled, await other, pids
        finally:
            await pool.aclose()

    cancelled, other, pids = asyncio.run(main())
    assert cancelled.cancelled
    assert other.success and "I ran make." in other.result
    assert len(set(pids)) == 1


def test_cancel_fallback_stops_the_shared_process_and_the_other_run_fails_typed(
        fake: FakeAgent) -> None:
    async def main() -> tuple[Any, Any, Any]:
        pool = AcpClients(turns_per_process=2)
        settings = _settings(fake, FAKE_ACP_NO_CANCEL="error")  # a build answering -32601
        gate = asyncio.Event()
        try:
            other = asyncio.create_task(_run(settings, _launch(fake, pool, "run make",
                                                               Steer(True, gate))))
            stream = await open_stream(settings, _launch(fake, pool, "slow", Steer(True)))
            async for event in stream:
                if event.type is EventType.ASSISTANT_DELTA:
                    stream.cancel()
            cancelled = await stream.wait()
            await close_stream(stream)
            lost = await other
            gate.set()
            again = await _run(settings, _launch(fake, pool, "history", Steer(True),
                                                 resume=lost.session_id))
            return cancelled, lost, again
        finally:
            await pool.aclose()

    cancelled, lost, again = asyncio.run(main())
    assert cancelled.cancelled
    assert not lost.success and type(lost.exception).__name__ == "AgentProcessError"
    assert "next prompt" in str(lost.exception)
    assert again.success and again.result == "earlier: "  # the lost turn is not in the session


# (the plan: audit 13; the shared client's own config had no on_plan, so a late plan was
# accepted, the library's default, where permissions are rejected and questions skipped)
@pytest.mark.parametrize(("step", "answered"), [("background", "background got reject-once"),
                                                ("background plan", "background got rejected")],
                         ids=["permission", "plan"])
def test_a_request_after_the_run_is_not_put_to_that_runs_person(fake: FakeAgent, step: str,
                                                                answered: str) -> None:
    async def main() -> tuple[Steer, Any]:
        pool = AcpClients()
        settings = _settings(fake)
        steer = Steer(True)
        try:
            first = await _run(settings, _launch(fake, pool, step, steer))
            for _ in range(600):  # until the late request has had its answer (no turn runs)
                if any('"outcome"' in line for line in fake.received()):
                    break
                await asyncio.sleep(0.05)
            # the agent's background task asks after the run ended: the shared client's own
            # settings answer it (reject), not the callbacks of the run that came first
            after = await _run(settings, _launch(fake, pool, "history", Steer(True),
                                                 resume=first.session_id))
            return steer, after
        finally:
            await pool.aclose()

    steer, after = asyncio.run(main())
    assert steer.asked == []
    assert answered in after.result, after.result


def test_an_agent_that_cannot_start_gives_its_client_back(fake: FakeAgent, tmp_path: Any) -> None:
    from cursor_agent_api.errors import AgentNotFoundError

    async def main() -> list[int]:
        pool = AcpClients()
        settings = ServerSettings(token="t" * 16, agent_binary=str(tmp_path / "no-such-agent"))
        try:
            for _ in range(2):
                try:
                    await open_stream(settings, _launch(fake, pool, "say hi", Steer(True)))
                except AgentNotFoundError:
                    pass
                else:  # pragma: no cover - the test's premise
                    raise AssertionError("the agent started")
            return [h.users for group in pool._held.values() for h in group]
        finally:
            await pool.aclose()

    assert asyncio.run(main()) == [0]  # one client, not busy: the next run may use it


def test_an_idle_process_is_stopped_and_the_next_run_loads_its_session(fake: FakeAgent) -> None:
    from cursor_agent_api.runtime import groups

    async def main() -> tuple[list[int | None], bool, Any]:
        pool = AcpClients(idle_seconds=0.1)
        settings = _settings(fake)
        pids: list[int | None] = []
        try:
            first = await _run(settings, _launch(fake, pool, "say one"), pids=pids)
            for _ in range(600):  # the idle clock runs out: the client is closed
                if len(pool) == 0 and not pool._closing:
                    break
                await asyncio.sleep(0.05)
            gone = pids[0] is not None and not groups.group_alive(pids[0])
            again = await _run(settings, _launch(fake, pool, "history", resume=first.session_id),
                               pids=pids)
            return pids, gone, again
        finally:
            await pool.aclose()

    pids, gone, again = asyncio.run(main())
    assert gone and pids[1] != pids[0]
    assert again.success and again.result == "earlier: say one"


def test_a_request_naming_no_session_is_never_put_to_another_sessions_person(fake: FakeAgent) -> None:
    # the fake's cursor/create_plan names neither a session nor a tool call it announced
    async def main() -> tuple[Steer, Steer, Steer]:
        pool = AcpClients(turns_per_process=2)
        settings = _settings(fake)
        gate = asyncio.Event()
        alone, left, right = Steer(True), Steer(True, gate), Steer(True)
        try:
            first = await _run(settings, _launch(fake, pool, "plan", alone))  # the only turn
            waiting = asyncio.create_task(_run(settings, _launch(fake, pool, "run make", left)))
            while not left.asked:  # left's turn runs (it waits for its permission)
                await asyncio.sleep(0.02)
            # right continues the older session: a guess by session age would pick left
            await _run(settings, _launch(fake, pool, "plan", right, resume=first.session_id))
            gate.set()
            await waiting
            return alone, left, right
        finally:
            await pool.aclose()

    alone, left, right = asyncio.run(main())
    assert alone.asked == ["plan Rename"]
    assert left.asked == ["make"]
    assert right.asked == []  # two turns could own it: the client's own settings answered


def test_the_pool_keeps_no_home_for_a_session_its_process_let_go(fake: FakeAgent) -> None:
    """One-off runs of many chats: the shared process holds its latest idle sessions only,
    and the pool remembers a home only for those; a chat let go is loaded again, its
    history there."""

    async def main() -> tuple[list[Any], list[str], list[str], Any]:
        pool = AcpClients()
        settings = _settings(fake)
        try:
            first = await _run(settings, _launch(fake, pool, "say one"))
            (held,) = [h for group in pool._held.values() for h in group]
            (transport,) = held.client._acp.transports.values()
            transport.max_idle_sessions = 2
            results = [first] + [await _run(settings, _launch(fake, pool, f"say {n}"))
                                 for n in range(4)]
            homes, kept = list(pool._home), list(transport._sessions)
            again = await _run(settings, _launch(fake, pool, "history",
                                                 resume=first.session_id))
            return results, homes, kept, again
        finally:
            await pool.aclose()

    results, homes, kept, again = asyncio.run(main())
    ids = [r.session_id for r in results]
    assert kept == ids[-2:]
    assert sorted(homes) == sorted(ids[-2:])  # (every chat's session had a home)
    assert again.success and again.result == "earlier: say one"
