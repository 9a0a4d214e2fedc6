"""AgentConfig validation, argv/env building, stderr handling: plain function calls."""

from __future__ import annotations

import asyncio

import pytest

from cursor_agent_api import (
    AgentConfig,
    AgentProcessError,
    AuthenticationError,
    InvalidModelError,
    OutputFormat,
    SessionError,
    UsageLimitError,
    WorkspaceTrustError,
)
from cursor_agent_api.protocol import strip_ansi
from cursor_agent_api.runtime.argv import build_argv, build_env, resolve_binary
from cursor_agent_api.runtime.commands import parse_models, parse_status
from cursor_agent_api.runtime.portal import LoopThread
from cursor_agent_api.runtime.sinks import END, STOPPED, ThreadEventQueue
from cursor_agent_api.runtime.stderr import StderrTail, classify_failure
from cursor_agent_api.sim import messages


@pytest.mark.parametrize(
    ("fields", "exc", "words"),
    [
        ({"timeout": 0}, ValueError, "AgentConfig.timeout"),
        ({"timeout": -5}, ValueError, "positive"),
        ({"timeout": "10"}, TypeError, "AgentConfig.timeout"),
        ({"idle_timeout": float("nan")}, ValueError, "idle_timeout"),
        ({"kill_grace": 0}, ValueError, "kill_grace"),
        ({"result_grace": -1}, ValueError, "result_grace"),
        ({"model": ""}, ValueError, "AgentConfig.model must not be empty"),
        ({"model": "gpt 5"}, ValueError, "no spaces"),
        ({"workspace": 3}, TypeError, "workspace"),
        ({"headers": "X-A: 1"}, TypeError, "list of strings"),
        ({"headers": ["no colon"]}, ValueError, "Name: Value"),
        ({"headers": ["X-A: 1\nX-B: 2"]}, ValueError, "Name: Value"),
        ({"extra_args": [1]}, TypeError, "extra_args"),
        ({"env": {"A=B": "1"}}, ValueError, "env"),
        ({"env": {"A": 1}}, TypeError, "env"),
        ({"max_line_bytes": 0}, ValueError, "max_line_bytes"),
        ({"max_line_bytes": 2**64}, ValueError, "max_line_bytes must be at most"),  # JSON: 64 bits
        ({"stderr_tail_bytes": 2**64}, ValueError, "stderr_tail_bytes must be at most"),
        ({"force_approve": "yes"}, TypeError, "force_approve"),
        ({"output_format": "xml"}, ValueError, "output_format"),
        ({"api_key": "a\nb"}, ValueError, "api_key"),
        ({"agent_binary": ""}, ValueError, "agent_binary"),
        ({"timeout": 10**400}, ValueError, "AgentConfig.timeout .*too large"),
        ({"kill_grace": -10**400}, ValueError, "AgentConfig.kill_grace"),
        ({"idle_timeout": 10**5000}, ValueError, "AgentConfig.idle_timeout"),  # no repr either
    ],
)
def test_config_validation_names_the_field(fields, exc, words):
    with pytest.raises(exc, match=words):
        AgentConfig(**fields)


@pytest.mark.parametrize("value", ["", "  ", None])
def test_an_unset_agent_binary_is_refused_without_suggesting_none(value):
    with pytest.raises(ValueError, match="must name the agent executable") as info:
        AgentConfig(agent_binary=value)
    assert "use None" not in str(info.value)


def test_config_overrides_and_repr():
    config = AgentConfig(model="a", api_key="sk-secret", output_format="json")
    assert config.output_format is OutputFormat.JSON
    assert "sk-secret" not in repr(config)
    assert config.with_overrides(model="b").model == "b" and config.model == "a"
    with pytest.raises(TypeError, match="unknown AgentConfig field 'modle'"):
        config.with_overrides(modle="b")
    with pytest.raises(ValueError, match="timeout"):
        config.with_overrides(timeout=-1)
    assert AgentConfig(workspace=__import__("pathlib").Path("/tmp")).workspace == "/tmp"


CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"


def test_argv_has_every_flag_and_never_the_prompt_or_key():
    config = AgentConfig(
        workspace="/w", model="gpt-5", force_approve=True, approve_mcps=True, api_key="sk-x",
        headers=["X-A: 1", "X-B: 2"], stream_partial_output=True, trust=True, resume=CHAT,
        extra_args=["--foo"],
    )
    argv = build_argv(config, binary="agent")
    assert argv == [
        "agent", "--print", "--output-format", "stream-json", "--stream-partial-output",
        "--trust", "--force", "--approve-mcps", "--model=gpt-5", "--workspace=/w",
        f"--resume={CHAT}", "--header=X-A: 1", "--header=X-B: 2", "--foo",
    ]
    assert not any("sk-x" in a for a in argv)
    assert build_argv(AgentConfig(), binary="agent") == [
        "agent", "--print", "--output-format", "stream-json"]


def test_env_merge():
    env = build_env(AgentConfig(api_key="k", env={"A": "1", "DROP": None, "B": "2"}),
                    base={"PATH": "/bin", "DROP": "x", "A": "0", "CURSOR_API_KEY": "old"})
    assert env == {"PATH": "/bin", "A": "1", "B": "2", "CURSOR_API_KEY": "k"}


def test_resolve_binary_falls_back_to_cursor_agent(tmp_path):
    exe = tmp_path / "cursor-agent"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert resolve_binary(AgentConfig(), {"PATH": str(tmp_path)}) == str(exe)
    assert resolve_binary(AgentConfig(agent_binary="other"), {"PATH": str(tmp_path)}) == "other"


def test_stderr_tail_is_bounded_and_stripped():
    tail = StderrTail(limit=100)
    for i in range(10_000):
        tail.feed(f"\x1b[31mline {i}\x1b[0m\n".encode())
    text = tail.text()
    assert len(text.encode()) <= 100 and text.endswith("line 9999\n")
    assert "\x1b" not in text and text.startswith("line ")  # starts at a whole line
    assert tail.truncated and tail.total > 100_000


@pytest.mark.parametrize(
    ("stderr", "error"),
    [
        (messages.auth_required(), AuthenticationError),
        ("Error: Authentication required. Please run 'cursor-agent login' first", AuthenticationError),
        (messages.invalid_api_key(), AuthenticationError),
        (messages.trust_required("/ws"), WorkspaceTrustError),
        (messages.invalid_model("x", ["a"]), InvalidModelError),
        (messages.malformed_resume("abc"), SessionError),
        (messages.chat_busy("c1"), SessionError),
        (messages.usage_limit(), UsageLimitError),
        ("segmentation fault", AgentProcessError),
        ("", AgentProcessError),
    ],
)
def test_classify_protocol_stderr_texts(stderr, error):
    exc = classify_failure(1, stderr)
    assert type(exc) is error and exc.exit_code == 1 and exc.stderr == strip_ansi(stderr)
    assert "code 1" in str(exc) and exc.remedy in str(exc)
    assert "\x1b" not in str(exc) and "│" not in str(exc)


def test_parse_models_and_status():
    models = parse_models("\x1b[1mAvailable models\x1b[0m\n\nauto - Auto\n"
                          "sonnet-4.6 - Claude 4.6 Sonnet (current)\n  gpt-5 - GPT-5\n")
    assert [(m.slug, m.display_name, m.current) for m in models] == [
        ("auto", "Auto", False), ("sonnet-4.6", "Claude 4.6 Sonnet", True),
        ("gpt-5", "GPT-5", False)]
    assert parse_status("Not logged in").logged_in is False
    s = parse_status("\x1b[32m✓\x1b[0m Logged in as ada@example.com\n")
    assert s.logged_in and s.account == "ada@example.com"


def test_thread_queue_back_pressure_and_stop():
    drained = []
    q = ThreadEventQueue(high_water=4, low_water=2)
    q.put([1, 2, 3, 4], [(), (), (), ()])
    assert q.full and q.pause(lambda: drained.append(True))
    assert q.get() == ([1, 2, 3, 4], [(), (), (), ()]) and drained == [True]
    q.put([5], [()])
    q.close()
    assert q.get() == ([5], [()]) and q.get() is END
    q2 = ThreadEventQueue()
    q2.stop()
    q2.put([1], [()])  # dropped after stop
    assert q2.get() is STOPPED and q2.stopped and not q2.full


def test_loop_thread_refcount_and_inside_running_loop():
    portal = LoopThread()
    loop = portal.acquire()
    portal.acquire()
    portal.release()
    assert portal.call(asyncio.sleep, 0, 5) == 5 and loop.is_running()

    async def inside() -> int:
        return portal.call(asyncio.sleep, 0, 7)  # a sync call from within a running loop

    assert asyncio.run(inside()) == 7
    thread = portal._thread
    portal.release()
    assert thread is not None and not thread.is_alive() and loop.is_closed()
    with pytest.raises(RuntimeError):
        _ = portal.loop


def test_text_output_format(sim, run_query):
    r = run_query(sim(output_format="text"), "What is 2 + 2?")
    assert r.success and r.result == "4\n" and r.exit_code == 0  # stdout, exactly


def test_json_output_format(sim, run_query):
    r = run_query(sim(output_format="json"), "What is 2 + 2?")
    assert r.success and r.result == "4" and len(r.events) == 1


def test_prompt_must_be_text(sim):
    from cursor_agent_api import CursorAgentClient

    with CursorAgentClient(sim()) as client, pytest.raises(TypeError, match="prompt"):
        client.query(None)  # type: ignore[arg-type]


def test_stand_in_agent_exit_zero_without_result(stand_in_agent):
    from cursor_agent_api import CursorAgentClient

    script = stand_in_agent("echo just text")
    with CursorAgentClient(AgentConfig(agent_binary=str(script))) as client:
        r = client.query("hi")
    assert not r.success and r.exit_code == 0 and isinstance(r.exception, AgentProcessError)
    assert "without a result" in r.error and r.events[0].type.value == "raw"
    assert r.events[-2].type.value == "error" and r.events[-2].data["code"] == "no_result"
    assert r.events[-1].type.value == "result:error" and r.events[-1].data["added_by_client"]
