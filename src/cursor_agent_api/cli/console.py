"""How the command line talks to a person: consoles, error messages, one-line failures.

* :func:`make_console` — a rich console that wraps lines only on a terminal (a pipe or
  a log gets every message whole, on one line) and writes escape codes only there, whatever
  ``FORCE_COLOR`` or ``TTY_COMPATIBLE`` say (:func:`is_terminal`); a closed pipe is a
  ``BrokenPipeError`` for the command to handle, not rich's ``SystemExit`` (:class:`PipeConsole`);
* :func:`error_text` — an exception as the command line says it: the typed errors'
  remedies in the command line's words (``--trust``, not ``trust=True``);
  :func:`error_text_named` the same for its message alone (an event's);
* :class:`CliError`, :class:`CliUsageError` — an expected failure, a bad argument: one
  line on stderr, then exit status 1, 2;
* :func:`standard_output` — at the start: a closed stdout, and characters the terminal's
  encoding lacks (written as ``?``), are no failure;
* :func:`output_failure`, :func:`writing_output` — stdout cannot be written (a full disk):
  one line, ``cannot write the output: REASON``; a closed pipe (``| head``) is click's to end
  quietly;
* :func:`given_as` — the name to blame for a bad value: its option, or its environment
  variable when it came from there.

Example:
    >>> from cursor_agent_api.errors import WorkspaceTrustError
    >>> error_text(WorkspaceTrustError("workspace not trusted"))
    'workspace not trusted — pass --trust, or --force'
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import click
from click.core import ParameterSource
from rich.console import Console

from ..errors import AuthenticationError, CursorAgentError


def make_console(*, stderr: bool = False, **kwargs: Any) -> Console:
    """A console for stdout (or stderr) that hard-wraps nothing unless it is a terminal.

    On a pipe or a file it is no terminal even when ``FORCE_COLOR`` or ``TTY_COMPATIBLE=1``
    (set workflow-wide by many CI setups) say so: ``ans=$(cursor-agent-api run …)`` captures
    plain text, never a spinner's frames, and nothing is cut to 80 columns. On a terminal,
    rich decides as usual (``NO_COLOR``, ``TTY_COMPATIBLE=0``).

    Example:
        >>> import os
        >>> os.environ["FORCE_COLOR"] = "1"
        >>> console = make_console()  # the doctest's stdout is not a terminal
        >>> console.soft_wrap, console.is_terminal
        (True, False)
        >>> del os.environ["FORCE_COLOR"]
    """
    if not is_terminal(sys.stderr if stderr else sys.stdout):
        kwargs.setdefault("force_terminal", False)
    console = PipeConsole(stderr=stderr, highlight=False, **kwargs)
    if "soft_wrap" not in kwargs:
        console.soft_wrap = not console.is_terminal
    return console


class PipeConsole(Console):
    """A rich console whose write to a closed pipe (``| head -1``) raises ``BrokenPipeError``
    (and writes nothing more), where rich's own exits on the spot (``SystemExit(1)``): a turn
    is then cancelled and saved (:mod:`.turns`), and click ends any other command quietly.

    Example:
        >>> class Closed(io.StringIO):
        ...     def write(self, text: str) -> int:
        ...         raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        >>> console = PipeConsole(file=Closed())
        >>> console.print("hi")
        Traceback (most recent call last):
        ...
        BrokenPipeError: [Errno 32] Broken pipe
        >>> console.print("nothing more"); console.quiet
        True
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def is_terminal(stream: Any) -> bool:
    """True if ``stream`` is a terminal (``None``, a closed stdin, is not).

    Example:
        >>> is_terminal(None)
        False
    """
    try:
        return stream is not None and bool(stream.isatty())
    except ValueError:  # a closed file
        return False


def error_text(exc: BaseException, *, simulated: bool = False) -> str:
    """The message for ``exc`` in the command line's words (``simulated``: the agent that ran
    is the simulator, which logs in with ``cursor-agent-sim login``, not ``agent login``).

    Example:
        >>> error_text(ValueError("bad"))
        'bad'
        >>> from cursor_agent_api.errors import AuthenticationError
        >>> error_text(AuthenticationError("not logged in"), simulated=True)
        'not logged in — run `cursor-agent-sim login` or set CURSOR_API_KEY'
    """
    if isinstance(exc, CursorAgentError):
        text = exc.cli_message()
        if simulated and isinstance(exc, AuthenticationError):
            text = text.replace("`agent login`", "`cursor-agent-sim login`")
        return text
    return str(exc)


def error_text_named(text: str, error_type: object, *, simulated: bool = False) -> str:
    """``text``, an error's message in Python's words (``str()`` of the error named
    ``error_type``: what an ``ERROR`` event of the runtime holds, the error itself gone), with
    its remedy in the command line's words, as :func:`error_text` gives it.

    Example:
        >>> from cursor_agent_api.errors import WorkspaceTrustError
        >>> error_text_named(str(WorkspaceTrustError("not trusted")), "WorkspaceTrustError")
        'not trusted — pass --trust, or --force'
        >>> error_text_named("the agent said: x", "WorkspaceTrustError")  # no remedy of ours
        'the agent said: x'
    """
    from .. import errors

    kind = getattr(errors, error_type, None) if isinstance(error_type, str) else None
    if not (isinstance(kind, type) and issubclass(kind, CursorAgentError)):
        return text
    python = f" — {kind.remedy}"
    if kind.remedy and text.endswith(python):
        text = text[:-len(python)] + (f" — {kind.cli_remedy}" if kind.cli_remedy else "")
    if simulated and issubclass(kind, AuthenticationError):
        text = text.replace("`agent login`", "`cursor-agent-sim login`")
    return text


def current_folder() -> Path:
    """The current folder, the default workspace; :class:`CliError` when it no longer exists
    (deleted since the shell went there: ``os.getcwd()`` fails), not a traceback.

    Example:
        >>> current_folder() == Path.cwd()
        True
    """
    try:
        return Path.cwd()
    except FileNotFoundError:
        raise CliError("the current folder no longer exists (deleted since the shell went "
                       "there): cd to one that does (or name a folder: run and chat's "
                       "--workspace, serve and worker's --root)") from None


class CliError(click.ClickException):
    """An expected failure: ``Error: MESSAGE`` on one line of stderr, then exit status 1.

    Example:
        >>> CliError("no such chat").exit_code
        1
    """

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the one line (newlines in the message are flattened)."""
        click.echo(f"Error: {' '.join(self.format_message().split())}", file=file, err=True)


def output_failure(exc: OSError) -> str:
    """What a failed write of the command's output says.

    Example:
        >>> output_failure(OSError(errno.ENOSPC, "No space left on device"))
        'cannot write the output: No space left on device'
    """
    return f"cannot write the output: {exc.strerror or exc}"


class ClosedOutput(io.TextIOBase):
    """What ``sys.stdout`` is when the command was started with it closed (``>&-``; Python
    sets it to ``None``): each write fails as a write to a closed descriptor does, so the
    command says :func:`output_failure`'s line, as for a full disk, instead of an
    ``AttributeError`` traceback.

    Example:
        >>> ClosedOutput().write("hi")
        Traceback (most recent call last):
        ...
        OSError: [Errno 9] standard output is closed
        >>> output_failure(OSError(errno.EBADF, "standard output is closed"))
        'cannot write the output: standard output is closed'
    """

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    @property
    def buffer(self) -> io.RawIOBase:
        """The binary side: its writes fail the same way."""
        return _ClosedBinary()


class _ClosedBinary(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def standard_output() -> None:
    """At the command's start: a closed standard output becomes :class:`ClosedOutput`, and
    stdout and stderr write what their encoding cannot (``é``, ``▶`` on an ASCII or Latin-1
    terminal) as ``?`` instead of failing with a ``UnicodeEncodeError`` mid-turn, and a byte
    that was not text (a lone surrogate: a Latin-1 file name typed) as ``\\xNN``, inert.

    Example:
        >>> import io
        >>> out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
        >>> _replace_unencodable(out); _ = out.write("▶ é"); out.flush()
        >>> out.buffer.getvalue()
        b'? ?'
    """
    if sys.stdout is None:
        sys.stdout = ClosedOutput()
    for stream in (sys.stdout, sys.stderr):
        _replace_unencodable(stream)


def _replace_unencodable(stream: object) -> None:
    # "surrogateescape": Python's choice in the C locale when its UTF-8 mode is off
    if isinstance(stream, io.TextIOWrapper) and stream.errors in ("strict", "surrogateescape"):
        with contextlib.suppress(ValueError, OSError):  # closed, or not reconfigurable
            stream.reconfigure(errors=_UNENCODABLE)


_UNENCODABLE = "cursor_agent_api.unencodable"


def _unencodable(exc: UnicodeError) -> tuple[str | bytes, int]:
    r"""The error handler of :func:`standard_output`: a lone surrogate of ``surrogateescape``
    (a byte of a name or an argument that was not text in the locale) is written as
    ``\xNN``, as :func:`~.render.printable` shows it, never as that raw byte (no character on
    a UTF-8 terminal; on an 8-bit one, ``\x9b`` is CSI); any other character the encoding
    lacks as ``?``. Text that passed through ``printable`` has no surrogate left: this is
    for what did not (click's own messages).

    Example:
        >>> "é \udce9\udc9b".encode("ascii", _UNENCODABLE)
        b'? \\xe9\\x9b'
    """
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    chunk = exc.object[exc.start:exc.end]
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else "?"
                   for c in chunk), exc.end


codecs.register_error(_UNENCODABLE, _unencodable)


@contextlib.contextmanager
def writing_output() -> Iterator[None]:
    """Around code that only writes the output: an ``OSError`` there (but a closed pipe,
    which click ends quietly) is :class:`CliError` with :func:`output_failure`'s line.

    Example:
        >>> with writing_output():
        ...     raise OSError(errno.ENOSPC, "No space left on device")
        Traceback (most recent call last):
        cursor_agent_api.cli.console.CliError: cannot write the output: No space left on device
    """
    try:
        yield
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise
        raise CliError(output_failure(exc)) from None


class CliUsageError(CliError):
    """A bad argument or option, said in one line (no usage text): exit status 2.

    Example:
        >>> CliUsageError("--resume x: no such chat").exit_code
        2
    """

    exit_code = 2


def secret_on_argv(param: str, option: str, envvar: str) -> str | None:
    """A warning when the secret of ``param`` was given on the command line, where every local
    user can read it (``ps``, ``/proc/PID/cmdline``), rather than in ``envvar``.

    Example:
        >>> @click.command()
        ... @click.option("--token", envvar="APP_TOKEN")
        ... def cmd(token: str) -> None:
        ...     click.echo(secret_on_argv("token", "--token", "APP_TOKEN") or "no warning")
        >>> from click.testing import CliRunner
        >>> print(CliRunner().invoke(cmd, ["--token", "x"]).output.strip())  # doctest: +ELLIPSIS
        warning: --token on the command line: every local user can read it (ps); set APP_TOKEN ...
        >>> print(CliRunner().invoke(cmd, env={"APP_TOKEN": "x"}).output.strip())
        no warning
    """
    ctx = click.get_current_context(silent=True)
    if ctx is None or ctx.get_parameter_source(param) is not ParameterSource.COMMANDLINE:
        return None
    return (f"warning: {option} on the command line: every local user can read it (ps); set "
            f"{envvar} instead")


def given_as(param: str, option: str) -> str:
    """``option``, or the environment variable the current command read ``param`` from.

    Example:
        >>> @click.command()
        ... @click.option("--database-url", envvar="APP_DATABASE_URL")
        ... def cmd(database_url: str) -> None:
        ...     click.echo(given_as("database_url", "--database-url"))
        >>> from click.testing import CliRunner
        >>> print(CliRunner().invoke(cmd, env={"APP_DATABASE_URL": "x"}).output.strip())
        APP_DATABASE_URL
        >>> print(CliRunner().invoke(cmd, ["--database-url", "x"]).output.strip())
        --database-url
    """
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.get_parameter_source(param) is ParameterSource.ENVIRONMENT:
        for candidate in ctx.command.params:
            if candidate.name == param and isinstance(candidate.envvar, str):
                return candidate.envvar
    return option
