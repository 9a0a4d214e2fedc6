"""The stderr classifier stays linear: it runs on the event loop as a failed turn ends.

``model .* not available`` rescanned a long line of ``model model …`` from every ``model``
(64 KiB took 2 s on the loop, 1 MiB would take minutes). Each pattern now matches within
one line and within a bounded span, and only the last :data:`CLASSIFIED_CHARS` of the tail
are classified. No timing here: the structural check names the unbounded repeat, and the
big inputs are run under a hang guard.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from cursor_agent_api.errors import AgentProcessError, AuthenticationError, InvalidModelError
from cursor_agent_api.runtime import stderr as stderr_module
from cursor_agent_api.runtime.stderr import CLASSIFIED_CHARS, classify_failure
from cursor_agent_api.sim import messages

try:  # the parser of the re module (3.11: re._parser; before: sre_parse)
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]

_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}


def _unbounded_repeats(parsed: Any) -> list[str]:
    """The repeats of a parsed pattern with no upper bound (``*``, ``+``, ``{n,}``)."""
    found: list[str] = []
    for op, arg in parsed:
        name = str(op)
        if name in _REPEATS:
            low, high, sub = arg
            if high == sre_parse.MAXREPEAT:
                found.append(f"{name}({low}, unbounded)")
            found += _unbounded_repeats(sub)
        elif name == "SUBPATTERN":
            found += _unbounded_repeats(arg[-1])
        elif name == "BRANCH":
            for branch in arg[1]:
                found += _unbounded_repeats(branch)
        elif name in ("ASSERT", "ASSERT_NOT"):
            found += _unbounded_repeats(arg[1])
    return found


@pytest.mark.parametrize("rule", range(len(stderr_module._RULES)))
def test_every_stderr_pattern_is_bounded(rule: int) -> None:
    pattern = stderr_module._RULES[rule][0]
    assert _unbounded_repeats(sre_parse.parse(pattern.pattern, pattern.flags)) == [], \
        pattern.pattern


def test_the_structural_check_sees_an_unbounded_repeat() -> None:
    assert _unbounded_repeats(sre_parse.parse(r"model .* not available", re.I))
    assert not _unbounded_repeats(sre_parse.parse(r"model .{0,9} not", re.I))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("word", ["model ", "hit your ", "model is ", "usage "])
def test_every_pattern_is_linear_on_a_long_line_of_near_misses(word: str) -> None:
    # 1 MiB of one line repeating the start of a rule: minutes if any pattern rescans the
    # line from each start (quadratic), well under a second when each try is bounded
    line = word * (1024 * 1024 // len(word))
    for pattern, _, _ in stderr_module._RULES:
        assert pattern.search(line) is None


@pytest.mark.timeout(60)
def test_a_huge_tail_of_near_misses_is_classified_as_a_plain_failure() -> None:
    stderr = ("model " * (4 * 1024 * 1024 // 6)) + "\n"
    exc = classify_failure(1, stderr)
    assert type(exc) is AgentProcessError and exc.stderr == stderr


def test_the_agent_s_last_words_are_classified_after_a_flood() -> None:
    flood = "".join(f"debug line {i}\n" for i in range(20_000))
    assert len(flood) > 4 * CLASSIFIED_CHARS
    exc = classify_failure(1, flood + messages.auth_required() + "\n")
    assert type(exc) is AuthenticationError and exc.stderr.startswith("debug line 0\n")
    exc = classify_failure(1, flood + messages.invalid_model("x", ["a", "b"]) + "\n")
    assert type(exc) is InvalidModelError


@pytest.mark.parametrize("line", [
    "Model gpt-9 is not available",
    "Error: the model 'claude-opus-5-thinking-max' is not available on your plan",
])
def test_model_not_available_is_still_an_invalid_model(line: str) -> None:
    assert type(classify_failure(1, line + "\n")) is InvalidModelError


def test_model_and_not_available_on_different_lines_are_not_joined() -> None:
    exc = classify_failure(1, "loading model\nnetwork not available\n")
    assert type(exc) is AgentProcessError
