"""The deterministic agent's tools: one :class:`Executor` per call kind in :data:`EXECUTORS`.

An executor builds the call's arguments (:meth:`Executor.args`, in print mode's wire shape)
and runs it on the workspace (:meth:`Executor.run`) once the output's :class:`~.context.Decision`
allows it; a refused call does not run. What it returns, :class:`Done`, carries the print-mode
outcome and what ACP shows of it (``rawOutput``, a diff). ``gate`` names what the call needs
approval for (``shell``, ``web``, ``edit``, ``mcp``; ``None``: never asks).

Example:
    >>> sorted(k for k, e in EXECUTORS.items() if e.gate == "web")
    ['webFetchToolCall', 'webSearchToolCall']
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import wire
from . import workspace as tools
from .context import ASK_MODE_REFUSAL, Decision, TurnContext
from .planner import Action, count

HUGE_LINE_BYTES = 20 * 1024 * 1024
ASK_SKIPPED = "Questions skipped by the user, continue with the information you already have"
QUESTIONS: list[dict[str, Any]] = [
    {
        "id": "choice",
        "prompt": "How should I proceed?",
        "options": [{"id": "a", "label": "Go ahead"}, {"id": "b", "label": "Stop"}],
        "allowMultiple": False,
    }
]
"""The question the agent asks for ``ask me …``."""


@dataclass(slots=True)
class Done:
    """A call's result: ``outcome`` (print mode's wire result), ``raw_output`` (ACP's
    ``rawOutput``), ``diff`` (path, old text, new text) for edits, ``rejected``.

    Example:
        >>> Done({"success": {}}).rejected
        False
    """

    outcome: dict[str, Any]
    raw_output: dict[str, Any] | None = None
    diff: tuple[str, str, str] | None = None
    rejected: bool = False
    texts: list[str] = field(default_factory=list)


ArgsFn = Callable[[TurnContext, Action, str], "tuple[dict[str, Any], str | None]"]
RunFn = Callable[[TurnContext, Action, Decision], Done]


@dataclass(frozen=True, slots=True)
class Executor:
    """How one kind of call is described (``args``), run (``run``) and gated (``gate``)."""

    args: ArgsFn
    run: RunFn
    gate: str | None = None


def _path(ctx: TurnContext, name: str) -> str:
    path = tools.inside(ctx.workspace, name)
    return str(path) if path else name


def _refused(a: Action, d: Decision, what: str) -> Done:
    if d.denied:
        a.answer = f"I could not {what}: {d.reason[0].lower()}{d.reason[1:]}."
        return Done(wire.permission_denied(d.reason), rejected=True)
    a.answer = f"I could not {what}: the call was rejected."
    return Done(wire.rejected(d.reason or "User Rejected"), rejected=True)


# ---- read-only ---------------------------------------------------------------------------------


def _ls_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.ls_args(str(ctx.workspace)), None


def _ls_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if not d.allowed:
        return _refused(a, d, "list the workspace")
    outcome, names = tools.tree(ctx.workspace)
    if not names:
        a.answer = "The workspace is empty."
    else:
        n_dirs = sum(1 for x in names if x.endswith("/"))
        listing = "\n".join(f"- {x}" for x in names)
        a.answer = (
            f"The workspace contains {count(len(names) - n_dirs, 'file')} and "
            f"{count(n_dirs, 'folder')} at the top level:\n{listing}"
        )
    return Done(outcome, {"files": names})


def _read_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.read_args(_path(ctx, a.target)), None


def _read_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if not d.allowed:
        # ACP shows a denied read as "Permission denied" (ACP.md §7 [obs:RH])
        a.answer = f"I could not read `{a.target}`: permission denied."
        reason = d.reason or "Permission denied"
        outcome = wire.permission_denied(reason) if d.denied else wire.rejected(reason)
        return Done(outcome, rejected=True, texts=["Permission denied"])
    if a.extra == "huge":
        line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ sim\n"
        content = line * (HUGE_LINE_BYTES // len(line))
        a.answer = f"`{a.target}` has {content.count(chr(10))} lines."
        return Done(wire.read_success(str(ctx.workspace / a.target), content), {"content": content})
    outcome, text = tools.read(ctx.workspace, a.target)
    if text is None:
        a.answer = f"I could not read `{a.target}`: {outcome['error']['error'].lower()}."
        return Done(outcome, {"error": outcome["error"]["error"]})
    if not text:
        a.answer = f"`{a.target}` is empty."
    else:
        lines = text.splitlines()
        shown = "\n".join(lines[:20]) + ("\n…" if len(lines) > 20 else "")
        a.answer = f"`{a.target}` has {len(lines)} lines:\n```\n{shown}\n```"
    return Done(outcome, {"content": text})


def _grep_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.grep_args(a.target, str(ctx.workspace)), None


def _grep_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if not d.allowed:
        return _refused(a, d, f"search for `{a.target}`")
    outcome, matches = tools.grep(ctx.workspace, a.target)
    total = sum(len(m) for _, m in matches)
    if not total:
        a.answer = f"No matches for `{a.target}`."
    else:
        where = ", ".join(f"{f}:{n}" for f, hits in matches for n, _ in hits[:5])
        a.answer = (
            f"Found {count(total, 'match')} for `{a.target}` in {count(len(matches), 'file')}: {where}."
        )
    return Done(outcome, {"totalMatches": total, "truncated": False})


def _glob_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.glob_args(a.target, str(ctx.workspace)), None


def _glob_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if not d.allowed:
        return _refused(a, d, f"find files matching `{a.target}`")
    outcome, files = tools.glob(ctx.workspace, a.target)
    a.answer = (
        f"{count(len(files), 'file')} match `{a.target}`: " + ", ".join(files[:20]) + "."
        if files
        else f"No files match `{a.target}`."
    )
    return Done(outcome, {"totalFiles": len(files), "truncated": False})


# ---- changes -----------------------------------------------------------------------------------


def _before(ctx: TurnContext, name: str) -> str:
    path = tools.inside(ctx.workspace, name)
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path else ""
    except OSError:
        return ""


def new_content(ctx: TurnContext, a: Action) -> str:
    """The file's content after the edit ``a`` (write, append or replace).

    Example:
        >>> import tempfile
        >>> from .ids import Clock, TurnIds
        >>> ctx = TurnContext("c", Path(tempfile.mkdtemp()), "m", "p", False, False, [], Clock(),
        ...                   TurnIds("c", 0, "p", call_style="tool"))
        >>> new_content(ctx, Action("editToolCall", "", "a.txt", "x", "append"))
        'x\\n'
    """
    if a.extra == "write":
        return a.text
    before = _before(ctx, a.target)
    if a.extra == "append":
        sep = "" if not before or before.endswith("\n") else "\n"
        return before + sep + a.text.rstrip("\n") + "\n"
    if a.extra.startswith("replace:"):
        return before.replace(a.extra[len("replace:") :], a.text.rstrip("\n"))
    return a.text


def _edit_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.edit_args(_path(ctx, a.target), new_content(ctx, a).rstrip("\n")), None


def _edit_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if not d.allowed:
        return _refused(a, d, f"edit `{a.target}`")
    before, after = _before(ctx, a.target), new_content(ctx, a)
    outcome, _path_text, created = tools.edit(ctx.workspace, a.target, after)
    if "error" in outcome:
        a.answer = f"I could not edit `{a.target}`: {outcome['error']['error']}."
        return Done(outcome, {"error": outcome["error"]["error"]})
    a.answer = f"{'Created' if created else 'Updated'} `{a.target}`."
    return Done(outcome, None, (_path(ctx, a.target), before, after))


def _delete_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.delete_args(_path(ctx, a.target), call_id), None


def _delete_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if not d.allowed:
        return _refused(a, d, f"delete `{a.target}`")
    before = _before(ctx, a.target)
    outcome = tools.delete(ctx.workspace, a.target)
    if "success" in outcome:
        a.answer = f"Deleted `{a.target}`."
        return Done(outcome, None, (_path(ctx, a.target), before, ""))
    a.answer = f"I could not delete `{a.target}`: {outcome['error']['error']}."
    return Done(outcome, {"error": outcome["error"]["error"]})


# ---- shell and web -----------------------------------------------------------------------------


def _shell_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    description = f"Run {a.target.split()[0] if a.target.split() else 'command'}"
    args = wire.shell_args(
        a.target,
        call_id,
        conversation_id=ctx.session_id,
        request_id=ctx.ids.request_id,
        description=description,
        timeout_ms=tools.SHELL_TIMEOUT_MS,
    )
    return args, description


def _shell_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if d.denied:
        a.answer = f"I could not run `{a.target}`: {d.reason[0].lower()}{d.reason[1:]}."
        return Done(wire.permission_denied(d.reason, command=a.target, workingDirectory=str(ctx.workspace)),
                    rejected=True)
    if not d.allowed:
        hint = "" if ctx.acp else f" ({d.reason})" if d.reason else " (run with --force to allow it)"
        a.answer = f"I could not run `{a.target}`: the command was rejected{hint}."
        # the reason is "" when --force is missing (recording 07); ask mode says why
        reason = d.reason if d.reason == ASK_MODE_REFUSAL else ""
        return Done(wire.shell_rejected(a.target, str(ctx.workspace), reason), rejected=True)
    # seeded (fake clock): a duration derived from the seed and the command, not the measured one
    outcome, code, out, err, ms = tools.run_shell(
        ctx.workspace, a.target, elapsed=lambda measured: ctx.clock.elapsed_ms(measured, a.target),
        waiting=ctx.waiting,
    )
    ctx.clock.advance(ms)
    shown = (out + err).rstrip("\n")
    if "timeout" in outcome:
        a.answer = f"`{a.target}` did not finish within {tools.SHELL_TIMEOUT_MS // 1000} s; I stopped it."
    else:
        a.answer = f"`{a.target}` exited with code {code}."
    if shown:
        a.answer += f" Output:\n```\n{shown[:4000]}\n```"
    return Done(outcome, {"exitCode": code, "stdout": out, "stderr": err})


def _fetch_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.web_fetch_args(a.target, call_id), None


def _fetch_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if not d.allowed:
        a.answer = f"I couldn't fetch {a.target} — the web fetch was rejected."
        return Done(wire.rejected("User Rejected"), rejected=True)
    a.answer = f"I couldn't fetch {a.target} — the simulator has no network access."
    error = "Network access is not available in cursor-agent-sim"
    return Done(wire.error_outcome(error, url=a.target), {"error": error})


def _search_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.web_search_args(a.target, call_id), None


def _search_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if d.denied:
        return _refused(a, d, f"search the web for {a.target}")
    if not d.allowed:
        a.answer = f"I couldn't search the web for {a.target} — the search was rejected."
        return Done(wire.rejected("User Rejected"), rejected=True)
    a.answer = f"I couldn't search the web for {a.target} — the simulator has no network access."
    error = "Network access is not available in cursor-agent-sim"
    return Done(wire.error_outcome(error), {"error": error})


# ---- questions and plans -----------------------------------------------------------------------


def _ask_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.ask_question_args("Before I start", QUESTIONS), None


def _ask_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if d.answers is None:
        a.answer = "You didn't pick an option, so I'll continue with what I have."
        return Done(wire.rejected(ASK_SKIPPED), {"skipped": True})
    labels = {o["id"]: o["label"] for q in QUESTIONS for o in q["options"]}
    picked = [labels.get(x, x) for x in d.answers]
    a.answer = f"You chose: {', '.join(picked)}." if picked else "You chose nothing."
    return Done({"success": {"answers": list(d.answers)}}, {"answers": list(d.answers)})


def _todos(ctx: TurnContext, a: Action) -> list[dict[str, Any]]:
    now = ctx.clock.now_ms()
    return [
        wire.todo_item(str(i + 1), item, "TODO_STATUS_IN_PROGRESS" if i == 0 else "TODO_STATUS_PENDING", now)
        for i, item in enumerate(a.text.split("\n"))
    ]


def _todos_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.todos_args(_todos(ctx, a), merge=False), None


def _todos_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    todos = _todos(ctx, a)
    a.answer = f"I wrote a plan of {count(len(todos), 'todo')}."
    return Done(wire.todos_success(todos, was_merge=False), {"success": True})


def _mcp_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.mcp_args(a.extra, a.target, json.loads(a.text), call_id), f"Call {a.target}"


def _mcp_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    """``tools/call`` on the MCP server (:mod:`.mcp_client`); its allowlist applies in print mode.

    ACP's ``rawOutput`` is what the builds send (ACP.md §7, MCP tool row): ``{success: true}``,
    or ``{error: "MCP error -32601: Method not found"}`` for a call that failed (the update is
    ``completed`` either way). A result with ``isError: true`` is not recorded over ACP: it is
    sent as an ``error`` with the tool's text, so that a client sees it failed, as in print mode.
    """
    if not d.allowed:
        return _refused(a, d, f"call `{a.target}`")
    mcp = ctx.mcp
    outcome = (mcp.call(a.extra, a.target, json.loads(a.text), ctx.waiting) if mcp is not None
               else {"serverNotFound": {"name": a.extra}})
    success: Any = outcome.get("success")
    if isinstance(success, dict):
        text = "\n".join(str(c["text"]["text"]) for c in success["content"])
        failed = bool(success["isError"])
        a.answer = f"`{a.target}` {'failed' if failed else 'returned'}: {text}"
        return Done(outcome, {"error": text} if failed else {"success": True})
    if "rejected" in outcome:
        a.answer = (f"I could not call `{a.target}`: the call was rejected." if ctx.acp else
                    f"I could not call `{a.target}`: the call was rejected (it is not in the "
                    "allowlist; run with --force to allow it).")
        return Done(outcome, rejected=True)
    body = next(iter(outcome.values()))
    message = str(body.get("error") or body.get("name") or body) if isinstance(body, dict) else str(body)
    if "serverNotFound" in outcome:
        message = f"MCP server not found: {message}"
    a.answer = f"I could not call `{a.target}`: {message}."
    return Done(outcome, {"error": message})


def _mcp_tools_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return wire.get_mcp_tools_args(a.extra, call_id, a.target), None


def _mcp_tools_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    described = ctx.mcp.describe(a.target) if ctx.mcp is not None else {"tool": a.target}
    return Done({"success": {"content": json.dumps(described, indent=2, ensure_ascii=False)}})


def plan_file(ctx: TurnContext, a: Action) -> Path:
    """Where a plan goes when the client does not answer ``cursor/create_plan``
    (``.cursor/plans/<name>-<id>.plan.md`` in the workspace, as Cursor writes it).

    Example:
        >>> import tempfile
        >>> from .ids import Clock, TurnIds
        >>> ctx = TurnContext("c", Path("/ws"), "m", "p", False, False, [], Clock(),
        ...                   TurnIds("c", 0, "p", call_style="tool"))
        >>> plan_file(ctx, Action("createPlanToolCall", "", "Edit a.txt")).name.startswith("edit-a-txt-")
        True
    """
    slug = "-".join("".join(c if c.isalnum() else " " for c in a.target.lower()).split())[:40] or "plan"
    return ctx.workspace / ".cursor" / "plans" / f"{slug}-{ctx.ids.request_id[:8]}.plan.md"


def plan_markdown(a: Action) -> str:
    """The plan's text: a title and numbered steps.

    Example:
        >>> plan_markdown(Action("createPlanToolCall", "", "Do it", "a\\nb"))
        '# Do it\\n\\n1. a\\n2. b\\n'
    """
    steps = "".join(f"{i}. {s}\n" for i, s in enumerate(a.text.split("\n"), 1))
    return f"# {a.target}\n\n{steps}"


def _plan_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return {"name": a.target, "plan": plan_markdown(a)}, None


def _plan_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    if d.fallback:
        path = plan_file(ctx, a)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(plan_markdown(a), encoding="utf-8")
        a.answer = f"I saved the plan to {path}. Switch to agent mode to carry it out."
        return Done({"success": {"path": str(path)}}, None, texts=[f"Plan saved to {path.as_uri()}"])
    if d.allowed:
        a.answer = f"The plan “{a.target}” was accepted. Switch to agent mode to carry it out."
        return Done({"success": {}}, {"accepted": True})
    a.answer = f"The plan “{a.target}” was rejected" + (f": {d.reason}." if d.reason else ".")
    return Done(wire.rejected(d.reason or "Plan rejected"), {"accepted": False}, rejected=True)


def _task_args(ctx: TurnContext, a: Action, call_id: str) -> tuple[dict[str, Any], str | None]:
    return {"description": a.target, "prompt": a.text, "subagentType": "generalPurpose"}, a.target


def _task_run(ctx: TurnContext, a: Action, d: Decision) -> Done:
    a.answer = f"The subagent finished: {a.target}."
    return Done({"success": {"result": a.answer}}, {"durationMs": 7, "isBackground": False})


EXECUTORS: dict[str, Executor] = {
    "lsToolCall": Executor(_ls_args, _ls_run),
    "readToolCall": Executor(_read_args, _read_run),
    "grepToolCall": Executor(_grep_args, _grep_run),
    "globToolCall": Executor(_glob_args, _glob_run),
    "editToolCall": Executor(_edit_args, _edit_run, gate="edit"),
    "deleteToolCall": Executor(_delete_args, _delete_run, gate="edit"),
    "shellToolCall": Executor(_shell_args, _shell_run, gate="shell"),
    "webFetchToolCall": Executor(_fetch_args, _fetch_run, gate="web"),
    "webSearchToolCall": Executor(_search_args, _search_run, gate="web"),
    "askQuestionToolCall": Executor(_ask_args, _ask_run),
    "updateTodosToolCall": Executor(_todos_args, _todos_run),
    "createPlanToolCall": Executor(_plan_args, _plan_run),
    "taskToolCall": Executor(_task_args, _task_run),
    "mcpToolCall": Executor(_mcp_args, _mcp_run, gate="mcp"),
    "getMcpToolsToolCall": Executor(_mcp_tools_args, _mcp_tools_run),
}
"""Every kind of call the agent makes, by its print-mode wire key."""
