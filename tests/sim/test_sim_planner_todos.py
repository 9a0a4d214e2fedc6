"""The todo rule (``plan`` / ``todo`` …) never cuts a backticked command or a file name.

It used to match its words anywhere and keep only what came before them: ``run `rm -rf
build/plan` `` planned (and with ``--force`` ran) ``rm -rf build/``, and ``read plan.md`` wrote a
todo list instead of reading the file (audit 11, finding 1).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cursor_agent_api.protocol import ToolKind, ToolStatus
from cursor_agent_api.sim.planner import plan_turn

from .conftest import Sim


@pytest.mark.parametrize(
    "command",
    ["rm -rf build/plan", "cat todo list", "echo todos", "grep -r to-do .", "make plan && echo todo:"],
)
def test_a_backticked_command_is_never_cut(command: str) -> None:
    plan = plan_turn(f"run `{command}`")
    assert plan.kinds() == [["shellToolCall"]]
    assert plan.groups[0][0].target == command


@pytest.mark.parametrize("name", ["plan.md", "docs/plan.txt", "todos.json", "my-plan.md", "todo.txt"])
def test_a_file_name_is_never_cut(name: str) -> None:
    plan = plan_turn(f"read {name}")
    assert plan.kinds() == [["readToolCall"]]
    assert plan.groups[0][0].target == name


def test_the_todo_words_outside_backticks_still_make_a_todo_list() -> None:
    plan = plan_turn("make a todo list: write tests, fix bugs, ship it")
    assert plan.kinds() == [["updateTodosToolCall"]]
    assert plan.groups[0][0].text == "write tests\nfix bugs\nship it"
    # the words inside a command do not count, the word outside does
    plan = plan_turn("run `ls plan` then plan: a, b")
    assert plan.kinds() == [["updateTodosToolCall"], ["shellToolCall"]]
    assert plan.groups[0][0].text == "a\nb" and plan.groups[1][0].target == "ls plan"


def test_rm_of_a_plan_folder_removes_only_that_folder(sim: Sim, ws: Path) -> None:
    (ws / "build" / "plan").mkdir(parents=True)
    (ws / "build" / "keep").mkdir()
    (ws / "build" / "keep" / "data.txt").write_text("important\n")
    t = sim.stream("--force", "run `rm -rf build/plan`").transcript
    (call,) = t.tool_calls
    assert (call.kind, call.status) == (ToolKind.SHELL, ToolStatus.SUCCEEDED)
    assert call.command == "rm -rf build/plan"
    assert not (ws / "build" / "plan").exists()
    assert (ws / "build" / "keep" / "data.txt").read_text() == "important\n"


def test_read_plan_md_reads_it(sim: Sim, ws: Path) -> None:
    (ws / "plan.md").write_text("step 1\n")
    t = sim.stream("read plan.md").transcript
    (call,) = t.tool_calls
    assert (call.kind, call.status, call.content) == (ToolKind.READ, ToolStatus.SUCCEEDED, "step 1\n")
