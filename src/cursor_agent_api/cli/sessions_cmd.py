"""``cursor-agent-api sessions list|show|rm``: the chats this tool has saved.

Example:
    $ cursor-agent-api sessions list
    $ cursor-agent-api sessions show 8ef40118-8378-436d-8ba8-2436b19cc877
    $ cursor-agent-api sessions rm 8ef40118-8378-436d-8ba8-2436b19cc877
"""

from __future__ import annotations

import datetime as dt
import sys

import click
import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import SessionError
from ..sessions import read_session_file
from .saved_chats import SavedChats


def _when(stamp: float) -> str:
    return dt.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M") if stamp else "—"


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
    if as_json:
        for c in chats:
            sys.stdout.buffer.write(orjson.dumps({
                "chat_id": c.chat_id, "workspace": c.workspace, "first_prompt": c.first_prompt,
                "turns": c.turns, "last_used": c.last_used, "model": c.model,
            }, option=orjson.OPT_APPEND_NEWLINE))
        return
    console = Console(highlight=False)
    if not chats:
        console.print("no saved chats yet — `cursor-agent-api run` and `chat` save every turn")
        return
    table = Table("chat id", "workspace", "first prompt", "turns", "last used", box=None)
    for c in chats:
        table.add_row(c.chat_id, c.workspace or "", _one_line(c.first_prompt), str(c.turns),
                      _when(c.last_used))
    console.print(table)


@sessions.command()
@click.argument("chat_id")
def show(chat_id: str) -> None:
    """Show a saved chat: its settings and every turn."""
    store = SavedChats()
    try:
        summary = store.summary(chat_id)
        data = read_session_file(store.path(chat_id))
    except SessionError as exc:
        click.echo(f"cursor-agent-api sessions: {exc}", err=True)
        sys.exit(1)
    console = Console(highlight=False)
    console.print(Text(f"chat {summary.chat_id}", style="bold"))
    console.print(f"workspace: {summary.workspace or '—'}   model: {summary.model or 'default'}"
                  f"   turns: {summary.turns}   last used: {_when(summary.last_used)}")
    for turn in data["history"]:
        console.print()
        console.print(Text("› " + turn.prompt, style="bold cyan"))
        if turn.cancelled:
            console.print(Text("⊘ cancelled", style="yellow"))
        elif not turn.success:
            console.print(Text(f"✗ {turn.error or 'failed'}", style="red"))
        if turn.result:
            console.print(Text(turn.result))


@sessions.command()
@click.argument("chat_id")
def rm(chat_id: str) -> None:
    """Forget a saved chat (the agent's own copy is not touched)."""
    try:
        SavedChats().remove(chat_id)
    except SessionError as exc:
        click.echo(f"cursor-agent-api sessions: {exc}", err=True)
        sys.exit(1)
    click.echo(f"removed {chat_id}")
