"""Why a turn failed, in the agent's own words: :func:`failure_reason`.

When the agent's stream ends without a ``result``, the CLI has usually said why on
stderr, in its last lines: ``Error: Authentication required…``, ``ActionRequiredError:
You've hit your usage limit…``, ``RetriableError: … unknown option``. The runtime reads
it from the stderr tail (it becomes ``AgentResult.error`` and the typed error's message);
``cursor-agent-api replay --summary`` reads it from a recording's non-JSON lines (stderr
captured with ``2>&1``). The rule is written once, here.

Example:
    >>> failure_reason(["Loading...", "ActionRequiredError: You've hit your usage limit"])
    "ActionRequiredError: You've hit your usage limit"
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .ansi import strip_ansi

__all__ = ["failure_reason"]

_BOX = re.compile(r"[\u2500-\u257f\u2580-\u259f│┃║]+")

_ERROR_LINE = re.compile(r"^(?:[\w.]*(?:Error|Exception)|error|fatal)\b[^:\s]{0,40}:\s*\S", re.I)
"""``Error: …``, ``ActionRequiredError: …``, ``error: unknown option …``: a line that *is* an
error report (its name, a colon, the message)."""

_STACK_LINE = re.compile(r"^(?:at\s|\^+$|Node\.js v\d|\{$|\}$|\.\.\.\s*\d+ lines? matching)")
"""Lines of a stack trace (``at f (file.js:1:2)``) and its decorations: never the reason."""

_WORDS = ("error", "cannot", "failed", "warning", "required", "limit", "invalid",
          "may still be running", "unknown option")


def _clean(lines: Iterable[str]) -> list[str]:
    out = []
    for line in lines:
        text = " ".join(_BOX.sub(" ", strip_ansi(line)).split())
        if text and not _STACK_LINE.match(text):
            out.append(text)
    return out


def failure_reason(lines: Iterable[str], *, strict: bool = False, limit: int = 300
                   ) -> str | None:
    """The agent's own reason for a failure among ``lines`` (stderr, or a recording's
    non-JSON lines), or ``None``.

    ANSI escapes and the box the trust prompt is drawn in are removed, stack-trace lines
    skipped. The choice: the **last** line that is an error report (``SomethingError: …``,
    ``Error: …``, ``error: …``); else the first line that names a failure (``Workspace
    Trust Required``, ``Cannot use this model: …``); else, unless ``strict`` (lines that may
    be ordinary output, such as a recording's banners), the last line.

    Example:
        >>> failure_reason(["╭──╮", "│ ⚠ Workspace Trust Required │", "│ Pass --trust │", "╰──╯"])
        '⚠ Workspace Trust Required'
        >>> failure_reason(["Error: boom", "    at f (a.js:1:2)", "RetriableError: unknown option"])
        'RetriableError: unknown option'
        >>> failure_reason(["Welcome!"]), failure_reason(["Welcome!"], strict=True)
        ('Welcome!', None)
    """
    cleaned = _clean(lines)
    for line in reversed(cleaned):
        if _ERROR_LINE.match(line):
            return line[:limit]
    for line in cleaned:
        low = line.lower()
        if any(word in low for word in _WORDS):
            return line[:limit]
    if cleaned and not strict:
        return cleaned[-1][:limit]
    return None
