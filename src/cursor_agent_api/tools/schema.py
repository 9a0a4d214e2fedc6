"""Input schemas for ``@tool`` functions: from type hints, a TypedDict, a pydantic model or JSON Schema.

What lives here: :class:`ArgumentSpec` — the tool's JSON Schema (what ``tools/list`` shows the
agent) and the one place its arguments are checked and turned into the Python call. Built with
pydantic (the schema and the checks of typed parameters) and ``jsonschema`` (a raw schema), both
dependencies of the ``mcp`` SDK, so nothing is hand-written. What does not: running the function
(:mod:`.tool`), MCP (:mod:`.server`).

The rules:

* without ``input_schema``, each parameter is one property of the input object: plain types,
  ``Annotated[T, "a description"]`` (or ``Annotated[T, pydantic.Field(...)]``), TypedDicts and
  pydantic models as property types; a parameter without a default is required; the function
  is called with keyword arguments;
* with ``input_schema`` (a TypedDict class, a pydantic model class, or a JSON Schema ``dict``
  whose ``type`` is ``"object"``), that describes the whole input, and the function receives
  the checked value as its one argument (a dict, or the model instance).

Example:
    >>> from typing import Annotated
    >>> def lookup(order_id: Annotated[str, "The order's id"], items: bool = False) -> str: ...
    >>> spec = ArgumentSpec.from_function(lookup)
    >>> spec.schema["required"], spec.schema["properties"]["order_id"]["description"]
    (['order_id'], "The order's id")
    >>> spec.bind({"order_id": "A1"})
    ((), {'order_id': 'A1', 'items': False})
    >>> try:
    ...     spec.bind({"items": "maybe"})
    ... except ArgumentError as e:
    ...     print(str(e).replace("; ", "\\n"))
    invalid arguments: order_id: Field required
    items: Input should be a valid boolean, unable to interpret input
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pydantic
import typing_extensions

__all__ = ["ArgumentError", "ArgumentSpec", "Callee", "callee"]


class ArgumentError(ValueError):
    """The agent's arguments do not fit the tool's schema (sent back as an ``isError`` result).

    Example:
        >>> str(ArgumentError("invalid arguments: x: Field required"))
        'invalid arguments: x: Field required'
    """


@dataclass(frozen=True)
class Callee:
    """What a callable handed to ``@tool`` is made of: ``function``, the plain function whose
    type hints, docstring and coroutine flag describe it; ``bound``, the parameters a
    ``functools.partial`` already fills by keyword (not the agent's to set); ``name``, its
    ``__name__`` (a partial's function's), or ``None`` for an object with ``__call__``;
    ``label`` and ``doc``.

    Example:
        >>> def lookup(db: dict, order_id: str) -> str: ...
        >>> c = callee(functools.partial(lookup, db={}))
        >>> c.function is lookup, sorted(c.bound), c.name
        (True, ['db'], 'lookup')
        >>> class Adder:
        ...     def __call__(self, a: int) -> int: ...
        >>> c = callee(Adder())
        >>> c.function is Adder.__call__, c.name, c.label
        (True, None, 'Adder object')
    """

    function: Callable[..., Any]
    bound: frozenset[str]
    name: str | None
    label: str
    """How messages name it: its name, or ``"<class> object"``."""
    doc: str | None
    """Its docstring: the function's; an object's class's, else its ``__call__``'s."""


def callee(fn: Callable[..., Any]) -> Callee:
    """``fn`` taken apart (see :class:`Callee`): partials unwrapped, an object's ``__call__``."""
    bound: set[str] = set()
    target: Any = fn
    while isinstance(target, functools.partial):
        bound.update(target.keywords)
        target = target.func
    if inspect.isroutine(target) or isinstance(target, type):
        name = getattr(target, "__name__", None)
        return Callee(target, frozenset(bound), name, name or repr(target), inspect.getdoc(target))
    call = type(target).__call__ if callable(target) else None  # an object with __call__
    function = call if inspect.isroutine(call) else target
    return Callee(function, frozenset(bound), None, f"{type(target).__name__} object",
                  _own_doc(type(target)) or _own_doc(function))


def _own_doc(thing: Any) -> str | None:
    """``thing``'s own docstring, cleaned: not one inherited (``object``'s, "Call self as a
    function.") nor the one ``@dataclass`` makes up from the signature."""
    doc = thing.__dict__.get("__doc__") if isinstance(thing, type) else getattr(thing, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    if isinstance(thing, type) and dataclasses.is_dataclass(thing) and doc.startswith(thing.__name__ + "("):
        return None
    return inspect.cleandoc(doc)


def _describe(error: pydantic.ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "(input)"
        parts.append(f"{where}: {item['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def _portable(annotation: Any) -> Any:
    """A ``typing.TypedDict`` rebuilt as a ``typing_extensions`` one (pydantic wants that on
    Python < 3.12), wherever it sits: in ``Optional[…]``, ``list[…]``, a union, ``Annotated``,
    another TypedDict's fields; anything else unchanged.

    Example:
        >>> from typing import Optional, TypedDict
        >>> class Address(TypedDict):
        ...     city: str
        >>> import pydantic
        >>> pydantic.TypeAdapter(_portable(Optional[list[Address]])).validate_python([{"city": "Oslo"}])
        [{'city': 'Oslo'}]
    """
    if sys.version_info >= (3, 12):
        return annotation
    if isinstance(annotation, type) and typing.is_typeddict(annotation):
        return _portable_typeddict(annotation) if type(annotation).__module__ == "typing" else annotation
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is None or origin is typing.Literal or not args:
        return annotation
    rebuilt = tuple(_portable(arg) for arg in args)
    if all(new is old for new, old in zip(rebuilt, args, strict=True)):
        return annotation
    make: Any
    if origin is typing.Annotated:
        make = typing.Annotated
        return make[rebuilt]
    if origin is typing.Union or origin is types.UnionType:
        make = typing.Union
        return make[rebuilt]
    if isinstance(annotation, types.GenericAlias):  # list[X], dict[str, X]
        return types.GenericAlias(origin, rebuilt)
    copy_with = getattr(annotation, "copy_with", None)  # typing.List[X] and the like
    return copy_with(rebuilt) if callable(copy_with) else annotation


def _portable_typeddict(annotation: Any) -> Any:
    hints = typing.get_type_hints(annotation, include_extras=True)
    required = getattr(annotation, "__required_keys__", frozenset(hints))
    fields = {}
    for key, hint in hints.items():
        needed = key in required  # unless the hint says (under PEP 563 the class cannot see it)
        while typing.get_origin(hint) in (typing_extensions.Required, typing_extensions.NotRequired):
            needed = typing.get_origin(hint) is typing_extensions.Required
            hint = typing.get_args(hint)[0]
        hint = _portable(hint)
        wrap = typing_extensions.Required if needed else typing_extensions.NotRequired
        fields[key] = wrap[hint]
    make: Any = typing_extensions.TypedDict
    rebuilt = make(annotation.__name__, fields)
    rebuilt.__doc__ = annotation.__doc__
    return rebuilt


def _describable(annotation: Any) -> bool:
    """Whether pydantic can check ``annotation`` and give its JSON Schema.

    Example:
        >>> from collections.abc import Callable
        >>> _describable(list[int]), _describable(Callable[[int], str])
        (True, False)
    """
    try:
        pydantic.TypeAdapter(annotation).json_schema()
    except pydantic.PydanticUserError:
        return False
    return True


def _field_info(annotation: Any, default: Any, name: str) -> tuple[Any, Any]:
    """``(type, FieldInfo)`` for parameter ``name``: ``Annotated[T, "doc"]`` strings become
    descriptions; ``name`` is the field's alias (its own name is internal, see
    :meth:`ArgumentSpec.from_function`)."""
    description = None
    annotation = _portable(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        kept = [x for x in extras if not isinstance(x, str)]
        docs = [x for x in extras if isinstance(x, str)]
        if docs:
            description = " ".join(docs)
        base = _portable(base)
        annotation = typing.Annotated.__class_getitem__(tuple([base, *kept])) if kept else base
    required = default is inspect.Parameter.empty
    info = pydantic.Field(... if required else default, description=description, alias=name)
    return annotation, info


@dataclass(frozen=True)
class ArgumentSpec:
    """A tool's input: its JSON Schema and how the agent's arguments become the Python call.

    Build one with :meth:`from_function` or :meth:`from_schema`; :meth:`bind` checks the
    arguments (raising :class:`ArgumentError` with every problem) and returns ``(args, kwargs)``.

    Example:
        >>> spec = ArgumentSpec.from_schema({"type": "object", "properties": {"n": {"type": "integer"}},
        ...                                  "required": ["n"]})
        >>> spec.bind({"n": 3})
        (({'n': 3},), {})
        >>> spec.bind({"n": "3"})
        Traceback (most recent call last):
        ...
        cursor_agent_api.tools.schema.ArgumentError: invalid arguments: n: '3' is not of type 'integer'
    """

    schema: dict[str, Any]
    _check: Callable[[dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]

    def bind(self, arguments: Mapping[str, Any] | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Check ``arguments`` (``None`` = none) and return the call's ``(args, kwargs)``."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ArgumentError("invalid arguments: the input must be a JSON object")
        return self._check(dict(arguments))

    @classmethod
    def from_function(cls, fn: Callable[..., Any]) -> ArgumentSpec:
        """The schema of ``fn``'s parameters (each one a property), from its type hints.

        A parameter without a hint accepts any JSON value. Any name works (``model_config``,
        ``_private``: pydantic's reserved names are its model's, not the agent's). ``*args``/
        ``**kwargs``, and a hint with no JSON Schema (``Callable``, an arbitrary class), cannot
        be described: ``TypeError``.

        Example:
            >>> def f(a: int, b: "list[str] | None" = None) -> None: ...
            >>> sorted(ArgumentSpec.from_function(f).schema["properties"])
            ['a', 'b']
        """
        parts = callee(fn)
        label = parts.label
        try:
            hints = typing.get_type_hints(parts.function, include_extras=True)
        except Exception as e:  # a hint naming something undefined
            raise TypeError(f"cannot read the type hints of {label!r}: {e}") from e
        fields: dict[str, Any] = {}
        for name, param in inspect.signature(fn).parameters.items():
            if name in parts.bound:
                continue  # a partial's keyword: the program's value, not the agent's
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise TypeError(f"tool {label!r}: *args and **kwargs cannot be described to the "
                                "agent; name each parameter, or pass input_schema=")
            if param.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise TypeError(f"tool {label!r}: positional-only parameter {name!r}; the agent "
                                "passes arguments by name")
            fields[name] = _field_info(hints.get(name, Any), param.default, name)
        # the model's own field names are internal (p0, p1, …), each parameter's name its alias:
        # a parameter may be called model_config, _private or schema, which pydantic reserves
        internal = {f"p{i}": name for i, name in enumerate(fields)}
        try:
            model = pydantic.create_model(
                f"{parts.name or 'tool'}_arguments",
                __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False),
                **{key: fields[name] for key, name in internal.items()},
            )
            schema = model.model_json_schema(by_alias=True)
        except pydantic.PydanticUserError as e:  # a hint with no JSON Schema (Callable, …)
            which = next((repr(name) for name, (hint, _) in fields.items() if not _describable(hint)),
                         "of " + ", ".join(map(repr, fields)))
            raise TypeError(f"tool {label!r}: parameter {which} cannot be described to the "
                            f"agent ({str(e).splitlines()[0]}); give it a JSON-friendly type hint, or "
                            "pass input_schema=") from None
        schema.pop("title", None)
        schema.setdefault("properties", {})

        def check(arguments: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
            try:
                value = model.model_validate(arguments)
            except pydantic.ValidationError as e:
                raise ArgumentError(_describe(e)) from None
            return (), {name: getattr(value, key) for key, name in internal.items()}

        return cls(schema, check)

    @classmethod
    def from_schema(cls, input_schema: Any) -> ArgumentSpec:
        """The schema of the whole input: a TypedDict or pydantic model class, or a JSON Schema dict.

        Example:
            >>> from typing import TypedDict
            >>> class Query(TypedDict):
            ...     city: str
            >>> spec = ArgumentSpec.from_schema(Query)
            >>> spec.schema["required"], spec.bind({"city": "Oslo"})
            (['city'], (({'city': 'Oslo'},), {}))
        """
        if isinstance(input_schema, Mapping):
            schema = dict(input_schema)
            if schema.get("type") != "object":
                raise TypeError('input_schema must describe an object: {"type": "object", ...}')
            validator_cls = jsonschema.validators.validator_for(schema)
            try:
                validator_cls.check_schema(schema)
            except jsonschema.SchemaError as e:
                raise TypeError(f"input_schema is not a valid JSON Schema: {e.message}") from None
            validator = validator_cls(schema)

            def check_raw(arguments: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
                errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
                if errors:
                    parts = [f"{'.'.join(str(p) for p in e.path) or '(input)'}: {e.message}" for e in errors]
                    raise ArgumentError("invalid arguments: " + "; ".join(parts))
                return (arguments,), {}

            return cls(schema, check_raw)
        if not isinstance(input_schema, type):
            raise TypeError("input_schema must be a TypedDict class, a pydantic model class or a JSON "
                            f"Schema dict, got {type(input_schema).__name__}")
        try:
            adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(_portable(input_schema))
            schema = adapter.json_schema()
        except pydantic.PydanticUserError as e:
            raise TypeError(f"input_schema {input_schema.__name__!r} cannot be described: {e}") from None
        if schema.get("type") != "object":
            raise TypeError(f"input_schema {input_schema.__name__!r} must describe an object")
        schema.pop("title", None)

        def check_typed(arguments: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
            try:
                return (adapter.validate_python(arguments),), {}
            except pydantic.ValidationError as e:
                raise ArgumentError(_describe(e)) from None

        return cls(schema, check_typed)
