"""Every option that takes a number of seconds refuses what is not one: ``nan`` (click's
``FloatRange`` lets it through: every comparison with it is false) and infinities, as a usage
error (exit 2) naming the option, before anything starts. ``worker --heartbeat nan`` ran a
worker whose heartbeats stopped after the first (``asyncio.sleep(nan)`` never wakes), so that
it counted as stopped while it ran: the case its "at most 30" refusal was made for."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cursor_agent_api.cli import main

OPTIONS = [
    ("run", "--timeout"), ("run", "--idle-timeout"),
    ("serve", "--permission-timeout"), ("serve", "--stalled-after"), ("serve", "--run-timeout"),
    ("worker", "--heartbeat"), ("worker", "--shutdown-grace"), ("worker", "--idle-timeout"),
]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize(("command", "option"), OPTIONS)
def test_a_number_of_seconds_that_is_none_is_refused(command: str, option: str, value: str) -> None:
    args = [command, "--simulate", option, value]
    if command == "run":
        args.append("hello")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (result.exit_code, result.output)
    (line,) = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert f"'{option}'" in line and value in line, line
    assert "Traceback" not in result.output


def test_a_word_for_seconds_is_said_in_words() -> None:
    """``--timeout abc``: "'abc' is not a number of seconds", not click's "is not a valid
    seconds" (the type's name read as a noun)."""
    result = CliRunner().invoke(main, ["run", "--simulate", "--timeout", "abc", "hello"])
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert line == "Error: Invalid value for '--timeout': 'abc' is not a number of seconds.", line
