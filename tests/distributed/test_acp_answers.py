"""ACP chats in queue mode (``serve --dispatch queue``): a person's answer to a run that waits
on a worker is relayed there (NOTIFY; the worker LISTENs) and taken — allow, reject, a plan,
409 twice, 422 and 404 checked by the API server — and the worker keeps one ``agent acp``
for its chats' runs (the simulator's invocations are counted)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster import Cluster, fresh_cluster
from server_helpers import all_events, new_chat, poll, queued_run, wait_run


@pytest.fixture(scope="module")
def small_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One API server and one worker on a fresh database."""
    with fresh_cluster(tmp_path_factory.mktemp("acp-cluster")) as c:
        c.server()
        c.worker("w1")
        yield c


def _pending(c: httpx.Client, chat_id: str, run_id: str, kind: str) -> dict[str, Any] | None:
    recs = [e for e in all_events(c, chat_id) if e["type"] == "request"]
    answered = {e["payload"]["request_id"] for e in recs if e["subtype"] == "answered"}
    return next((e for e in recs if e["subtype"] == kind and e["run_id"] == run_id
                 and e["payload"]["request_id"] not in answered), None)


def _start(c: httpx.Client, chat_id: str, prompt: str) -> str:
    r = c.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


def _outputs(c: httpx.Client, run_id: str) -> str:
    calls = c.get(f"/api/runs/{run_id}/tool-calls").json()["tool_calls"]
    return " ".join(t["output"] or "" for t in calls)


def test_answers_reach_the_worker_that_runs_the_run(small_cluster: Cluster) -> None:
    (server,) = small_cluster.servers
    before = small_cluster.invocations()
    with server.client() as c:
        chat = new_chat(c, transport="acp")
        run = _start(c, chat["id"], "run `echo relayed-allow`")
        req = poll(lambda: _pending(c, chat["id"], run, "permission"))
        rid = req["payload"]["request_id"]
        url = f"/api/runs/{run}/requests/{rid}"
        # checked here, before anything is relayed
        assert c.post(f"/api/runs/{run}/requests/nope", json={"decision": "reject"}).status_code == 404
        assert c.post(url, json={"accept": True}).status_code == 422
        r = c.post(url, json={"decision": "allow-once"})
        assert r.status_code == 200, (r.text, small_cluster.logs())
        assert r.json()["decision"] == "allow-once" and r.json()["by"] == "user"
        assert c.post(url, json={"decision": "reject"}).status_code == 409
        done = wait_run(c, run)
        assert done["status"] == "succeeded" and done["worker"] == "w1", done
        assert "relayed-allow" in _outputs(c, run)

        # a rejection, in another chat of the same worker: the same agent process
        other = new_chat(c, transport="acp", mode="plan")
        run2 = _start(c, other["id"], "create alpha.txt with hello")
        plan = poll(lambda: _pending(c, other["id"], run2, "plan"))
        r = c.post(f"/api/runs/{run2}/requests/{plan['payload']['request_id']}", json={"accept": False})
        assert r.status_code == 200 and r.json()["decision"] == "rejected", r.text
        assert wait_run(c, run2)["status"] == "succeeded"
        run3 = _start(c, chat["id"], "run `echo relayed-reject`")
        req3 = poll(lambda: _pending(c, chat["id"], run3, "permission"))
        r = c.post(f"/api/runs/{run3}/requests/{req3['payload']['request_id']}", json={"decision": "reject"})
        assert r.status_code == 200, r.text
        assert wait_run(c, run3)["status"] == "succeeded"
        assert "relayed-reject" not in _outputs(c, run3)
    assert small_cluster.invocations() - before == 1  # one `agent acp` for the three runs



def test_an_answer_no_worker_takes_is_a_503_and_answers_nothing(db_url: str, tmp_path: Path) -> None:
    import asyncio

    from cursor_agent_api.server.dispatch.answers import AnswerListener, AnswerNotTakenError, relay_answer
    from cursor_agent_api.server.requests import AnswerIn, RunRequests, request_records

    async def main() -> tuple[int, dict[str, Any], dict[str, Any]]:
        async with queued_run(db_url, str(tmp_path)) as (store, log, run):
            requests = RunRequests(log, run["chat_id"], run["id"], None)  # as on a worker
            asking = asyncio.create_task(requests.ask("permission", {"tool": {"kind": "shell"}}))
            while not await request_records(store, [run["id"]]):
                await asyncio.sleep(0.05)
            (rid,) = requests.requests
            try:  # no worker listens: nothing takes it
                await relay_answer(store, run["id"], rid, AnswerIn(decision="reject"), wait=0.3)
            except AnswerNotTakenError:
                pass
            else:  # pragma: no cover - the test's premise
                raise AssertionError("an answer nobody took was reported taken")
            still_open = requests.open_count()
            listener = AnswerListener(store, lambda _run, request_id, body: requests.answer(request_id, body))
            await listener.start()
            try:
                relayed = await relay_answer(store, run["id"], rid, AnswerIn(decision="allow-once"))
            finally:
                await listener.close()
            return still_open, relayed, await asking

    still_open, relayed, heard = asyncio.run(main())
    assert still_open == 1
    assert relayed["decision"] == "allow-once" and relayed["by"] == "user"
    assert heard["decision"] == "allow-once"


def test_an_answer_whose_ids_do_not_fit_a_notify_is_relayed_by_places(db_url: str, tmp_path: Path) -> None:
    """Six questions of twenty options whose ids are 150-character paths: the answer's ids do
    not fit PostgreSQL's 8,000-byte NOTIFY, so it is relayed as places in the stored request
    and the worker reads the ids back from it (before: a 422, 'too large to relay', for an
    answer the page showed as answerable; review of the bounded questions)."""
    import asyncio

    from cursor_agent_api.server.dispatch.answers import AnswerListener, relay_answer
    from cursor_agent_api.server.requests import AnswerIn, RunRequests, request_records

    def ident(q: int, o: int) -> str:
        return f"/home/someone/projects/a-rather-long-repository-name/src/q{q}/o{o:02d}.py".rjust(150, "x")

    questions = [{"id": ident(q, 99), "prompt": f"Which files? ({q})", "allow_multiple": True,
                  "options": [{"id": ident(q, o), "label": f"file {o}"} for o in range(20)]}
                 for q in range(6)]
    picked = [{"question_id": ident(q, 99), "option_ids": [ident(q, o) for o in range(15)]}
              for q in range(6)]

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with queued_run(db_url, str(tmp_path)) as (store, log, run):
            requests = RunRequests(log, run["chat_id"], run["id"], None)  # as on a worker
            asking = asyncio.create_task(requests.ask("question", {"title": "t", "questions": questions}))
            while not await request_records(store, [run["id"]]):
                await asyncio.sleep(0.05)
            (rid,) = requests.requests
            listener = AnswerListener(store, lambda _run, request_id, body: requests.answer(request_id, body))
            await listener.start()
            try:
                relayed = await relay_answer(store, run["id"], rid, AnswerIn(answers=picked))
            finally:
                await listener.close()
            return relayed, await asking

    relayed, heard = asyncio.run(main())
    assert heard["decision"] == "answered" and relayed["by"] == "user"
    assert heard["answers"] == picked
