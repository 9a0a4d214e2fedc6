"""``@tool`` on what is callable but not a plain function (a ``functools.partial``, an object
with ``__call__``), and return values that hold pydantic models."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from typing import Any

import pydantic
import pytest

from cursor_agent_api.tools import tool


def lookup(db: dict[str, Any], order_id: str, verbose: bool = False) -> dict[str, Any]:
    """Look up an order."""
    return {"order": db[order_id], "verbose": verbose}


DB = {"A1": {"status": "shipped"}}


@pytest.mark.parametrize("bound", [functools.partial(lookup, DB), functools.partial(lookup, db=DB),
                                   functools.partial(functools.partial(lookup, db=DB), verbose=True)],
                         ids=["positional", "keyword", "nested"])
def test_a_partial_is_a_tool_of_the_parameters_it_leaves(bound: Any) -> None:
    t = tool(name="find_order")(bound)
    assert t.name == "find_order" and t.description == "Look up an order."
    assert not t.is_async
    props = t.input_schema["properties"]
    assert "db" not in props and t.input_schema["required"] == ["order_id"]  # bound: not the agent's
    verbose = bound.keywords.get("verbose", False)
    assert ("verbose" in props) is not verbose
    got = asyncio.run(t.invoke({"order_id": "A1"}))
    assert got.ok and got.value == {"order": {"status": "shipped"}, "verbose": verbose}
    refused = asyncio.run(t.invoke({"order_id": "A1", "db": {}}))
    assert not refused.ok and "db: Extra inputs are not permitted" in (refused.error or "")


def test_a_partial_is_named_after_its_function_by_default() -> None:
    assert tool(functools.partial(lookup, DB)).name == "lookup"


def test_an_async_partial_is_async() -> None:
    async def add(a: int, b: int) -> int:
        return a + b

    t = tool(functools.partial(add, b=1))
    assert t.is_async and t.input_schema["required"] == ["a"]
    assert asyncio.run(t.invoke({"a": 2})).value == 3


class Adder:
    """Add a fixed amount."""

    def __init__(self, amount: int) -> None:
        self.amount = amount

    async def __call__(self, a: int) -> int:
        return a + self.amount


def test_a_callable_object_is_a_tool_of_its_call() -> None:
    t = tool(name="add_two")(Adder(2))
    assert t.is_async and t.description == "Add a fixed amount."
    assert t.input_schema["required"] == ["a"] and list(t.input_schema["properties"]) == ["a"]
    assert asyncio.run(t.invoke({"a": 1})).value == 3
    assert "a: Input should be a valid integer" in (asyncio.run(t.invoke({"a": "x"})).error or "")


def test_a_callable_object_needs_a_name() -> None:
    with pytest.raises(ValueError, match=r"Adder object has no name: give the tool one, "
                                         r"@tool\(name=\.\.\.\)"):
        tool(Adder(2))


class Point(pydantic.BaseModel):
    x: int


def test_lists_and_dicts_of_pydantic_models_are_json() -> None:
    @tool
    def points() -> list[Point]:
        return [Point(x=1), Point(x=2)]

    @tool
    def named() -> dict[str, Any]:
        return {"origin": Point(x=0), "others": [Point(x=3)], "n": float("nan")}

    got = asyncio.run(points.invoke({}))
    assert got.ok and got.texts == ['[{"x": 1}, {"x": 2}]'] and got.to_dict()["value"] == [
        {"x": 1}, {"x": 2}]
    got = asyncio.run(named.invoke({}))
    assert got.ok and got.texts == ['{"origin": {"x": 0}, "others": [{"x": 3}], "n": null}']


def test_a_value_json_cannot_hold_is_named_in_the_error() -> None:
    @tool
    def with_set() -> list[Any]:
        return [1, {2, 3}]

    @tool
    def loop() -> dict[str, Any]:
        d: dict[str, Any] = {}
        d["d"] = d
        return d

    @tool
    def odd() -> object:
        return object()

    assert asyncio.run(with_set.invoke({})).error == (
        "TypeError: the tool returned a list holding a set, which JSON cannot hold (return a str, "
        "a pydantic model, or JSON values: dict, list, str, number, bool, None — pydantic models "
        "inside them too)")
    assert asyncio.run(loop.invoke({})).error == (
        "TypeError: the tool returned a dict that contains itself, which JSON cannot hold")
    assert (asyncio.run(odd.invoke({})).error or "").startswith(
        "TypeError: the tool returned a object, which JSON cannot hold (return a str, ")


class Opaque:
    pass


class Holder(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    thing: Opaque


def test_a_model_pydantic_cannot_write_is_named_too() -> None:
    @tool
    def holders() -> list[Holder]:
        return [Holder(thing=Opaque())]

    @tool
    def keyed() -> dict[Any, int]:
        return {(1, 2): 3}

    assert (asyncio.run(holders.invoke({})).error or "").startswith(
        "TypeError: the tool returned a list holding a Holder, which JSON cannot hold (")
    assert (asyncio.run(keyed.invoke({})).error or "").startswith(
        "TypeError: the tool returned a dict with a key JSON cannot hold (keys must be str, ")


@pytest.mark.parametrize("arguments", [[1], "x", 3])
def test_arguments_that_are_not_an_object_are_an_error_result(arguments: Any) -> None:
    @tool
    def double(n: int) -> int:
        return 2 * n

    got = asyncio.run(double.invoke(arguments))
    assert got.error == "invalid arguments: the input must be a JSON object"
    assert got.arguments == {"arguments": arguments}  # kept, as the agent sent it


class Undocumented:
    def __call__(self, a: int) -> int:
        return a


@dataclasses.dataclass
class Scaled:
    factor: int = 2

    def __call__(self, a: int) -> int:
        """Scale a number."""
        return a * self.factor


def test_a_callable_objects_description_is_its_own_docstring_only() -> None:
    """Review 42: an object with no docstring was described to the agent as 'Call self as a
    function.' (Python's own), and a dataclass by its generated 'Scaled(factor: int = 2)'."""
    assert tool(name="same")(Undocumented()).description == ""
    assert tool(name="scale")(Scaled()).description == "Scale a number."


class Faulty(pydantic.BaseModel):
    x: int

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def y(self) -> int:
        raise ValueError("the value 42 is wrong")


def test_a_model_whose_serialisation_raises_says_so() -> None:
    """Review 42: a model raising ``ValueError`` as it is written was reported as a value
    that "contains itself"."""
    @tool
    def faulty() -> list[Faulty]:
        return [Faulty(x=1)]

    error = asyncio.run(faulty.invoke({})).error or ""
    assert "contains itself" not in error, error
    assert "Faulty" in error and "the value 42 is wrong" in error, error
