"""Input schemas from type hints, TypedDicts, pydantic models and raw JSON Schema; bad input."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, List, Optional, TypedDict  # noqa: UP035

import pydantic
import pytest
from typing_extensions import NotRequired

from cursor_agent_api.tools import ArgumentError, tool


class Address(TypedDict):
    city: str
    zip: NotRequired[str]


class Item(pydantic.BaseModel):
    sku: str
    qty: int = 1


def test_hints_of_every_kind() -> None:
    @tool
    def ship(to: Address, items: list[Item], note: Annotated[str, "For the courier"] = "") -> str:
        """Ship items."""
        return f"{to['city']}:{sum(i.qty for i in items)}:{note}"

    schema = ship.input_schema
    assert schema["required"] == ["to", "items"]
    assert schema["properties"]["note"]["description"] == "For the courier"
    assert schema["$defs"]["Address"]["required"] == ["city"]
    ok = asyncio.run(ship.invoke({"to": {"city": "Oslo"}, "items": [{"sku": "a", "qty": 2}]}))
    assert ok.value == "Oslo:2:" and ok.texts == ["Oslo:2:"]
    bad = asyncio.run(ship.invoke({"to": {}, "items": "x", "extra": 1}))
    assert bad.is_error and bad.exception is None
    assert bad.error is not None and "to.city: Field required" in bad.error and "extra" in bad.error


@pytest.mark.parametrize("schema", [
    Address,
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
])
def test_whole_input_schemas(schema: Any) -> None:
    @tool(name="where", input_schema=schema)
    def where(value: dict[str, Any]) -> dict[str, Any]:
        return {"got": value}

    assert where.input_schema["required"] == ["city"]
    assert asyncio.run(where.invoke({"city": "Rome"})).value == {"got": {"city": "Rome"}}
    assert asyncio.run(where.invoke({})).error is not None


def test_pydantic_model_input_and_return_values() -> None:
    @tool(input_schema=Item)
    async def restock(item: Item) -> Item:
        """Restock."""
        return Item(sku=item.sku, qty=item.qty + 10)

    got = asyncio.run(restock.invoke({"sku": "b"}))
    assert got.texts == ['{"sku": "b", "qty": 11}']

    @tool
    def odd() -> object:
        return object()

    assert asyncio.run(odd.invoke({})).error == (
        "TypeError: the tool returned a object, which JSON cannot hold (return a str, a pydantic "
        "model, or JSON values: dict, list, str, number, bool, None — pydantic models inside them "
        "too)")


def test_bad_declarations_fail_where_written() -> None:
    def spread(*values: int) -> None: ...

    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs"):
        tool(spread)
    with pytest.raises(ValueError, match="tool name"):
        tool(name="bad name")(spread)
    with pytest.raises(TypeError, match="must describe an object"):
        tool(input_schema={"type": "string"})(spread)
    assert issubclass(ArgumentError, ValueError)


class Parcel(TypedDict):
    to: Optional[Address]  # noqa: UP045 (the typing spelling is the one under test)
    stops: list[Address]


def _to_optional(to: Optional[Address] = None) -> str:  # noqa: UP045
    return "none" if to is None else to["city"]


def _to_union(to: Address | None = None) -> str:
    return "none" if to is None else to["city"]


def _to_list(to: list[Address]) -> str:
    return ",".join(a["city"] for a in to)


def _to_typing_list(to: List[Address]) -> str:  # noqa: UP006
    return ",".join(a["city"] for a in to)


def _to_dict(to: dict[str, Address]) -> str:
    return ",".join(a["city"] for a in to.values())


def _to_annotated(to: Annotated[list[Address], "Where to"]) -> str:
    return ",".join(a["city"] for a in to)


def _to_parcel(to: Parcel) -> str:
    return ",".join(a["city"] for a in to["stops"])


ONE, MANY, WRONG = {"city": "Oslo"}, [{"city": "Oslo"}, {"city": "Rome"}], {"zip": 1}


@pytest.mark.parametrize(("fn", "good", "bad", "want"), [
    (_to_optional, ONE, WRONG, "Oslo"),
    (_to_union, ONE, WRONG, "Oslo"),
    (_to_list, MANY, [WRONG], "Oslo,Rome"),
    (_to_typing_list, MANY, [WRONG], "Oslo,Rome"),
    (_to_dict, {"home": ONE}, {"home": WRONG}, "Oslo"),
    (_to_annotated, MANY, [WRONG], "Oslo,Rome"),
    (_to_parcel, {"to": None, "stops": MANY}, {"to": WRONG, "stops": []}, "Oslo,Rome"),
])
def test_a_typeddict_nested_in_other_hints(fn: Any, good: Any, bad: Any, want: str) -> None:
    # pydantic refuses typing.TypedDict on Python < 3.12 wherever it sits in a hint
    made = tool(fn)
    assert "Address" in made.input_schema["$defs"]
    assert asyncio.run(made.invoke({"to": good})).value == want
    refused = asyncio.run(made.invoke({"to": bad}))
    assert refused.is_error and refused.exception is None
    assert "invalid arguments" in (refused.error or "") and "city: Field required" in (refused.error or "")


def test_parameters_named_like_pydantic_internals() -> None:
    @tool
    def configure(model_config: str, model_fields: int = 0, _private: str = "p", schema: str = "s") -> str:
        """Store a model configuration by name."""
        return f"{model_config}:{model_fields}:{_private}:{schema}"

    schema = configure.input_schema
    assert sorted(schema["properties"]) == ["_private", "model_config", "model_fields", "schema"]
    assert schema["required"] == ["model_config"]
    assert schema["properties"]["model_config"]["type"] == "string"
    got = asyncio.run(configure.invoke({"model_config": "fast", "_private": "x"}))
    assert got.value == "fast:0:x:s"
    missing = asyncio.run(configure.invoke({}))
    assert missing.error == "invalid arguments: model_config: Field required"
    unknown = asyncio.run(configure.invoke({"model_config": "fast", "p0": 1}))
    assert unknown.error == "invalid arguments: p0: Extra inputs are not permitted"


def test_a_hint_without_a_json_schema_is_a_type_error() -> None:
    def hook(callback: Callable[[int], str]) -> str:
        return callback(1)

    with pytest.raises(TypeError, match="tool 'hook': parameter 'callback' cannot be described"):
        tool(hook)
