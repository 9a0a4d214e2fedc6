"""The simulator's permission rules (``permissions.allow`` / ``permissions.deny`` of
``<config>/cli-config.json`` and the project's ``.cursor/cli.json``) for every tool kind, in
print mode and under ``acp``: deny beats allow, ``--force`` allows everything not denied
(MCP.md §5 [doc:CP]); deny rules ``Shell(*)``, ``Read(**)``, ``Write(**)`` fence even under
``agent --force acp`` while a ``WebFetch(*)`` deny is ignored (ACP.md §6 [obs:RH]); a denied
call ends ``permissionDenied`` in stream-json (PROTOCOL.md §3.5). Audit 11 found the rules
honoured for MCP calls only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .acp_peer import Peer, allow_once, reject_once
from .conftest import Sim

DENY_ALL = {"permissions": {"allow": [], "deny": ["Shell(*)", "Read(**)", "Write(**)"]}}


def _config(sim: Sim, rules: dict[str, Any]) -> None:
    sim.config_dir.mkdir(parents=True, exist_ok=True)
    (sim.config_dir / "cli-config.json").write_text(json.dumps(rules))


def _outcomes(stdout: bytes, kind: str) -> list[dict[str, Any]]:
    """The ``result`` of every completed ``kind`` call."""
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e["tool_call"][kind]["result"] for e in events
            if e.get("type") == "tool_call" and e.get("subtype") == "completed" and kind in e["tool_call"]]


def _asks(peer: Peer) -> list[dict[str, Any]]:
    return [f for f in peer.frames if f.get("method") == "session/request_permission"]


def _calls(peer: Peer, sid: str) -> dict[str, dict[str, Any]]:
    """Each tool call's frames merged, by id."""
    out: dict[str, dict[str, Any]] = {}
    for u in peer.updates(sid):
        if u["sessionUpdate"] in ("tool_call", "tool_call_update"):
            out.setdefault(u["toolCallId"], {}).update(u)
    return out


# ---- print mode -------------------------------------------------------------------------------------


def test_print_force_a_denied_shell_ends_permission_denied_and_does_not_run(sim: Sim, ws: Path) -> None:
    _config(sim, DENY_ALL)
    run = sim.stream("--force", "run `touch shell-ran.txt`")
    assert run.returncode == 0, run.err
    (outcome,) = _outcomes(run.stdout, "shellToolCall")
    assert list(outcome) == ["permissionDenied"]
    assert outcome["permissionDenied"]["reason"]
    assert not (ws / "shell-ran.txt").exists()


def test_print_an_allow_listed_shell_runs_without_force(sim: Sim, ws: Path) -> None:
    _config(sim, {"permissions": {"allow": ["Shell(touch)"], "deny": []}})
    run = sim.stream("run `touch allowed.txt`")
    (outcome,) = _outcomes(run.stdout, "shellToolCall")
    assert "success" in outcome
    assert (ws / "allowed.txt").exists()
    # another command is still rejected, as recording 07
    (other,) = _outcomes(sim.stream("run `echo hi`").stdout, "shellToolCall")
    assert list(other) == ["rejected"]


def test_print_deny_beats_allow_and_the_project_file_counts(sim: Sim, ws: Path) -> None:
    _config(sim, {"permissions": {"allow": ["Shell(touch)"]}})
    (ws / ".cursor").mkdir()
    (ws / ".cursor" / "cli.json").write_text(json.dumps({"permissions": {"deny": ["Shell(touch:*)"]}}))
    (outcome,) = _outcomes(sim.stream("--force", "run `touch x.txt`").stdout, "shellToolCall")
    assert list(outcome) == ["permissionDenied"]
    assert not (ws / "x.txt").exists()
    # the ``command:args`` rule names touch only
    (ls,) = _outcomes(sim.stream("--force", "run `ls`").stdout, "shellToolCall")
    assert "success" in ls


def test_print_denied_reads_and_writes(sim: Sim, ws: Path) -> None:
    _config(sim, {"permissions": {"deny": ["Read(**)", "Write(*.md)"]}})
    run = sim.stream("read notes.txt")
    (read,) = _outcomes(run.stdout, "readToolCall")
    assert list(read) == ["permissionDenied"]
    assert "alpha" not in run.stdout.decode()
    (edit,) = _outcomes(sim.stream('create new.md with "x"').stdout, "editToolCall")
    assert list(edit) == ["permissionDenied"]
    assert not (ws / "new.md").exists()
    # a path the rule does not cover is written
    (other,) = _outcomes(sim.stream('create new.txt with "x"').stdout, "editToolCall")
    assert list(other) == ["success"]
    assert (ws / "new.txt").read_text() == "x\n"


# ---- acp ----------------------------------------------------------------------------------------------


def test_acp_force_deny_rules_fence_shell_reads_and_writes(sim: Sim, ws: Path) -> None:
    _config(sim, DENY_ALL)
    (ws / "notes.txt").write_text("secret\n")
    peer = Peer.start(sim, "--force")
    peer.init()
    sid = peer.new_session(ws)
    for prompt in ("run `touch shell-ran.txt`", "read notes.txt", 'create written.txt with "x"'):
        assert peer.prompt(sid, prompt)["result"]["stopReason"] == "end_turn"
    assert not (ws / "shell-ran.txt").exists() and not (ws / "written.txt").exists()
    assert not _asks(peer)
    calls = _calls(peer, sid)
    assert "secret" not in json.dumps(calls)
    assert all(c["status"] == "completed" and "rawOutput" not in c for c in calls.values())
    (read,) = [c for c in calls.values() if c["kind"] == "read"]
    assert read["content"] == [{"type": "content", "content": {"type": "text", "text": "Permission denied"}}]
    peer.close()


def test_acp_a_denied_call_is_not_asked_and_a_web_fetch_deny_is_ignored(sim: Sim, ws: Path) -> None:
    _config(sim, {"permissions": {"allow": ["Shell(touch)"], "deny": ["Shell(touch)", "WebFetch(*)"]}})
    peer = Peer.start(sim)
    peer.init()
    sid = peer.new_session(ws)
    peer.handlers["session/request_permission"] = allow_once
    peer.prompt(sid, "run `touch denied.txt`")
    assert not _asks(peer)
    assert not (ws / "denied.txt").exists()
    peer.prompt(sid, "fetch https://example.com/page")
    assert [a["params"]["toolCall"]["kind"] for a in _asks(peer)] == ["fetch"]
    peer.close()


BRACKETED = "https://[docs.example.com]/api"  # urllib: ValueError "Invalid IPv6 URL"


def test_acp_a_fetch_of_a_url_that_does_not_parse_is_asked_as_print_mode_rejects_it(
        sim: Sim, ws: Path) -> None:
    # audit 13: the rules' urlsplit raised, and the whole turn failed (-32603 "Invalid IPv6 URL")
    peer = Peer.start(sim)
    peer.init()
    sid = peer.new_session(ws)
    peer.handlers["session/request_permission"] = reject_once
    assert peer.prompt(sid, f"fetch {BRACKETED}")["result"]["stopReason"] == "end_turn"
    (asked,) = _asks(peer)
    assert asked["params"]["toolCall"]["kind"] == "fetch"
    # no host: the URL is the token (as the simulator's planner reads it from the prompt)
    assert "Not in allowlist: https://[docs.example.com" in json.dumps(asked)
    peer.close()
    run = sim.stream(f"fetch {BRACKETED}")  # print mode: rejected, the turn succeeds
    assert run.returncode == 0, run.err
    forced = sim.stream("--force", f"fetch {BRACKETED}")  # the rules are read under --force
    assert forced.returncode == 0, forced.err


def test_acp_the_project_files_deny_rules_count_its_allow_rules_do_not(sim: Sim, ws: Path) -> None:
    (ws / ".cursor").mkdir()
    rules = {"permissions": {"allow": ["Shell(touch)"], "deny": ["Write(**)"]}}
    (ws / ".cursor" / "cli.json").write_text(json.dumps(rules))
    peer = Peer.start(sim)
    peer.init()
    sid = peer.new_session(ws)
    peer.handlers["session/request_permission"] = allow_once
    peer.prompt(sid, 'create written.txt with "x"')
    assert not (ws / "written.txt").exists()
    peer.prompt(sid, "run `touch listed.txt`")
    assert [a["params"]["toolCall"]["kind"] for a in _asks(peer)] == ["execute"]  # asked, not listed
    assert (ws / "listed.txt").exists()
    peer.close()


@pytest.mark.parametrize("rule", ["Shell(touch)", "Shell(touch:*)", "Shell(*)"])
def test_acp_force_honours_each_shell_rule_form(sim: Sim, ws: Path, rule: str) -> None:
    _config(sim, {"permissions": {"deny": [rule]}})
    peer = Peer.start(sim, "--force")
    peer.init()
    sid = peer.new_session(ws)
    peer.prompt(sid, "run `touch a.txt`")
    assert not (ws / "a.txt").exists()
    peer.prompt(sid, "run `echo fine`")
    ran = [c for c in _calls(peer, sid).values() if "rawOutput" in c]
    assert [c["rawOutput"]["stdout"] for c in ran] == ([] if rule == "Shell(*)" else ["fine\n"])
    peer.close()


# ---- hostile files (review 50) ------------------------------------------------------------------------


def test_a_config_file_nested_too_deep_for_json_is_ignored_and_the_turn_runs(sim: Sim, ws: Path) -> None:
    # 3,000 '[' made json.loads raise RecursionError, which the reader did not catch: the turn
    # died mid-stream with a traceback, no result
    _config(sim, {})
    (ws / ".cursor").mkdir()
    (ws / ".cursor" / "cli.json").write_text("[" * 3000)
    run = sim.stream("--force", "run `touch ran.txt`")
    assert run.returncode == 0, run.err
    (outcome,) = _outcomes(run.stdout, "shellToolCall")
    assert "success" in outcome and (ws / "ran.txt").exists()


def test_a_huge_pattern_costs_linear_time() -> None:
    # fnmatch's translation is quadratic on unclosed '[': 100,000 of them took 192 s for one
    # verdict (this test then runs into pytest-timeout); only '*' is a wildcard
    # (docs/simulator.md), so the rest is matched as it is
    from cursor_agent_api.sim.mcp_config import Rules, call_token

    token = call_token("shellToolCall", "a" * 5000 + " x", {}, Path("/ws"))
    for pattern in ("[" * 200_000, "*a" * 20_000 + "b", "a*" * 100_000, "?" * 200_000):
        assert Rules(deny=(f"Shell({pattern})",)).verdict(token, force=True).kind == "allow"
    assert Rules(deny=("Shell(aaa*a[b]x*)",)).verdict(
        call_token("shellToolCall", "aaaa[b]x y", {}, Path("/ws")), force=True).kind == "deny"
