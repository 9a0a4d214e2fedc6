"""The distributed mode end to end: 2 API servers, 3 workers, one PostgreSQL (``cluster.py``).

The tests share one cluster (module scope) and run in this order; a test that kills a
worker starts a replacement, so that each finds three workers.
"""

from __future__ import annotations

import asyncio
import signal
import statistics
import time
from typing import Any

from cluster import LOST_WITHIN, Cluster, pg_execute
from server_helpers import (
    FINAL,
    alive,
    all_events,
    event_seqs,
    is_run_end,
    new_chat,
    poll,
    wait_run,
    ws_collect,
)


def _post(client: Any, chat_id: str, prompt: str) -> dict[str, Any]:
    r = client.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})
    assert r.status_code == 202, r.text
    return dict(r.json())


def _running(client: Any, run_id: str) -> dict[str, Any] | None:
    run = client.get(f"/api/runs/{run_id}").json()
    return run if run["status"] == "running" and run["pid"] else None


def test_twenty_runs_over_ten_chats_and_follow_ups_stay_on_their_worker(cluster: Cluster) -> None:
    a, b = cluster.servers
    with a.client() as ca, b.client() as cb:
        clients = [ca, cb]
        chats = [new_chat(clients[i % 2]) for i in range(10)]
        first = [
            _post(clients[i % 2], ch["id"], f"reply with exactly: first {i}") for i, ch in enumerate(chats)
        ]
        done1 = [wait_run(ca, r["id"]) for r in first]
        # The follow-ups, through the other API server.
        second = [
            _post(clients[(i + 1) % 2], ch["id"], "what did I ask before?") for i, ch in enumerate(chats)
        ]
        done2 = [wait_run(cb, r["id"]) for r in second]
        assert [r["status"] for r in done1 + done2] == ["succeeded"] * 20, cluster.logs()
        for i, ch in enumerate(chats):
            events = all_events(ca, ch["id"])
            seqs = [e["seq"] for e in events]
            assert seqs == list(range(1, len(seqs) + 1)), "per-chat seqs are contiguous"
            spans = [[e["seq"] for e in events if e["run_id"] == r["id"]] for r in (done1[i], done2[i])]
            assert max(spans[0]) < min(spans[1]), "the chat's two runs do not overlap"
            assert not any(e["type"] == "context" for e in events), "no context reset"
        # A follow-up goes to the worker that holds the chat (its Cursor chat is on its disk):
        # the simulator answers "what did I ask before?" from the resumed chat.
        assert [r["worker"] for r in done2] == [r["worker"] for r in done1]
        assert all(f"first {i}" in (r["result"] or "") for i, r in enumerate(done2)), [
            r["result"] for r in done2
        ]
        assert len({r["worker"] for r in done1}) >= 2, "the runs were spread over the workers"
    assert cluster.invocations() == 20


def test_a_workspace_a_worker_does_not_have_fails_the_run_with_the_reason(cluster: Cluster) -> None:
    (cluster.root / "gone").mkdir()
    with cluster.servers[0].client() as c:
        chat = new_chat(c, "gone")
        (cluster.root / "gone").rmdir()  # the API server saw it; the workers do not
        run = wait_run(c, _post(c, chat["id"], "hello")["id"])
    assert run["status"] == "failed" and run["worker"] in cluster.workers
    assert "does not exist" in run["error"] and f"worker {run['worker']}" in run["error"]


def test_live_events_from_a_worker_reach_websockets_on_both_servers(cluster: Cluster) -> None:
    a, b = cluster.servers
    with a.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        seen: dict[str, list[tuple[int, float]]] = {}

        async def watch(server: Any, key: str, run_box: dict[str, str]) -> list[dict[str, Any]]:
            import orjson
            from websockets.asyncio.client import connect

            msgs: list[dict[str, Any]] = []
            seen[key] = []
            async with connect(server.ws_url(chat["id"])) as ws:
                async for text in ws:
                    now = time.time() * 1000
                    msg = orjson.loads(text)
                    msgs.append(msg)
                    if msg.get("op") == "event":
                        seen[key].append((msg["seq"], now - msg["event"]["ts_ms"]))
                    if msg.get("op") == "live":
                        run_box.setdefault(key, "live")
                    if is_run_end(msg):
                        return msgs
            return msgs

        async def main() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            box: dict[str, str] = {}
            ta = asyncio.create_task(watch(a, "a", box))
            tb = asyncio.create_task(watch(b, "b", box))
            while len(box) < 2:
                await asyncio.sleep(0.02)
            await asyncio.to_thread(_post, c, chat["id"], "write a long story about pipes")
            return await asyncio.wait_for(asyncio.gather(ta, tb), 90)

        ma, mb = asyncio.run(main())
        stored = [e["seq"] for e in all_events(c, chat["id"])]
    for msgs in (ma, mb):
        seqs = event_seqs(msgs)
        assert seqs == stored, "every record once, in order, live from the worker"
    lat = sorted(ms for key in ("a", "b") for _, ms in seen[key])
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print(
        f"worker-to-WebSocket latency over {len(lat)} records: "
        f"p50 {statistics.median(lat):.1f} ms, p99 {p99:.1f} ms"
    )


def test_cancel_on_one_server_stops_a_run_on_a_worker(cluster: Cluster) -> None:
    a, b = cluster.servers
    with a.client() as ca, b.client() as cb:
        chat = new_chat(ca, force=True)
        run = _post(ca, chat["id"], "run `sleep 60`")
        pid = poll(lambda: _running(ca, run["id"]), 60)["pid"]
        assert alive(pid)
        r = cb.post(f"/api/runs/{run['id']}/cancel")
        assert r.status_code == 200, r.text
        done = wait_run(cb, run["id"], 30)
        assert done["status"] == "cancelled", (done, cluster.logs())
        poll(lambda: not alive(pid), 30)
        # The chat takes the next prompt at once (its lock is free).
        again = _post(cb, chat["id"], "reply with exactly: after cancel")
        assert wait_run(cb, again["id"])["status"] == "succeeded"


def test_a_killed_worker_interrupts_its_run_and_nothing_is_run_again(cluster: Cluster) -> None:
    a = cluster.servers[0]
    with a.client() as c:
        chat = new_chat(c, force=True)
        run = _post(c, chat["id"], "run `sleep 60`")
        # Running, with the agent's first events stored (the chat has its Cursor chat id).
        running = poll(
            lambda: (r := _running(c, run["id"])) and r["session_id"] and r["last_seq"] >= 5 and r, 60
        )
        before = cluster.invocations()
        name = running["worker"]
        cluster.workers[name].kill()
        poll(lambda: not alive(running["pid"]), 30)  # the owner guard stops the agent's group
        cluster.lose(cluster.workers[name], run["id"])  # (not a minute of --stalled-after)
        done = wait_run(c, run["id"], LOST_WITHIN)
        assert done["status"] == "interrupted", (done, cluster.logs())
        assert name in done["error"]
        events = all_events(c, chat["id"])
        lost = [e for e in events if e["type"] == "worker"]
        assert len(lost) == 1 and lost[0]["subtype"] == "lost"
        reached = max(e["seq"] for e in events if e["run_id"] == run["id"] and e["seq"] < lost[0]["seq"])
        assert lost[0]["payload"]["worker"] == name
        assert lost[0]["payload"]["seq"] == reached, "the seq the run had reached when its worker was lost"
        # The chat works again: on another worker, which starts a new Cursor chat.
        nxt = _post(c, chat["id"], "reply with exactly: still here")
        finished = wait_run(c, nxt["id"])
        assert finished["status"] == "succeeded" and finished["worker"] != name
        events = all_events(c, chat["id"])
        assert any(e["type"] == "context" and e["subtype"] == "reset" for e in events), [
            (e["seq"], e["type"], e["subtype"], e["payload"].get("session_id")) for e in events
        ]
        assert cluster.invocations() == before + 1, "the interrupted run was not run again"
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(1, len(seqs) + 1))
    cluster.worker(name + "-again")


def test_both_api_servers_restarted_mid_run_lose_nothing(cluster: Cluster) -> None:
    a, b = cluster.servers
    with a.client() as c:
        chat = new_chat(c, force=True, stream_partial_output=True)
        chat_id = chat["id"]
    got: list[dict[str, Any]] = []
    with a.client() as c:
        run = _post(c, chat_id, "run `sleep 4`")
        poll(lambda: _running(c, run["id"]), 60)
    got += asyncio.run(ws_collect(b.ws_url(chat_id), lambda m: m.get("op") == "live"))
    a.kill()
    b.kill()
    cluster.servers.remove(a)
    cluster.servers.remove(b)
    a2, b2 = cluster.server(), cluster.server()
    last = event_seqs(got)[-1]
    got += asyncio.run(ws_collect(a2.ws_url(chat_id, last), lambda m: is_run_end(m, run["id"])))
    with b2.client() as c:
        done = wait_run(c, run["id"])
        stored = [e["seq"] for e in all_events(c, chat_id)]
    assert done["status"] == "succeeded", cluster.logs()
    assert event_seqs(got) == stored, "every record exactly once across the restart"


def test_a_lost_listen_connection_is_reestablished(cluster: Cluster) -> None:
    a = cluster.servers[0]
    with a.client() as c:
        chat = new_chat(c)

        async def main() -> list[dict[str, Any]]:
            import orjson
            from websockets.asyncio.client import connect

            msgs: list[dict[str, Any]] = []
            async with connect(a.ws_url(chat["id"])) as ws:
                async for text in ws:
                    msg = orjson.loads(text)
                    msgs.append(msg)
                    if msg.get("op") == "live":
                        killed = await asyncio.to_thread(
                            pg_execute,
                            cluster.db_url,
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE application_name = 'cursor-agent-api-listen' "
                            "AND datname = current_database()",
                        )
                        assert len(killed) == len(cluster.servers)
                        await asyncio.to_thread(_post, c, chat["id"], "reply with exactly: relayed")
                    if is_run_end(msg):
                        return msgs
            return msgs

        msgs = asyncio.run(asyncio.wait_for(main(), 90))
        stored = [e["seq"] for e in all_events(c, chat["id"])]
    assert event_seqs(msgs) == stored
    assert msgs[-1]["event"]["subtype"] in FINAL


def test_sigterm_lets_short_runs_finish_and_interrupts_the_rest(cluster: Cluster) -> None:
    """The short run ends after the SIGTERM, when the test opens its gate (a ``sleep 1`` could
    end before the signal, or outlast a 5 s grace on a loaded machine); the long one outlasts
    the grace (10 s: the short one's end, once its command is over, fits in it however slow
    the machine; and it is over long before the simulator ends the long one's command, 30 s
    after it started)."""
    # An API server and a worker of their own queue: the other workers take none of these runs.
    server = cluster.server("--queue", "term")
    worker = cluster.worker("wterm", "--queue", "term", "--shutdown-grace", "10")
    command, gate = cluster.gate("short")
    with server.client() as c:
        short_chat, long_chat = new_chat(c, force=True), new_chat(c, force=True)
        short = _post(c, short_chat["id"], f"run `{command}`")
        long = _post(c, long_chat["id"], "run `sleep 600`")
        runs = [poll(lambda r=r: _running(c, r["id"]), 60) for r in (short, long)]
        assert {r["worker"] for r in runs} == {"wterm"}
        # both at their commands (their tool calls stored): only the gate holds the short one
        for chat in (short_chat, long_chat):
            poll(lambda chat=chat: any(e["type"] == "tool-call-started" for e in all_events(c, chat["id"])),
                 60)
        worker.proc.send_signal(signal.SIGTERM)
        poll(lambda: "stopping:" in worker.log_text(), 30)
        gate.touch()
        poll(lambda: worker.proc.poll() is not None, 60)  # (a second signal: "stop at once")
        assert worker.stop() == -signal.SIGTERM  # dies from the signal that stopped it
        assert wait_run(c, short["id"], 30)["status"] == "succeeded", cluster.logs()
        stopped = wait_run(c, long["id"], 30)
        assert stopped["status"] == "interrupted"
        assert "worker shut down" in stopped["error"]
        assert not alive(runs[1]["pid"])
    del cluster.workers["wterm"]


def test_the_slow_poll_delivers_what_no_notification_announced(cluster: Cluster) -> None:
    # No NOTIFY at all for a while: records reach the socket through the poll (every 5 s).
    pg_execute(cluster.db_url, "ALTER TABLE events DISABLE TRIGGER events_notify")
    try:
        server = cluster.servers[0]
        with server.client() as c:
            chat = new_chat(c)

            async def main() -> list[dict[str, Any]]:
                import orjson
                from websockets.asyncio.client import connect

                msgs: list[dict[str, Any]] = []
                async with connect(server.ws_url(chat["id"])) as ws:
                    async for text in ws:
                        msg = orjson.loads(text)
                        msgs.append(msg)
                        if msg.get("op") == "live":
                            await asyncio.to_thread(_post, c, chat["id"], "reply with exactly: polled")
                        if is_run_end(msg):
                            return msgs
                return msgs

            msgs = asyncio.run(asyncio.wait_for(main(), 90))
            stored = [e["seq"] for e in all_events(c, chat["id"])]
    finally:
        pg_execute(cluster.db_url, "ALTER TABLE events ENABLE TRIGGER events_notify")
    assert event_seqs(msgs) == stored


def test_a_worker_with_worktrees_runs_each_chat_of_a_repository_in_its_own(cluster: Cluster) -> None:
    import subprocess

    repo = cluster.root / "repo"
    repo.mkdir()
    (repo / "notes.txt").write_text("hello\n")
    for args in (
        ["init", "-q"],
        ["add", "notes.txt"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "1"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    trees = cluster.tmp / "worktrees"
    # A queue of their own: the cluster's other workers take none of these runs.
    server = next((s for s in cluster.servers if "trees" in s.args), None) or cluster.server(
        "--queue", "trees"
    )
    cluster.worker("wtrees", "--queue", "trees", "--worktrees", str(trees))
    with server.client() as c:
        chat = new_chat(c, "repo", force=True)
        run = wait_run(c, _post(c, chat["id"], 'create hello.txt with "Hi"')["id"])
    assert run["status"] == "succeeded" and run["worker"] == "wtrees", cluster.logs()
    assert (trees / chat["id"] / "hello.txt").exists(), "the agent worked in the chat's worktree"
    assert not (repo / "hello.txt").exists(), "the repository's own checkout is untouched"

    # A worktree that cannot be made fails the run with what to do, and no traceback.
    subprocess.run(["git", "init", "-q", str(cluster.root / "empty")], check=True, capture_output=True)
    with server.client() as c:
        chat = new_chat(c, "empty", force=True)
        run = wait_run(c, _post(c, chat["id"], "hello")["id"])
    assert run["status"] == "failed" and run["error_type"] == "WorktreeError", run
    assert "no commit yet" in run["error"] and "worker wtrees" in run["error"], run["error"]
    assert "Traceback" not in cluster.workers["wtrees"].log_text()
