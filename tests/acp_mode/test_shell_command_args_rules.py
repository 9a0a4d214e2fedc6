"""Cursor's ``command:args`` form of a shell rule (``Shell(curl:*)``, MCP.md §5): the command
followed by arguments the second part globs, or by none when that part globs nothing too.
It was accepted and never matched, so a deny rule failed open (audit 6, F7)."""

from __future__ import annotations

import pytest

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.permissions import (
    Allow,
    Deny,
    PermissionRequest,
    check_rule,
    decide_by_rules,
    match_rule,
)
from cursor_agent_api.protocol.acp_mapper import acp_tool_call


def shell(command: str) -> PermissionRequest:
    return PermissionRequest("s1", acp_tool_call({
        "toolCallId": "c", "kind": "execute", "rawInput": {"command": command}}))


@pytest.mark.parametrize("command", ["rm -rf build", "rm", "/bin/rm x", "true && rm -rf build",
                                     "sudo rm -rf /", "bash -c 'cd x && rm -rf y'"])
def test_a_command_args_deny_rule_matches(command: str) -> None:
    assert decide_by_rules(shell(command), mode="allow", allowed=[], denied=["Shell(rm:*)"]) \
        == Deny("denied by the rule Shell(rm:*)")


@pytest.mark.parametrize("command", ["rmdir build", "ls -la", "echo rm"])
def test_a_command_args_deny_rule_leaves_other_commands(command: str) -> None:
    assert decide_by_rules(shell(command), mode="allow", allowed=[], denied=["Shell(rm:*)"]) \
        == Allow()


@pytest.mark.parametrize(("rule", "command", "allowed"), [
    ("Shell(ls:*)", "ls -la", True),
    ("Shell(ls:*)", "ls", True),
    ("Shell(ls:*)", "ls -la && rm x", False),  # every simple command must be covered
    ("Shell(git:status*)", "git status --short", True),
    ("Shell(git:status*)", "git push", False),
    ("Shell(git status:*)", "git status --short", True),
    ("Shell(curl:-s *)", "curl -s https://example.com", True),
    ("Shell(curl:-s *)", "curl https://example.com", False),
    ("Shell(curl:-s *)", "curl", False),  # "-s *" globs no empty argument list
])
def test_a_command_args_allow_rule(rule: str, command: str, allowed: bool) -> None:
    decision = decide_by_rules(shell(command), mode="deny", allowed=[rule], denied=[])
    assert isinstance(decision, Allow) is allowed, decision
    assert match_rule(rule, shell(command)) is allowed


def test_a_command_args_allow_rule_combines_with_others() -> None:
    assert decide_by_rules(shell("ls -la | wc -l"), mode="deny",
                           allowed=["Shell(ls:*)", "Shell(wc:-l)"], denied=[]) == Allow()


@pytest.mark.parametrize("rule", ["Shell(:*)", "Shell( :x)"])
def test_a_command_args_rule_without_its_command_is_refused(rule: str) -> None:
    with pytest.raises(ValueError, match="needs the command before the colon"):
        check_rule(rule)
    with pytest.raises(ValueError, match=r"AgentConfig\.denied_tools: .*needs the command"):
        AgentConfig(transport="acp", denied_tools=[rule])


@pytest.mark.parametrize("rule", ["Shell(rm:)", "Shell(git: )"])
def test_a_command_args_rule_without_its_args_is_refused(rule: str) -> None:
    """``Shell(rm:)`` allowed the bare command, and so, by its name, every ``rm`` with any
    arguments (review 42: ``rm -rf /tmp/x`` approved). ``Shell(rm)`` or ``Shell(rm:*)`` say it."""
    with pytest.raises(ValueError, match="needs the arguments after the colon"):
        check_rule(rule)
    with pytest.raises(ValueError, match=r"AgentConfig\.allowed_tools: .*needs the arguments"):
        AgentConfig(transport="acp", allowed_tools=[rule])
