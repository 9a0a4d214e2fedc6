"""Segments join with no separator (PROTOCOL.md §3.4, "…content.I couldn't…"); whether the
segment before a tool call ends with a newline depends on the model, as in the recordings:
Composer's do (03, 08), GPT-5 Mini's do not (04, 07)."""

from __future__ import annotations

from .conftest import Sim

PROMPT = "append probe13 to notes.txt"
INTRO = "I'll read `notes.txt` and append `probe13` to the end."


def test_a_composer_segment_ends_with_a_newline(sim: Sim) -> None:
    t = sim.stream("--model", "composer-2.5-fast", PROMPT).transcript
    assert (t.result_text or "").startswith(INTRO + "\n`notes.txt`")


def test_another_models_segment_does_not(sim: Sim) -> None:
    t = sim.stream("--model", "gpt-5-mini", PROMPT).transcript
    assert (t.result_text or "").startswith(INTRO + "`notes.txt`")
    assert t.text == t.result_text
