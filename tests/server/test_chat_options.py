"""PATCH /api/chats/{id} changes a chat's options (issue 12, point 9): validated, only the
options given change, 409 while a run is queued or running, and the next run uses them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
from server_helpers import Server, new_chat, wait_run

SLOW = {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.4"}


def test_options_change_only_what_is_given_and_apply_to_the_next_run(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "run `echo hi`"}).json()
        calls = c.get(f"/api/runs/{wait_run(c, run['id'])['id']}/tool-calls").json()["tool_calls"]
        assert [tc["status"] for tc in calls] == ["rejected"]

        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"force": True}})
        assert r.status_code == 200, r.text
        assert r.json()["options"] == {"force": True, "approve_mcps": False, "trust": True,
                                       "stream_partial_output": True, "transport": "print",
                                       "mode": "agent"}
        assert c.get(f"/api/chats/{chat['id']}").json()["options"]["force"] is True

        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "run `echo hi`"}).json()
        calls = c.get(f"/api/runs/{wait_run(c, run['id'])['id']}/tool-calls").json()["tool_calls"]
        assert [tc["status"] for tc in calls] == ["succeeded"]

        # Title and options together; a title alone still renames.
        r = c.patch(f"/api/chats/{chat['id']}",
                    json={"title": "T", "options": {"stream_partial_output": False}})
        assert r.status_code == 200
        assert (r.json()["title"], r.json()["options"]["stream_partial_output"]) == ("T", False)
        assert c.patch(f"/api/chats/{chat['id']}", json={"title": "U"}).json()["options"] == (
            r.json()["options"])


def test_bad_options_are_refused_and_change_nothing(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        url = f"/api/chats/{chat['id']}"
        for body in ({"options": {"force": "yes"}}, {"options": {"yolo": True}},
                     {"options": {"force": None}}, {"options": []}, {}, {"workspace": "/"},
                     {"options": {}}):
            r = c.patch(url, json=body)
            assert r.status_code == 422, (body, r.text)
            assert isinstance(r.json()["detail"], (str, list))
        assert c.get(url).json()["options"] == chat["options"]
        assert c.patch("/api/chats/nope", json={"options": {"force": True}}).status_code == 404


def test_options_cannot_change_while_a_run_is_active(make_server: Callable[..., Server]) -> None:
    server = make_server(sim_env=SLOW)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs",
                     json={"prompt": "list the files and read notes.txt"}).json()
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"force": True}})
        assert r.status_code == 409
        assert "run" in r.json()["detail"]
        # Renaming is harmless during a run.
        assert c.patch(f"/api/chats/{chat['id']}", json={"title": "x"}).status_code == 200
        # Ended (cancelled, not waited out: the slow run takes seconds), options change again.
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert wait_run(c, run["id"])["status"] == "cancelled"
        assert c.get(f"/api/chats/{chat['id']}").json()["options"]["force"] is False
        r = c.patch(f"/api/chats/{chat['id']}", json={"options": {"force": True}})
        assert r.status_code == 200


def _async_client(server: Server) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"token {server.token}"},
                             timeout=60.0)


def test_concurrent_option_changes_are_all_kept(server: Server) -> None:
    """Two PATCHes at once, each changing one option: both changes stay (none is lost, and a
    revoked ``force`` is not switched back on by the other change's stale copy)."""

    async def main() -> list[dict[str, Any]]:
        async with _async_client(server) as a:
            chats = [(await a.post("/api/chats", json={"workspace": "project",
                                                        "options": {"force": True}})).json()["id"]
                     for _ in range(10)]

            async def both(chat_id: str) -> dict[str, Any]:
                r1, r2 = await asyncio.gather(
                    a.patch(f"/api/chats/{chat_id}", json={"options": {"force": False}}),
                    a.patch(f"/api/chats/{chat_id}", json={"options": {"trust": True}}),
                )
                assert (r1.status_code, r2.status_code) == (200, 200), (r1.text, r2.text)
                return dict((await a.get(f"/api/chats/{chat_id}")).json()["options"])

            return list(await asyncio.gather(*(both(ch) for ch in chats)))

    for options in asyncio.run(main()):
        assert (options["force"], options["trust"]) == (False, True), options


def test_a_rename_during_the_first_prompt_is_kept(server: Server) -> None:
    """A chat created without a title is named after its first prompt, unless it was renamed
    meanwhile: the rename wins whichever lands first."""

    async def main() -> list[str]:
        async with _async_client(server) as a:
            chats = [(await a.post("/api/chats", json={"workspace": "project"})).json()["id"]
                     for _ in range(10)]

            async def both(i: int, chat_id: str) -> str:
                async def rename() -> httpx.Response:
                    await asyncio.sleep(0.002 * (i % 5))
                    return await a.patch(f"/api/chats/{chat_id}", json={"title": "My name"})

                r1, r2 = await asyncio.gather(
                    a.post(f"/api/chats/{chat_id}/runs", json={"prompt": "what is 6 * 7"}), rename())
                assert (r1.status_code, r2.status_code) == (202, 200), (r1.text, r2.text)
                return str((await a.get(f"/api/chats/{chat_id}")).json()["title"])

            return list(await asyncio.gather(*(both(i, ch) for i, ch in enumerate(chats))))

    assert asyncio.run(main()) == ["My name"] * 10


def test_force_revoked_while_a_prompt_is_posted_is_off_for_that_run(
    make_inproc: Callable[..., Any], monkeypatch: Any
) -> None:
    """The PATCH lands between the prompt's read of the chat and the run's commit (held
    open here): it answers 200 with force off, so the run must not start with force on."""
    import threading

    from cursor_agent_api.server import runs as runs_module

    srv = make_inproc()
    launched: list[dict[str, Any]] = []
    real_open, real_create = runs_module.open_stream, srv.runs.log.create_run

    async def spy_open(settings: Any, launch: Any) -> Any:
        launched.append(dict(launch.options))
        return await real_open(settings, launch)

    entered, patched = threading.Event(), threading.Event()

    async def slow_create(*a: Any, **k: Any) -> Any:
        # the window between the POST's read of the chat and its commit: the PATCH lands in it
        entered.set()
        while not patched.is_set():
            await asyncio.sleep(0.01)
        return await real_create(*a, **k)

    monkeypatch.setattr(runs_module, "open_stream", spy_open)
    monkeypatch.setattr(srv.runs.log, "create_run", slow_create)
    with srv.client() as c:
        chat = new_chat(c, force=True)
        posted: dict[str, httpx.Response] = {}
        t = threading.Thread(target=lambda: posted.update(
            r=c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})))
        t.start()
        assert entered.wait(60)
        p = c.patch(f"/api/chats/{chat['id']}", json={"options": {"force": False}})
        patched.set()
        t.join()
        assert p.status_code == 200 and p.json()["options"]["force"] is False, p.text
        assert posted["r"].status_code == 202, posted["r"].text
        wait_run(c, posted["r"].json()["id"])
    assert [o.get("force") for o in launched] == [False]
