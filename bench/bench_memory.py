"""Memory bounded by bytes (issue 11, point 4): the server's RSS while an agent writes eight
30 MB lines and a client reads the chat with ``include_raw``, beside the same server with
the byte limits off (the behaviour before: pages, batches and fields bounded by count only).

For each mode, one server process (uvicorn in a subprocess, settings given directly) runs
the simulator replaying a recording of ``--lines`` assistant messages of ``--mb`` MB each
(one line each); while the run goes, a client reads every record of the chat again and
again through ``GET /api/chats/{id}/events?include_raw=true`` (paging on ``has_more``),
and once more after the end. The server's peak RSS is its ``VmHWM`` (``/proc/<pid>/status``).

Usage::

    .venv/bin/python bench/bench_memory.py                 # 8 lines of 30 MB, both modes
    .venv/bin/python bench/bench_memory.py --lines 2 --mb 5 --only limits
    .venv/bin/python bench/bench_memory.py --kind tool --before-src /tmp/base/src

Goal: peak RSS under 300 MB with the limits (the defaults of ``ServerSettings``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson

from cursor_agent_api.sim import wire

BIN = Path(sys.executable).parent
FINAL = {"succeeded", "failed", "cancelled", "interrupted"}
NO_LIMITS = {
    "max_field_bytes": 1 << 40,
    "max_page_bytes": 1 << 40,
    "batch_max_bytes": 1 << 40,
    "subscriber_queue_bytes": 1 << 40,
}

SERVER = """
import json, sys
from pathlib import Path
import uvicorn
from cursor_agent_api.server import ServerSettings, create_app
cfg = json.loads(sys.argv[1])
settings = ServerSettings(token=cfg["token"], port=cfg["port"], database_url=cfg["db"],
                          roots=(Path(cfg["root"]),), agent_binary=cfg["sim"],
                          agent_env=cfg["env"], **cfg["limits"])
uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=cfg["port"],
                              log_level="warning")).run()
"""


def write_script(path: Path, lines: int, mb: int, kind: str) -> Path:
    """init, prompt, ``lines`` lines of ``mb`` MB each, a result.

    ``kind``: ``unknown`` (an event of a type this library does not know, kept whole in the
    log: what the server alone pays), ``tool`` (a read of an ``mb`` MB file: started, then a
    completion of ``mb`` MB), ``assistant`` (assistant messages of ``mb`` MB).
    """
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    mcid = "mc-1"
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(sid, "big")))
        for i in range(lines):
            text = (f"line {i} " + "x" * 99 + "\n") * (mb * 1024 * 1024 // 108)
            if kind == "assistant":
                f.write(wire.encode(wire.assistant_final(sid, text), checked=False))
            elif kind == "unknown":
                f.write(orjson.dumps({"type": "x_big_blob", "session_id": sid, "blob": text}) + b"\n")
            else:
                call, path_ = f"call_{i}", f"/ws/big{i}.log"
                args = wire.read_args(path_)
                f.write(wire.encode(wire.tool_call_started(
                    sid, call, "readToolCall", args, model_call_id=mcid, started_at_ms=1,
                    timestamp_ms=1)))
                done = wire.tool_call_completed(
                    sid, call, "readToolCall", wire.read_success(path_, text), args=args,
                    completed_at_ms=2, model_call_id=mcid, started_at_ms=1, timestamp_ms=1,
                )
                f.write(wire.encode(done, checked=False))
        f.write(wire.encode(wire.result_success(sid, "r", "done", 1, wire.usage(1, 2))))
    return path


def _status(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_mode(
    name: str, limits: dict[str, Any], script: Path, work: Path, src: str | None = None
) -> dict[str, Any]:
    root = work / f"root-{name}"
    (root / "p").mkdir(parents=True)
    db = work / f"{name}.sqlite3"
    port = _free_port()
    token = uuid.uuid4().hex
    cfg = {
        "token": token,
        "port": port,
        "db": f"sqlite+aiosqlite:///{db}",
        "root": str(root),
        "sim": str(BIN / "cursor-agent-sim"),
        "env": {"CURSOR_AGENT_SIM_SCRIPT": str(script), "CURSOR_CONFIG_DIR": str(work / f"cfg-{name}")},
        "limits": limits,
    }
    env = dict(os.environ)
    if src is not None:  # another checkout's code (the code before this change)
        env["PYTHONPATH"] = src
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, json.dumps(cfg)], stderr=subprocess.DEVNULL, env=env
    )
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"token {token}"}
    client = httpx.Client(base_url=url, headers=headers, timeout=600)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if client.get("/api/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"{name}: the server did not start")
            time.sleep(0.1)
        base_rss = _status(proc.pid, "VmRSS")
        chat = client.post("/api/chats", json={"workspace": "p", "options": {"trust": True}}).json()
        samples: list[int] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                samples.append(_status(proc.pid, "VmRSS"))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
        largest = 0
        read_bytes = 0
        reads = 0

        def read_all() -> None:
            nonlocal largest, read_bytes, reads
            after = 0
            while True:
                r = client.get(
                    f"/api/chats/{chat['id']}/events", params={"after_seq": after, "include_raw": True}
                )
                r.raise_for_status()
                largest = max(largest, len(r.content))
                read_bytes += len(r.content)
                body = r.json()
                after = body["next_after_seq"]
                if not body["has_more"]:
                    break
            reads += 1

        t0 = time.monotonic()
        run = client.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "big"}).json()
        while client.get(f"/api/runs/{run['id']}").json()["status"] not in FINAL:
            if os.environ.get("BENCH_NO_READ"):
                time.sleep(0.2)
                continue
            read_all()
        elapsed = time.monotonic() - t0
        if os.environ.get("BENCH_PHASES"):
            peak_run = _status(proc.pid, "VmHWM") / 2**20
            print(f"  {name}: peak after the run, before the last read: {peak_run:.0f} MB")
        if not os.environ.get("BENCH_NO_READ"):
            read_all()
        final = client.get(f"/api/runs/{run['id']}").json()
        stop.set()
        sampler.join()
        peak = _status(proc.pid, "VmHWM")
        db_size = sum(p.stat().st_size for p in work.glob(f"{name}.sqlite3*"))
        return {
            "mode": name,
            "status": final["status"],
            "base_rss_mb": base_rss / 2**20,
            "peak_rss_mb": peak / 2**20,
            "median_rss_mb": sorted(samples)[len(samples) // 2] / 2**20 if samples else 0.0,
            "largest_answer_mb": largest / 2**20,
            "full_reads": reads,
            "read_mb": read_bytes / 2**20,
            "run_s": elapsed,
            "db_mb": db_size / 2**20,
        }
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=8)
    ap.add_argument("--mb", type=int, default=30)
    ap.add_argument("--only", choices=["limits", "no-limits", "before"])
    ap.add_argument(
        "--before-src",
        help="the src/ directory of the code before (e.g. `git archive dae79fb src | tar -x -C /tmp/base`"
        " then /tmp/base/src): adds a third mode, that code with its defaults",
    )
    ap.add_argument("--kind", choices=["unknown", "tool", "assistant"], default="unknown")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        work = Path(tmp)
        script = write_script(work / "big.ndjson", args.lines, args.mb, args.kind)
        size = script.stat().st_size / 2**20
        print(f"recording: {args.lines} {args.kind} lines of {args.mb} MB ({size:.0f} MB)")
        modes: list[tuple[str, dict[str, Any], str | None]] = [
            ("limits", {}, None),
            ("no-limits", NO_LIMITS, None),
        ]
        if args.before_src:
            modes.append(("before", {}, args.before_src))
        rows = [run_mode(n, lim, script, work, src) for n, lim, src in modes if args.only in (None, n)]
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in row.values()))
    for other in rows[1:]:
        ratio = rows[0]["peak_rss_mb"] / other["peak_rss_mb"]
        print(f"peak RSS, limits / {other['mode']}: {ratio:.2f}")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
