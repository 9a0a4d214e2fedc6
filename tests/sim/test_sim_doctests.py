"""The examples in the docstrings of the simulator's helpers and agent run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "cursor_agent_api.sim.agent",
    "cursor_agent_api.sim.harness",
    "cursor_agent_api.sim.locate",
    "cursor_agent_api.testing",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0 and attempted > 0
