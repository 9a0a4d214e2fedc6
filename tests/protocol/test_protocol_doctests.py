"""The examples in the docstrings of the protocol core run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "cursor_agent_api.protocol",
    "cursor_agent_api.protocol.ansi",
    "cursor_agent_api.protocol.changes",
    "cursor_agent_api.protocol.events",
    "cursor_agent_api.protocol.framing",
    "cursor_agent_api.protocol.reader",
    "cursor_agent_api.protocol.result",
    "cursor_agent_api.protocol.tools",
    "cursor_agent_api.protocol.transcript",
    "cursor_agent_api.protocol.wire",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0 and attempted > 0
