"""``@tool`` over a tool (``tool(name="find_order")(lookup_order)``, or two ``@tool`` stacked) is a
renamed copy over the same function: it used to fail with "*args and **kwargs cannot be
described" (the Tool object's own ``__call__``). A single tool given as ``tools=`` is taken as
``[tool]`` (it failed with "'Tool' object is not iterable"); what is no list of tools is refused
saying what ``tools=`` takes."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from cursor_agent_api import AsyncCursorAgentClient
from cursor_agent_api.tools import tool
from cursor_agent_api.tools.host import make_host


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"id": order_id}


class Query(TypedDict):
    sku: str


@tool(name="stock", description="Stock of an item.", input_schema=Query)
def stock_of(query: Query) -> int:
    return len(query["sku"])


def test_a_tool_renamed_is_a_copy_over_its_function() -> None:
    renamed = tool(name="find_order")(lookup_order)
    assert (renamed.name, lookup_order.name) == ("find_order", "lookup_order")
    assert renamed.fn is lookup_order.fn and renamed.input_schema == lookup_order.input_schema
    assert renamed.description == "Look up an order."
    assert renamed("A1") == {"id": "A1"}
    assert asyncio.run(renamed.invoke({"order_id": "A1"})).value == {"id": "A1"}
    again = tool(lookup_order)  # stacked twice: the same tool again
    assert (again.name, again.input_schema) == ("lookup_order", lookup_order.input_schema)


def test_a_renamed_tool_keeps_its_given_schema_and_description() -> None:
    renamed = tool(name="stock_level")(stock_of)
    assert renamed.description == "Stock of an item." and renamed.input_schema == stock_of.input_schema
    assert asyncio.run(renamed.invoke({"sku": "abc"})).value == 3
    described = tool(description="How many are left.")(stock_of)
    assert (described.name, described.description) == ("stock", "How many are left.")


def test_one_tool_given_as_tools_is_a_list_of_one() -> None:
    host = make_host(lookup_order)
    assert host is not None and host.tools == [lookup_order]
    assert AsyncCursorAgentClient(tools=lookup_order)._tools.tools == [lookup_order]


@pytest.mark.parametrize("given", ["lookup_order", {"lookup_order": lookup_order}, 3])
def test_what_is_no_list_of_tools_is_refused_saying_so(given: Any) -> None:
    with pytest.raises(TypeError, match=r"tools= takes a list of @tool functions, got"):
        make_host(given)
