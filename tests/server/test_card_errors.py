"""A card's error line is in the page's words (audit 5, F1): a call rejected with no reason of
its own said "force_approve / --force allows it", the library's argument, which the page's user
never sees; the page's option is to run tools without asking (--force). Other reasons are the library's."""

from __future__ import annotations

from cursor_agent_api.protocol.tools import ToolCall, ToolKind, ToolStatus
from cursor_agent_api.server.webui import view_of


def test_a_rejected_call_names_the_pages_option_not_the_librarys_argument() -> None:
    rejected = ToolCall("c", ToolKind.SHELL, "shellToolCall", {"command": "ls"}, status=ToolStatus.REJECTED)
    assert "force_approve" in (rejected.error_message or "")  # the library's text stays
    error = view_of(rejected)["error"]
    assert "force_approve" not in error and "run tools without asking, --force" in error


def test_a_reason_of_its_own_and_other_endings_are_the_librarys() -> None:
    own = ToolCall("c", ToolKind.SHELL, status=ToolStatus.REJECTED, result={"rejected": {"reason": "no"}})
    assert view_of(own)["error"] == own.error_message
    abandoned = ToolCall("c", ToolKind.SHELL, status=ToolStatus.ABANDONED)
    assert view_of(abandoned)["error"] == "abandoned: the turn ended before the tool call completed"
