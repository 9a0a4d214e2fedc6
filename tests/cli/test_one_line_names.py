"""A name shown in one line reads back one way only: a backslash in it is shown ``\\\\``, so
that a file name holding the two characters ``\\`` ``n`` no longer looks like one holding a
newline (shown ``\\n``), nor a name holding ``\\x1b`` like one holding an escape. What reads
the other way, the footer's ``continue:`` command, pastes back as the path typed."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from cursor_agent_api.cli.render import printable
from cursor_agent_api.cli.steer import _one_line

Cli = Callable[..., subprocess.CompletedProcess[str]]

LOOK_ALIKES = [("a\\nb", "a\nb"), ("a\\tb", "a\tb"), ("a\\x1bb", "a\x1bb"),
               ("a\\\\nb", "a\\\nb"), ("caf\\xe9", "caf\udce9"), ("a\\x9b", "a\u009b")]


@pytest.mark.parametrize(("literal", "control"), LOOK_ALIKES)
@pytest.mark.parametrize("show", [lambda t: printable(t, one_line=True), _one_line],
                         ids=["printable", "steer"])
def test_two_names_that_differ_are_shown_differently(
        literal: str, control: str, show: Callable[[str], str]) -> None:
    shown = show(literal), show(control)
    assert shown[0] != shown[1], shown
    assert "\n" not in shown[0] + shown[1] and "\x1b" not in shown[0] + shown[1]


@pytest.mark.parametrize("command", ["run", "chat"])
def test_a_typed_workspace_holding_a_backslash_is_not_a_newline(cli: Cli, tmp_path: Path,
                                                                command: str) -> None:
    """``--workspace`` names a folder that does not exist: the one with a backslash and the
    one with a newline give two different lines."""
    said = []
    for name in ("a\\nb", "a\nb"):
        args = [command, "--simulate", "--trust", "--workspace", str(tmp_path / name)]
        proc = cli(*args, *(["hi"] if command == "run" else []), stdin="")
        assert proc.returncode == 2, proc.stderr
        said.append(proc.stderr.splitlines()[-1])
    assert said[0] != said[1], said
    assert said[0].endswith("a\\\\nb: no such directory"), said[0]


def test_a_record_path_holding_a_backslash_is_shown_doubled(cli: Cli, tmp_path: Path) -> None:
    """click's refusal of ``--record DIR`` (``File '…' is a directory.``): the name's
    backslash doubled, once: click's ``repr`` of it is not escaped again (``\\\\``)."""
    folder = tmp_path / "x\\ny"
    folder.mkdir()
    proc = cli("run", "--simulate", "--trust", "--record", str(folder), "hi", stdin="")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[-1].endswith(f"'{tmp_path}/x\\\\ny' is a directory."), \
        proc.stderr


@pytest.mark.parametrize("shell", ["bash", "dash"])  # (dash: Debian's /bin/sh, without $'…')
@pytest.mark.parametrize("name", ["a\\b", "w\x1b]0;T\x07x", "tab\there", "notes\u202etxt",
                                  "caf\udce9 100%", "x\x1b'$(touch PWNED) #", "it's\there"])
def test_the_continue_command_pastes_back_as_the_workspace_typed(
        cli: Cli, tmp_path: Path, name: str, shell: str) -> None:
    """The footer's ``continue: cursor-agent-api chat --resume ID --workspace W``, read by
    bash or by dash, names the workspace the run had, and runs nothing else: a backslash is
    not doubled, a character a terminal would obey is shown inert and pastes back as itself,
    a quote in the name ends no quoting (``$'…'``, which dash does not know, let a name run a
    command there)."""
    workspace = tmp_path / name
    workspace.mkdir()
    proc = cli("run", "--simulate", "--trust", "--workspace", str(workspace), "hi", stdin="")
    assert proc.returncode == 0, proc.stderr
    found = re.search(r"continue: (cursor-agent-api chat .*)", proc.stdout)
    assert found is not None, proc.stdout
    hint = found.group(1)
    assert printable(hint) == hint and "\t" not in hint, hint  # inert, one line
    words = subprocess.run([shell, "-c", f"printf '%s\\0' {hint}"], capture_output=True,
                           check=True, cwd=tmp_path).stdout.split(b"\0")
    assert words[words.index(b"--workspace") + 1] == os.fsencode(workspace), hint
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_a_quoted_name_starting_with_a_dash_is_not_taken_for_printf_s_option(shell: str) -> None:
    """``"$(printf '-lead\\033')"``: printf took ``-l`` for an option and gave an empty word.
    (The command line's workspace is absolute; a library caller's or a file's need not be.)"""
    from cursor_agent_api.cli.options import _quote

    name = "-lead\x1b"
    words = subprocess.run([shell, "-c", f"printf '%s\\0' {_quote(name)}"], capture_output=True,
                           check=True).stdout.split(b"\0")
    assert words[0] == name.encode(), _quote(name)
