"""The stderr texts of the real CLI (PROTOCOL.md §1, "Exit codes and stderr"), one function each.

The first words are what clients match on; they are reproduced exactly. What follows them
is the simulator's best rendering of the rest.

Example:
    >>> malformed_resume("abc")
    'Failed to claim persistent session for chat "abc": Persistent-session chat ID must be a UUID'
"""

from __future__ import annotations

from collections.abc import Iterable

YELLOW = "\x1b[33m"
BOLD = "\x1b[1m"
RESET = "\x1b[0m"

ABORTING = "Aborting operation..."
"""Written on SIGINT, before exit 130."""


def auth_required() -> str:
    """Not logged in and no API key.

    Example:
        >>> auth_required().startswith("Error: Authentication required.")
        True
    """
    return (
        "Error: Authentication required. Please run 'agent login' first, "
        "or set CURSOR_API_KEY environment variable."
    )


def invalid_api_key() -> str:
    """The API key was refused (coloured even with ``TERM=dumb``, as the real CLI).

    Example:
        >>> "The provided API key is invalid." in invalid_api_key()
        True
    """
    return f"{YELLOW}⚠ Warning: The provided API key is invalid.{RESET}"


def trust_required(workspace: str) -> str:
    """The boxed "Workspace Trust Required" message.

    Example:
        >>> text = trust_required("/ws")
        >>> "⚠ Workspace Trust Required" in text and "Pass --trust, --yolo, or -f" in text
        True
    """
    lines = [
        "⚠ Workspace Trust Required",
        "",
        "Cursor Agent can read, write and execute code in this directory:",
        f"  {workspace}",
        "",
        "Do you trust the contents of this workspace?",
        "Pass --trust, --yolo, or -f to trust it and continue in headless mode.",
    ]
    width = max(len(line) for line in lines) + 2
    out = ["╭" + "─" * width + "╮"]
    out += ["│ " + line.ljust(width - 2) + " │" for line in lines]
    out.append("╰" + "─" * width + "╯")
    return "\n".join(out)


def invalid_model(model: str, available: Iterable[str]) -> str:
    """An unknown or unusable ``--model``.

    Example:
        >>> invalid_model("x", ["auto", "gpt-5"])
        'Cannot use this model: x. Available models: auto, gpt-5'
    """
    return f"Cannot use this model: {model}. Available models: {', '.join(available)}"


def malformed_resume(chat_id: str) -> str:
    """A ``--resume`` id that is not a UUID (see the module example)."""
    return (
        f'Failed to claim persistent session for chat "{chat_id}": Persistent-session chat ID must be a UUID'
    )


def chat_busy(chat_id: str) -> str:
    """A second concurrent turn on one chat.

    Example:
        >>> chat_busy("c1").startswith("Chat c1 may still be running")
        True
    """
    return (
        f"Chat {chat_id} may still be running in another agent process. "
        "Wait for it to finish (or stop it) and try again."
    )


def usage_limit() -> str:
    """The account's usage limit.

    Example:
        >>> usage_limit().startswith("Error: You've hit your usage limit")
        True
    """
    return (
        "Error: You've hit your usage limit for this billing period. "
        "Upgrade your plan or wait for the limit to reset."
    )


def no_prompt() -> str:
    """Print mode with neither a positional prompt nor anything on stdin.

    Example:
        >>> no_prompt().startswith("Error: No prompt provided")
        True
    """
    return "Error: No prompt provided. Pass a prompt as an argument or on stdin."


def crash() -> str:
    """What ``CURSOR_AGENT_SIM_FAULT=crash`` writes before dying.

    Example:
        >>> "simulated crash" in crash()
        True
    """
    return "Error: the agent process terminated unexpectedly (simulated crash, CURSOR_AGENT_SIM_FAULT=crash)"


def interactive_unsupported() -> str:
    """Neither ``--print`` nor a pipe: the real CLI would open its TUI.

    Example:
        >>> "-p/--print" in interactive_unsupported()
        True
    """
    return (
        "cursor-agent-sim simulates headless mode only: pass -p/--print (or pipe its output) to run a prompt."
    )
