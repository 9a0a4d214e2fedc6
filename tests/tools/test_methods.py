"""``@tool`` on a method: the tool, taken from an instance (``shop.lookup_order``), is bound to
it: its schema has no ``self``, the agent's call runs the method of that instance, and a plain
call works as the method's. It used to show the agent a required ``self`` (whatever JSON the agent
put there was passed as the instance) and ``shop.lookup_order("A1")`` raised ``TypeError``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.protocol import ToolKind
from cursor_agent_api.tools import Tool, tool
from cursor_agent_api.tools.server import ToolServer


@tool
def module_level(order_id: str) -> str:
    """A tool of the module."""
    return f"module {order_id}"


class Shop:
    """A service object holding its data."""

    alias = module_level  # a tool stored on a class: not a method, never bound

    def __init__(self, name: str) -> None:
        self.name = name
        self.orders = {"A1": "shipped"}

    @tool
    def lookup_order(self, order_id: str) -> str:
        """Look up an order's status."""
        return f"{self.name}: {self.orders[order_id]}"

    @tool(name="restock", input_schema={"type": "object", "properties": {"sku": {"type": "string"}}})
    async def restock(self, request: dict[str, Any]) -> str:
        """Restock an item."""
        return f"{self.name} restocks {request['sku']}"


def test_a_method_taken_from_an_instance_is_bound() -> None:
    shop = Shop("north")
    bound = shop.lookup_order
    assert isinstance(bound, Tool) and bound.name == "lookup_order"
    assert bound.input_schema["required"] == ["order_id"] and "self" not in bound.input_schema["properties"]
    assert bound.description == "Look up an order's status."
    assert shop.lookup_order("A1") == "north: shipped"  # still callable as the method
    assert Shop.lookup_order(shop, "A1") == "north: shipped"
    record = asyncio.run(bound.invoke({"order_id": "A1"}))
    assert record.ok and record.value == "north: shipped"
    assert asyncio.run(bound.invoke({"order_id": "A1", "self": {}})).error == \
        "invalid arguments: self: Extra inputs are not permitted"
    restock = Shop("south").restock
    assert restock.is_async and asyncio.run(restock.invoke({"sku": "S"})).value == "south restocks S"


def test_a_tool_stored_on_a_class_is_not_bound() -> None:
    assert Shop.alias is module_level and Shop("x").alias is module_level
    assert Shop("x").alias("A1") == "module A1"


class Tools:
    """A class as a folder of tools: no ``self``."""

    @tool
    def ping(order_id: str) -> str:  # type: ignore[misc]  # (no self: a plain function here)
        """Ping an order."""
        return f"pong {order_id}"


def test_a_function_in_a_class_without_self_stays_a_plain_tool() -> None:
    """Review 53: only a first parameter named ``self`` makes a method; ``order_id`` was taken
    for one (gone from the schema) and ToolServer refused ``Tools.ping`` (it worked before)."""
    assert Tools.ping.input_schema["required"] == ["order_id"]
    assert Tools.ping("A1") == "pong A1"
    ToolServer([Tools.ping])  # (no TypeError)


def test_a_method_not_bound_to_an_instance_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"lookup_order is a method of Shop: .*tools=\[obj\.lookup_order\]"):
        ToolServer([Shop.lookup_order])


def test_the_agent_calls_the_method_of_its_instance(sim: Callable[..., Any], user_workspace: Path) -> None:
    shop = Shop("north")
    with CursorAgentClient(sim(), tools=[shop.lookup_order]) as client:
        result = client.query('Use lookup_order {"order_id": "A1"}')
    (call,) = [c for c in result.tool_calls if c.kind is ToolKind.MCP]
    assert call.local is not None and call.local.value == "north: shipped", result.result


class Catalog:
    """Tools over a class method and a static method (the session's notes: ``@tool`` over
    ``@classmethod`` was refused with "@tool needs a function, got classmethod")."""

    region = "eu"

    @tool
    @classmethod
    def price(cls, sku: str) -> str:
        """Price of an item in the class's region."""
        return f"{cls.region}: {sku} costs 3"

    @tool
    @staticmethod
    def stock(sku: str) -> str:
        """Stock of an item."""
        return f"{sku}: 5 left"


def test_a_class_method_tool_is_bound_to_its_class() -> None:
    assert Catalog.price.input_schema["required"] == ["sku"]  # no cls for the agent to set
    assert Catalog.price("A1") == Catalog().price("A1") == "eu: A1 costs 3"
    assert asyncio.run(Catalog.price.invoke({"sku": "A1"})).value == "eu: A1 costs 3"
    ToolServer([Catalog.price])  # (no TypeError: nothing left to bind)


def test_a_static_method_tool_is_a_plain_tool() -> None:
    assert Catalog.stock.input_schema["required"] == ["sku"]
    assert Catalog.stock("A1") == Catalog().stock("A1") == "A1: 5 left"
    ToolServer([Catalog.stock])
