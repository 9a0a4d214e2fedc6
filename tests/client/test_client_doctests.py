"""The examples in the docstrings of the client's modules run (those not marked +SKIP)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "cursor_agent_api.config",
    "cursor_agent_api.client",
    "cursor_agent_api.sessions",
    "cursor_agent_api.runtime",
    "cursor_agent_api.runtime.argv",
    "cursor_agent_api.runtime.commands",
    "cursor_agent_api.runtime.portal",
    "cursor_agent_api.runtime.process",
    "cursor_agent_api.runtime.run",
    "cursor_agent_api.runtime.sinks",
    "cursor_agent_api.runtime.stderr",
    "cursor_agent_api.runtime.outcome",
    "cursor_agent_api.protocol.reason",
    "cursor_agent_api.server.runner",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
