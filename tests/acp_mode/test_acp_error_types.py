"""The agent's error answers in ACP mode become the typed errors print mode raises: a login
it needs, an API key it refused (ACP.md §2: ``-32603`` "Failed to initialize session
services"), and what print mode's stderr rules name (a usage limit, a model it cannot use),
read by the same rules (``runtime.stderr.known_failure``). Review of ACP facts, 2026-11-24:
finding 7 and the suspected rate/usage-limit item."""

from __future__ import annotations

import pytest

from cursor_agent_api.errors import (
    AcpRequestError,
    AuthenticationError,
    CursorAgentError,
    InvalidModelError,
    UsageLimitError,
)
from cursor_agent_api.runtime.acp_transport import AcpTransport


def _typed(method: str, code: int, detail: str) -> CursorAgentError:
    return AcpTransport.typed_error(AcpRequestError.of(method, code, detail))


def test_an_invalid_api_key_is_an_authentication_error_naming_the_key() -> None:
    err = _typed("session/new", -32603, "Failed to initialize session services")
    assert isinstance(err, AuthenticationError)
    assert "Failed to initialize session services" in str(err) and "API key" in str(err)
    assert "CURSOR_API_KEY" in str(err) and "CURSOR_API_KEY" in err.cli_message()
    assert "mode and model ids" not in str(err)  # AcpRequestError's hint is not about a key


@pytest.mark.parametrize(("detail", "cls"), [
    ("You've hit your usage limit", UsageLimitError),
    ("Usage limit reached for this billing period", UsageLimitError),
    ("Invalid API key", AuthenticationError),
])
def test_print_modes_rules_name_the_agents_error_answers(detail: str, cls: type) -> None:
    err = _typed("session/prompt", -32603, detail)
    assert type(err) is cls and detail in str(err)


@pytest.mark.parametrize("method", ["session/set_config_option", "session/prompt"])
@pytest.mark.parametrize("detail", ["Invalid model value: gpt-9", "Cannot use this model: gpt-9"])
def test_a_model_the_agent_refuses_stays_an_acp_request_error(method: str, detail: str) -> None:
    """Print mode's ``InvalidModelError`` sends the user to print mode's slugs
    (``list_models()``), which ACP mode refuses too: ACP's model ids are the agent's own
    (``session_setup()``), as the ``AcpRequestError`` says (review of the change, finding 1)."""
    err = _typed(method, -32603, detail)
    assert type(err) is AcpRequestError and err.method == method
    assert "model ids are the agent's own" in err.cli_message(), err.cli_message()
    assert not isinstance(err, InvalidModelError)


@pytest.mark.parametrize("detail", ["Invalid mode ID: yolo", "Internal error",
                                    "Unknown config option: effort"])
def test_other_error_answers_stay_acp_request_errors(detail: str) -> None:
    err = _typed("session/set_mode", -32603, detail)
    assert type(err) is AcpRequestError and err.method == "session/set_mode"
