"""The agent answers a customer's question by calling two Python tools; one of them fails.

Run it (the ``[tools]`` extra installed; the Cursor CLI logged in, or the bundled simulator):

    python examples/order_desk.py                              # the real agent, `agent`
    python examples/order_desk.py --agent cursor-agent-sim     # the simulator

``lookup_order`` answers from a small in-memory table; ``track_parcel`` raises (the carrier is
"down"): the agent gets the error message as an ``isError`` result and says so in its answer,
while the traceback stays in this process's log. Each tool call of the stream is linked to the
local call that served it (``call.local``).
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Annotated, Any

from cursor_agent_api import AgentResult, CursorAgentClient
from cursor_agent_api.tools import tool

ORDERS = {"A1": {"id": "A1", "status": "shipped", "parcel": "P-9", "items": 3}}


@tool
def lookup_order(order_id: Annotated[str, "The order's id, such as A1"]) -> dict[str, Any]:
    """Look up an order: its status, its parcel and how many items it has."""
    if order_id not in ORDERS:
        raise KeyError(f"no order {order_id}")
    return ORDERS[order_id]


@tool
async def track_parcel(parcel: Annotated[str, "The parcel number from the order"]) -> str:
    """Where a parcel is now, according to the carrier."""
    raise ConnectionError(f"the carrier's tracking service is down (parcel {parcel})")


QUESTION = ('Where is my order A1? Use lookup_order {"order_id": "A1"} '
            'and track_parcel {"parcel": "P-9"}.')


def ask(agent: str = "agent", workspace: str | None = None) -> AgentResult:
    """Ask the question with both tools; the turn's result."""
    workspace = workspace or tempfile.mkdtemp(prefix="order-desk-")
    with CursorAgentClient(workspace=workspace, agent_binary=agent, trust=True,
                           tools=[lookup_order, track_parcel]) as client:
        return client.query(QUESTION, timeout=300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="agent", help="the agent CLI (default: agent)")
    result = ask(parser.parse_args().agent)
    print(result.result if result.success else f"failed: {result.error}")
    for call in result.tool_calls:
        local = call.local
        if local is None:
            continue
        outcome = f"returned {local.value!r}" if local.ok else f"raised {local.error}"
        print(f"- {local.tool}({local.arguments}) {outcome} in {local.duration_ms:.1f} ms")


if __name__ == "__main__":
    main()
