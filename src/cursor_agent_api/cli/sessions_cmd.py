"""``cursor-agent-api sessions list|show|rm``: the chats this tool has saved.

Example:
    $ cursor-agent-api sessions list
    $ cursor-agent-api sessions show 8ef40118-8378-436d-8ba8-2436b19cc877
    $ cursor-agent-api sessions rm 8ef40118    # a unique prefix is enough
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ..errors import SessionError
from ..sessions import read_session_file
from .console import CliError, CliUsageError, error_text, make_console, writing_output
from .render import json_line, printable
from .saved_chats import ChatLookupError, ChatSummary, SavedChats


def _when(stamp: float) -> str:
    """The local time of ``stamp``, or ``—`` when unknown or not a time a clock can show."""
    if not stamp:
        return "—"
    try:
        return dt.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):  # 1e300, inf, nan; Windows before 1970
        return "—"


def _one_line(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@click.group()
def sessions() -> None:
    """The chats this tool has saved (run and chat save every turn)."""


@sessions.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per chat.")
def list_(as_json: bool) -> None:
    """List saved chats, most recently used first."""
    chats = SavedChats().list()
    with writing_output():
        _list(chats, as_json)


def _list(chats: list[ChatSummary], as_json: bool) -> None:
    if as_json:
        for c in chats:
            sys.stdout.buffer.write(json_line({
                "chat_id": c.chat_id, "workspace": c.workspace, "first_prompt": c.first_prompt,
                "turns": c.turns, "last_used": c.last_used, "model": c.model,
                "transport": c.transport, "unreadable": c.unreadable,
            }))
        sys.stdout.flush()
        return
    console = make_console()
    if not chats:
        console.print("no saved chats yet — `cursor-agent-api run` and `chat` save every turn")
        return
    if not console.is_terminal:  # a pipe or a file: nothing is cut, whatever the width
        console.width = 10_000
    table = Table(box=None)
    # On a narrow terminal an id folds onto a second line rather than being cut: it stays whole.
    table.add_column("chat id", no_wrap=True, overflow="fold",
                     min_width=min(36, max(len(c.chat_id) for c in chats)))
    table.add_column("workspace", overflow="ellipsis")
    table.add_column("first prompt", overflow="ellipsis", no_wrap=True)
    table.add_column("turns", justify="right")
    table.add_column("transport", no_wrap=True)  # --resume continues a chat on its own
    table.add_column("last used", no_wrap=True)
    for c in chats:
        if c.unreadable is not None:  # listed, not hidden: `sessions show ID` says what to do
            table.add_row(Text(printable(c.chat_id)), "", _damage(c), "—", "—", _when(c.last_used))
            continue
        # saved text is data: never markup ("what does [/tmp] mean" is shown as is), never
        # a raw escape sequence (shown inert, \x1b…, as every other view shows the agent's text)
        table.add_row(Text(printable(c.chat_id)), Text(printable(c.workspace or "")),
                      Text(_one_line(printable(c.first_prompt))), str(c.turns),
                      Text(printable(c.transport)), _when(c.last_used))
    natural = console.measure(table, options=console.options.update_width(1_000_000)).maximum
    if natural <= console.width:  # every cell whole
        console.print(table)
        return
    # Too narrow for the table, which would cut ids and drop whole columns: each chat on
    # lines of its own, the id whole (the terminal wraps it), the prompt cut at the width.
    for c in chats:
        if c.unreadable is not None:
            console.print(Text(printable(c.chat_id), style="bold"), soft_wrap=True)
            console.print(Text("  ").append(_damage(c)), soft_wrap=True)
            continue
        turns = f"{c.turns} turn{'' if c.turns == 1 else 's'}"
        console.print(Text(printable(c.chat_id), style="bold"), soft_wrap=True)
        console.print(Text(f"  {turns} · {printable(c.transport)} · {_when(c.last_used)}"
                           + (f" · {printable(c.workspace)}" if c.workspace else "")),
                      soft_wrap=True)
        console.print(Text("  " + _one_line(printable(c.first_prompt)), no_wrap=True,
                           overflow="ellipsis"))


def _damage(chat: ChatSummary) -> Text:
    """What the list shows of a chat whose file cannot be read: why, as data.

    Example:
        >>> _damage(ChatSummary("x", None, "", 0, 0.0, None, "", unreadable="not JSON")).plain
        '⚠ cannot be read: not JSON'
    """
    return Text(f"⚠ cannot be read: {_one_line(printable(chat.unreadable or ''))}",
                style="yellow")


@sessions.command()
@click.argument("chat_id", metavar="ID")
def show(chat_id: str) -> None:
    """Show a saved chat (ID: its id, or a unique prefix of it): settings and every turn."""
    store = SavedChats()
    try:
        chat_id = store.resolve(chat_id)
        summary = store.summary(chat_id)
        data = read_session_file(store.path(chat_id))
    except ChatLookupError as exc:  # the ID names no saved chat: a usage error (exit 2)
        raise CliUsageError(error_text(exc)) from None
    except SessionError as exc:
        raise CliError(error_text(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot read the saved chat {store.path(chat_id)}: "
                       f"{exc.strerror or exc}") from None
    with writing_output():
        _show(summary, data["history"])


def _show(summary: ChatSummary, history: list[Any]) -> None:
    console = make_console()
    console.print(Text(f"chat {printable(summary.chat_id)}", style="bold"))
    console.print(Text(f"workspace: {printable(summary.workspace or '—')}   "
                       f"model: {printable(summary.model or 'default')}   "
                       f"turns: {summary.turns}   last used: {_when(summary.last_used)}"))
    console.print(Text(f"transport: {printable(summary.transport)} (`--resume` continues it "
                       "on this one)"))
    for turn in history:
        console.print()
        console.print(Text("› " + printable(turn.prompt), style="bold cyan"))
        if turn.cancelled:
            console.print(Text("⊘ cancelled", style="yellow"))
        elif not turn.success:
            console.print(Text(f"✗ {printable(turn.error or 'failed')}", style="red"))
        if turn.result:
            console.print(Text(printable(turn.result)))


@sessions.command()
@click.argument("chat_id", metavar="ID")
def rm(chat_id: str) -> None:
    """Forget a saved chat (ID or a unique prefix; the agent's own copy is not touched)."""
    store = SavedChats()
    try:
        chat_id = store.resolve(chat_id)
        store.remove(chat_id)
    except ChatLookupError as exc:  # the ID names no saved chat: a usage error (exit 2)
        raise CliUsageError(error_text(exc)) from None
    except SessionError as exc:
        raise CliError(error_text(exc)) from None
    click.echo(f"removed {chat_id}")
