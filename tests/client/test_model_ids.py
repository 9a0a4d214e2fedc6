"""A ``model`` is checked by one rule (``config.MODEL_ID_PATTERN``), in the library and in the
server's ``POST /api/chats``: the slugs of ``agent models`` and the ACP ids docs/acp.md names
(``default[]``, ``claude-opus-5[thinking=true]``, ``gpt-5[effort=high]``) pass; what could be
an option or splits into words is refused, with a message that states that rule."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cursor_agent_api import AgentConfig
from cursor_agent_api.server.routes import ChatCreate

GOOD = ["gpt-5", "sonnet-4.6", "x@y", "default[]", "gpt-5[]", "claude-opus-5[thinking=true]",
        "gpt-5[effort=high]", "gpt-5[effort=high,fast=true]"]
BAD = ["gpt 5", "-x", "a;rm", "a$(id)", "gpt-5[a b]", "gpt-5[x]y", "a=b", "[x]", ""]


@pytest.mark.parametrize("model", GOOD)
@pytest.mark.parametrize("transport", ["print", "acp"])
def test_documented_model_ids_are_taken_by_the_library_and_the_server(model: str,
                                                                     transport: str) -> None:
    assert AgentConfig(model=model, transport=transport).model == model
    assert ChatCreate(workspace="p", model=model).model == model


@pytest.mark.parametrize("model", BAD)
def test_other_names_are_refused_by_both_with_the_rule(model: str) -> None:
    with pytest.raises(ValueError) as caught:
        AgentConfig(model=model)
    message = str(caught.value)
    if model:  # ("" is refused as empty text, before the rule)
        assert "letters, digits" in message and "[effort=high]" in message, message
    with pytest.raises(ValidationError):
        ChatCreate(workspace="p", model=model)
