"""``chat --help`` offers only what ``chat`` takes: ``--output auto|live|text`` (JSON is
``run``'s) and a ``--partial`` whose help names no ``--output-format`` (``chat`` has none)."""

from __future__ import annotations

from click.testing import CliRunner

from cursor_agent_api.cli import main


def _help(command: str) -> str:
    result = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_chat_help_offers_only_what_chat_takes() -> None:
    text = _help("chat")
    assert "--output [auto|live|text]" in text
    assert "ndjson" not in text and "json:" not in text and "|json" not in text
    assert "--output-format" not in text


def test_run_help_keeps_its_json_outputs() -> None:
    text = _help("run")
    assert "--output [auto|live|text|json|ndjson]" in text
    assert "--output-format [text|json|stream-json]" in text


def test_chat_refuses_json_output_as_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["chat", "--simulate", "--trust", "-o", "json"], input="hi\n")
    assert result.exit_code == 2
    assert "'json' is not one of 'auto', 'live', 'text'" in result.output
