"""An error of this library crosses a process (``multiprocessing``, a result pickled) or is
copied as it was: the same text, attributes and own remedy (review 41: made again from its
text, it gained its class's remedy a second time: "it hung — restart it — see the stderr
tail …")."""

from __future__ import annotations

import copy
import pickle

import pytest

from cursor_agent_api import errors
from cursor_agent_api.errors import AgentProcessError, AgentStartError, CursorAgentError


def _classes() -> list[type[CursorAgentError]]:
    found, todo = [], [CursorAgentError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted({c for c in found if c.__module__ == errors.__name__}, key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_every_error_pickles_and_copies_as_it_was(cls: type[CursorAgentError]) -> None:
    err = cls.__new__(cls)
    CursorAgentError.__init__(err, "it failed", exit_code=1, stderr="tail")
    for again in (pickle.loads(pickle.dumps(err)), copy.copy(err)):
        assert type(again) is cls
        assert str(again) == str(err) and again.args == err.args
        assert (again.exit_code, again.stderr, again.message) == (1, "tail", "it failed")


@pytest.mark.parametrize("err", [AgentProcessError("it hung", remedy="restart it"),
                                 AgentStartError("no files", errno=24, remedy="close files")],
                         ids=["process", "start"])
def test_an_errors_own_remedy_is_not_doubled(err: CursorAgentError) -> None:
    for again in (pickle.loads(pickle.dumps(err)), copy.copy(err)):
        assert str(again) == str(err) and again.cli_message() == err.cli_message()
        assert str(again).count(" — ") == 1, str(again)
