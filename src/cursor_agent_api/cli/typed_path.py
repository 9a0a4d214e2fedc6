r"""The type of every path option of the command line (``--workspace``, ``--record``,
``--prompt-file``, ``--root``, ``--worktrees``): ``click.Path`` whose refusal shows the path
inert.

click names the refused path in its message (``Directory '…' is a file.``); most of its
messages quote it with ``repr``, but not all of them in every release the project accepts
(click 8.1's ``File '…' is a directory.`` put it as typed), so an escape sequence in the name
was obeyed by the terminal and a newline split the error in two. :class:`TypedPath` passes
the path through :func:`~.render.printable` with ``one_line``, whatever click's wording.

Example:
    >>> import os, tempfile
    >>> from click.testing import CliRunner
    >>> @click.command()
    ... @click.option("--record", type=TypedPath(dir_okay=False))
    ... def cmd(record: str) -> None: ...
    >>> folder = os.path.join(tempfile.mkdtemp(), "a\x1b[2J\nb")
    >>> os.mkdir(folder)
    >>> out = CliRunner().invoke(cmd, ["--record", folder]).output.splitlines()[-1]
    >>> "\x1b" in out, out.endswith("a\\x1b[2J\\nb' is a directory.")
    (False, True)
"""

from __future__ import annotations

import os
from typing import Any

import click

__all__ = ["TypedPath"]


class TypedPath(click.Path):
    """``click.Path``, its refusals (missing, a file, a directory, …) shown inert, in one line."""

    def convert(self, value: str | os.PathLike[str], param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            raise click.BadParameter(_inert(exc.message, os.fspath(value)), ctx=exc.ctx,
                                     param=exc.param, param_hint=exc.param_hint) from None


def _inert(message: str, typed: str) -> str:
    r"""click's ``message`` with the path it names (quoted, by ``repr`` or not) shown as
    :func:`~.render.printable` shows a path in one line, between single quotes; the rest of the
    message through ``printable`` as well.

    click's ``repr`` already escapes the path (``'a\x1b'``); ``printable`` on top would show
    its backslashes doubled, so the path is put back as typed first.

    Example:
        >>> print(_inert("Directory 'a\\x1b[2J\\nb' is a file.", "a\x1b[2J\nb"))
        Directory 'a\x1b[2J\nb' is a file.
        >>> print(_inert("File 'a\\nb' is a directory.", "a\\nb"))
        File 'a\\nb' is a directory.
        >>> print(_inert("Path 'x' does not exist.", "y"))  # (not found: all of it inert)
        Path 'x' does not exist.
    """
    from .render import printable  # (loaded only for a refusal)

    shown = click.format_filename(typed)
    for form in (repr(shown), f"'{shown}'"):
        before, found, after = message.partition(form)
        if found:
            return (f"{printable(before, one_line=True)}'{printable(typed, one_line=True)}'"
                    f"{printable(after, one_line=True)}")
    return printable(message, one_line=True)
