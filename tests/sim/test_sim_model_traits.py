"""Per-model traits the recordings show (audit 11, findings 5 and 6).

Thinking: none of the six GPT-5 Mini recordings (01, 02, 04-07) has a ``thinking`` event, the
Composer ones (03, 08) and the Auto fragment do; the simulator streamed thinking on every turn.
Call ids: the only Auto recording (``fragments/faz-ai-2026.10.01``) has ``call-<uuid>-<n>\\n
fc_<uuid>_0``; the simulator gave Auto GPT's ``call_<24>\\nfc_<hex>``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cursor_agent_api.protocol import EventType
from cursor_agent_api.sim import models

from .acp_peer import Peer
from .conftest import Sim

RECORDINGS = Path(__file__).parents[1] / "data" / "cursor-real"
AUTO_ID = re.compile(r"call-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+\n"
                     r"fc_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}_0")


def _recorded_thinking() -> dict[str, bool]:
    """Display name -> whether its recordings stream thinking (each recording agrees)."""
    seen: dict[str, set[bool]] = {}
    for path in sorted(RECORDINGS.glob("**/*.ndjson")):
        events = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        model = next(e["model"] for e in events if e.get("model"))
        seen.setdefault(model, set()).add(any(e.get("type") == "thinking" for e in events))
    assert all(len(v) == 1 for v in seen.values()), seen
    return {model: v.pop() for model, v in seen.items()}


def test_the_trait_follows_every_recorded_model() -> None:
    recorded = _recorded_thinking()
    assert recorded == {"GPT-5 Mini": False, "Composer 2.5 Fast": True, "Auto": True}
    by_name = {name: slug for slug, name in models.MODELS.items()}
    for name, thinks in recorded.items():
        assert models.streams_thinking(by_name[name]) is thinks
        assert models.streams_thinking(name) is thinks  # the display name, as a turn knows it


@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize(("model", "thinks"), [("gpt-5-mini", False), ("auto", True),
                                               ("composer-2.5-fast", True)])
def test_print_mode_thinks_only_for_models_that_do(sim: Sim, model: str, thinks: bool, partial: bool) -> None:
    flags = ["--stream-partial-output"] if partial else []
    t = sim.stream(*flags, "--model", model, "read notes.txt").transcript
    assert t.success and len(t.tool_calls) == 1
    thinking = [e for e in t.events if e.type in (EventType.THINKING_DELTA, EventType.THINKING_COMPLETED)]
    assert bool(thinking) is thinks
    assert bool(t.thinking) is thinks


def test_acp_sends_no_thoughts_for_gpt_5_mini(sim: Sim, ws: Path) -> None:
    counts = {}
    for model in ("gpt-5-mini", "auto"):
        peer = Peer.start(sim, "--model", model)
        try:
            peer.init()
            sid = peer.new_session(ws)
            peer.prompt(sid, "list the files")
            counts[model] = sum(u["sessionUpdate"] == "agent_thought_chunk" for u in peer.updates(sid))
        finally:
            peer.close()
    assert counts["gpt-5-mini"] == 0 and counts["auto"] > 0


def test_auto_call_ids_have_the_recorded_shape(sim: Sim) -> None:
    recorded = {json.loads(x)["call_id"] for x in next((RECORDINGS / "fragments").glob("*.ndjson"))
                .read_text().splitlines() if '"call_id"' in x}
    assert recorded and all(AUTO_ID.fullmatch(i) for i in recorded)
    t = sim.stream("list the files, grep TODO and read notes.txt").transcript  # auto: the default
    assert t.model == "Auto"
    ids = [c.call_id for c in t.tool_calls]
    assert len(ids) == 3 and all(AUTO_ID.fullmatch(i) for i in ids), ids
    assert len(set(ids)) == 3
    assert [i.split("\n")[0].rsplit("-", 1)[1] for i in ids] == ["0", "1", "2"]
