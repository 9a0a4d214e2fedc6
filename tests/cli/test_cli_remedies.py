"""Every typed error has a remedy in the command line's words (the docstring examples of
every module run through ``--doctest-modules``, see pyproject.toml)."""

from __future__ import annotations

import pytest

from cursor_agent_api import errors

ERRORS = [getattr(errors, name) for name in errors.__all__ if name != "CursorAgentError"]


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_each_error_has_a_cli_remedy_without_python(cls: type[errors.CursorAgentError]) -> None:
    assert cls.remedy and cls.cli_remedy
    for python in ("=True", "=...", "AgentConfig", "client.", "()", "(CLI:", "{", "|}"):
        assert python not in cls.cli_remedy, cls.cli_remedy
    assert "{" not in cls.remedy and "|" not in cls.remedy.replace("| bash", "")
    err = cls("it failed")
    assert str(err) == f"it failed — {cls.remedy}"  # Python's phrasing is unchanged
    assert err.cli_message() == f"it failed — {cls.cli_remedy}"


def test_python_remedies_still_name_the_python_settings() -> None:
    assert "trust=True" in errors.WorkspaceTrustError.remedy
    assert errors.WorkspaceTrustError.cli_remedy == "pass --trust, or --force"
    assert "--model" in errors.InvalidModelError.cli_remedy
    assert "--timeout / --idle-timeout" in errors.AgentTimeoutError.cli_remedy
