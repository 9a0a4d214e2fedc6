"""The planner reads crafted prompts in linear time, and reads every ordinary prompt as before.

The guards are hang guards, not timings: each prompt is planned in well under a second now;
before, the ``replace … with … in`` reading, the arithmetic one and the ``say`` / ``reply with
exactly`` ones rescanned the prompt from every keyword, digit or space (a 56 KB prompt took
5.7 s, 16,000 digits 16.8 s, ``replace`` and 3,200 spaces 72 s), so these sizes took hours.
The pytest timeout stops them at 60 s.

The readings are checked against the patterns they replace (kept below as they were), on the
prompts of the suite's phrasing and on seeded random prompts made of the planner's keywords.
"""

from __future__ import annotations

import random
import re

import pytest

from cursor_agent_api.sim import planner
from cursor_agent_api.sim.planner import plan_turn

CRAFTED = {
    "replace-with-in": "replace a with b in c " * 50_000,
    "replace-spaces": "replace" + " " * 200_000 + "x",
    "replace-newlines": "replace\n" + "\n" * 200_000 + "x",
    "digits": "checksum " + "7" * 200_000,
    "number-runs": "1." * 100_000,
    "say-spaces": "say x" + " " * 200_000 + "y",
    "exactly-spaces": "reply with exactly: x" + " " * 200_000 + "y",
    "reply-without-done": "reply " * 50_000,
    "append-to": "append x to " * 30_000,
    "write-x": "write x " * 40_000,
    "grep-spaces": "grep" + " " * 200_000 + "x",
    "run-spaces": "run x" + " " * 400_000 + "y",
    # file names may start with ``/`` and hold ``..`` and dots (wave 11): runs of path characters
    "read-parents": "read " + "../" * 100_000,
    "read-slash-a": "read " + "/a" * 150_000,
    "read-dotted-dirs": "read " + "a.aaaaaaaaa/" * 30_000,
    "create-dotted": "create " + "a./" * 100_000,
    # the todo rule skips its words inside backticks and file names (audit 11)
    "todo-in-backticks": "`plan` " * 50_000,
    "todo-in-names": "plan.md " * 50_000,
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_prompts_are_planned_in_linear_time(name: str) -> None:
    plan = plan_turn(CRAFTED[name])
    assert plan.kinds() is not None


def test_the_plans_of_the_documented_prompts() -> None:
    replace = plan_turn("replace 'alpha' with 'gamma' in notes.txt")
    assert replace.kinds() == [["readToolCall"], ["editToolCall"]]
    edit = plan_turn("replace 'alpha' with 'gamma' in the file notes.txt").groups[1][0]
    assert (edit.target, edit.text, edit.extra) == ("notes.txt", "gamma", "replace:alpha")
    append = plan_turn("append the line probe13 to the end of notes.txt").groups[1][0]
    assert (append.target, append.text, append.extra) == ("notes.txt", "probe13", "append")
    write = plan_turn("write hello there to out.txt").groups[0][0]
    assert (write.target, write.text) == ("out.txt", "hello there\n")
    assert plan_turn("What is 6 * 7?").direct == "42"
    assert plan_turn("checksum 12345+5").direct == "12350"
    assert plan_turn("say:  hi there  ").direct == "hi there"
    assert plan_turn("Do it. Reply with exactly: OK").exact == "OK"
    assert plan_turn("Do it and reply with DONE at the end").done
    assert not plan_turn("Reply. Then DONE").done


def test_file_names_relative_parent_and_absolute() -> None:
    names = planner._FILE.findall(
        "read a/b.txt, ./c.py, ../d.md, ../../e/f.json, /tmp/x.y/g.txt and v1.2 but not "
        "~/h.txt, https://x.io/i.txt, j.txt/, a/../k.txt"
    )
    assert names == ["a/b.txt", "./c.py", "../d.md", "../../e/f.json", "/tmp/x.y/g.txt", "v1.2",
                     "a/../k.txt"]
    assert plan_turn("read ../x.txt").kinds() == [["readToolCall"]]
    assert plan_turn('create /tmp/o.txt with "x"').groups[0][0].target == "/tmp/o.txt"


def test_grep_with_nothing_after_it_is_no_search() -> None:
    # rule_delete cuts its match out of the prompt: "grep " was left, and the planner crashed
    assert plan_turn("grep  delete a.txt").kinds() == [["deleteToolCall"]]


# ---- the same readings as the patterns they replace --------------------------------------------

OLD_APPEND = re.compile(
    r"\bappend\s+(?:the\s+)?(?:line|text|string|word)?\s*(.+?)\s+to\s+(?:the\s+end\s+of\s+)?"
    r"(?:the\s+file\s+)?([\w./-]+\.\w+)",
    re.I | re.S,
)
OLD_REPLACE = re.compile(
    r"\breplace\s+(.+?)\s+with\s+(.+?)\s+in\s+(?:the\s+file\s+)?([\w./-]+\.\w+)", re.I | re.S
)
OLD_WRITE = re.compile(r"\bwrite\s+(.+?)\s+(?:to|into)\s+", re.I | re.S)
OLD_EXACTLY = re.compile(r"reply\s+with\s+exactly\s*:?\s*(.+?)\s*$", re.I | re.S)
OLD_DONE = re.compile(r"\b(?i:reply|respond|end|finish)\b[^.]*\bDONE\b")
OLD_ARITHMETIC = re.compile(r"(-?\d+(?:\.\d+)?)\s*([-+*/x×])\s*(-?\d+(?:\.\d+)?)")
OLD_SAY = re.compile(r"\b(?:say|respond\s+with|answer\s+with|reply\s+with)\s*:?\s*(.+?)\s*$", re.I | re.S)

TOKENS = [
    "replace", "with", "in", "append", "to", "write", "into", "the", "file", "end", "of", "say", "reply",
    "respond", "answer", "exactly", "DONE", "finish", "a.txt", "notes.txt", "x", "'a'", '"b"', "1", "2.5",
    "-3", "+", "*", "/", ":", ".", ",", "line", "text", "create", "`ls`", "remember", "grep", "7", "12345",
    "checksum", "contents", "Reply", "With", "sayonara", "1.2.3", "x3",
]
SEPARATORS = [" ", " ", " ", "\n", "", " : ", ": ", "\t"]


def _prompts() -> list[str]:
    rng = random.Random(20261124)
    out = [
        "replace 'alpha' with 'gamma' in notes.txt", "append probe13 to notes.txt",
        "write hello to a.txt", "reply with exactly: X", "say hi", "What is 6 * 7?",
        "Remember this. Reply with DONE at the end", "respond with: ok", "1.5.3+2", "v1.2-3",
    ]
    for _ in range(6000):
        out.append("".join(rng.choice(TOKENS) + rng.choice(SEPARATORS) for _ in range(rng.randint(1, 16))))
    return out


def _groups(m: re.Match[str] | None) -> tuple[str | None, ...] | None:
    return m.groups() if m else None


def test_the_new_readings_give_what_the_old_patterns_gave() -> None:
    for p in _prompts():
        assert _groups(planner._first("append", planner._APPEND, p)) == _groups(OLD_APPEND.search(p)), p
        assert planner._replace_parts(p) == _groups(OLD_REPLACE.search(p)), p
        assert _groups(planner._first("write", planner._WRITE_TO, p)) == _groups(OLD_WRITE.search(p)), p
        exactly = OLD_EXACTLY.search(p)
        assert planner._rest_of(planner._EXACTLY, p) == (exactly.group(1) if exactly else None), p
        say = OLD_SAY.search(p)
        assert planner._rest_of(planner._SAY, p) == (say.group(1) if say else None), p
        assert planner._asks_for_done(p) == bool(OLD_DONE.search(p)), p
        assert _groups(planner._ARITHMETIC.search(p)) == _groups(OLD_ARITHMETIC.search(p)), p
