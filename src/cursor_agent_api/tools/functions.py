"""``@tool``: a Python function (sync or async) the agent can call, and what one call did.

What lives here: :func:`tool` (the decorator), :class:`Tool` (name, description, input schema,
the function) and :meth:`Tool.invoke`, which runs one call and never raises: bad arguments
and exceptions come back as an error outcome with the message (the traceback goes to the
``cursor_agent_api.tools`` logger only); :class:`LocalInvocation`, the record of that call
(arguments, value or exception, duration) that the client links to the stream's
:class:`~cursor_agent_api.protocol.ToolCall` as ``call.local``. What does not: MCP and HTTP
(:mod:`.server`), the workspace's files (:mod:`.inject`).

Example:
    >>> import asyncio
    >>> @tool
    ... def lookup_order(order_id: str) -> dict:
    ...     '''Look up an order by its id.'''
    ...     if order_id != "A1":
    ...         raise KeyError(f"no order {order_id}")
    ...     return {"id": order_id, "status": "shipped"}
    >>> lookup_order.name, lookup_order.description
    ('lookup_order', 'Look up an order by its id.')
    >>> ok = asyncio.run(lookup_order.invoke({"order_id": "A1"}))
    >>> ok.is_error, ok.texts
    (False, ['{"id": "A1", "status": "shipped"}'])
    >>> bad = asyncio.run(lookup_order.invoke({"order_id": "Z9"}))
    >>> bad.is_error, bad.error
    (True, "KeyError: 'no order Z9'")
    >>> asyncio.run(lookup_order.invoke({})).error
    'invalid arguments: order_id: Field required'
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import json
import logging
import re
import signal
import threading
import time
import traceback
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast, overload

import pydantic
import pydantic_core
import typing_extensions

from ..runtime.daemon_thread import in_daemon_thread
from .schema import ArgumentError, ArgumentSpec, callee

__all__ = ["LocalInvocation", "Tool", "describe", "log_exception", "printable", "tool"]

log = logging.getLogger("cursor_agent_api.tools")

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

_T = TypeVar("_T")
_P = typing_extensions.ParamSpec("_P", default=...)
_R = typing_extensions.TypeVar("_R", default=Any)


@dataclass
class LocalInvocation:
    """One call of a ``@tool`` function by the agent, as the host process saw it.

    ``arguments`` as the agent sent them; ``value`` what the function returned (``None`` on
    error); ``exception`` what it raised (``None`` for bad arguments, which never reach it);
    ``error`` the message the agent was given; ``texts`` the text blocks sent back;
    ``started_at`` (epoch seconds) and ``duration_ms``.

    Example:
        >>> inv = LocalInvocation("t", {"x": 1}, value=2, texts=["2"], started_at=0.0, duration_ms=1.5)
        >>> inv.ok, inv.to_dict()["value"]
        (True, 2)
    """

    tool: str
    arguments: dict[str, Any]
    value: Any = None
    exception: BaseException | None = field(default=None, repr=False)
    error: str | None = None
    texts: list[str] = field(default_factory=list)
    started_at: float = 0.0
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the function returned a value the agent received."""
        return self.error is None

    @property
    def is_error(self) -> bool:
        """True when the agent got an ``isError`` result (bad arguments, an exception)."""
        return self.error is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the value as it was sent: JSON when it is JSON, else its text)."""
        try:
            value: Any = _json_ready(self.value)
        except (TypeError, ValueError):
            value = "\n".join(self.texts)
        return {"tool": self.tool, "arguments": self.arguments, "ok": self.ok, "value": value,
                "error": self.error, "started_at": self.started_at, "duration_ms": self.duration_ms}


def to_texts(value: Any) -> tuple[list[str], Any]:
    """The MCP text blocks for a return value, and its structured form (a dict) if any.

    ``str`` → itself; ``dict``/``list``/numbers/booleans → JSON; a pydantic model → its JSON,
    inside a dict or a list too; ``None`` → no block. Anything else is a ``TypeError`` naming
    what JSON cannot hold (the agent gets an error result). NaN and ±Infinity, which JSON
    cannot hold, become ``null`` (as JavaScript's ``JSON.stringify`` does); keys become
    strings, so the text and the structured form agree.

    Example:
        >>> to_texts("hi"), to_texts({"a": 1}), to_texts([1, 2]), to_texts(None)
        ((['hi'], None), (['{"a": 1}'], {'a': 1}), (['[1, 2]'], None), ([], None))
        >>> to_texts({"mean": float("nan"), 1: True})
        (['{"mean": null, "1": true}'], {'mean': None, '1': True})
        >>> class Point(pydantic.BaseModel):
        ...     x: int
        >>> to_texts([Point(x=1)])
        (['[{"x": 1}]'], None)
        >>> to_texts([1, {2}])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: the tool returned a list holding a set, which JSON cannot hold (return a str, ...)
    """
    if value is None:
        return [], None
    if isinstance(value, str):
        return [printable(value)], None
    data = _json_ready(value)
    return [json.dumps(data, ensure_ascii=False)], data if isinstance(data, dict) else None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str, *, in_json: bool = False) -> str:
    """``text`` with each lone surrogate (no UTF-8 can hold one: a file name ``os.listdir``
    could not decode, text read with ``errors="surrogateescape"``) written as the six
    characters of its escape, ``\\udce9``; in JSON text (``in_json``) as the JSON for them.

    Example:
        >>> name = b"caf\\xe9.txt".decode("utf-8", "surrogateescape")
        >>> print(printable(name), printable("café"))
        caf\\udce9.txt café
        >>> json.loads(printable(json.dumps([name], ensure_ascii=False), in_json=True)) == [printable(name)]
        True
    """
    if _LONE_SURROGATE.search(text) is None:
        return text
    slash = "\\\\" if in_json else "\\"
    return _LONE_SURROGATE.sub(lambda m: f"{slash}u{ord(m.group()):04x}", text)


_ACCEPTED = ("return a str, a pydantic model, or JSON values: dict, list, str, number, bool, "
             "None — pydantic models inside them too")


class _ModelFailed(Exception):
    """A pydantic model's own code raised as it was written (see :func:`_json_ready`)."""

    def __init__(self, model: Any, error: Exception) -> None:
        super().__init__(model, error)
        self.model, self.error = model, error


def _json_ready(value: Any) -> Any:
    """``value`` as JSON would give it back: pydantic models as their JSON, NaN and ±Infinity
    as ``None``, keys as strings. What JSON cannot hold is a ``TypeError`` naming it."""
    outer = type(value).__name__
    refused: list[str] = []

    def model_or_refuse(item: Any) -> Any:
        if isinstance(item, pydantic.BaseModel):
            try:
                return item.model_dump(mode="json")
            except pydantic_core.PydanticSerializationError:  # a field pydantic cannot write
                pass
            except Exception as e:  # the model's own code (a computed field) raised
                raise _ModelFailed(item, e) from e
        refused.append(type(item).__name__)
        raise TypeError(type(item).__name__)

    try:
        text = json.dumps(value, ensure_ascii=False, default=model_or_refuse)
    except _ModelFailed as e:
        raise TypeError(f"the tool returned a {type(e.model).__name__} that could not be "
                        f"written as JSON: {type(e.error).__name__}: {e.error}") from e.error
    except ValueError as e:  # json's "Circular reference detected"
        raise TypeError(f"the tool returned a {outer} that contains itself, which JSON cannot "
                        "hold") from e
    except TypeError as e:
        if not refused:  # a key: "keys must be str, int, float, bool or None, not tuple"
            what = f"a {outer} with a key JSON cannot hold ({e})"
        elif isinstance(value, (dict, list, tuple)):
            what = f"a {outer} holding a {refused[0]}"
        else:
            what = f"a {outer}"
        raise TypeError(f"the tool returned {what}, which JSON cannot hold ({_ACCEPTED})"
                        ) from None
    return json.loads(printable(text, in_json=True), parse_constant=lambda _: None)


def _recorded(arguments: Any) -> dict[str, Any]:
    """The arguments as a call's record keeps them: an object as it is, anything else (which
    the schema refuses) under ``"arguments"``.

    Example:
        >>> _recorded(None), _recorded({"a": 1}), _recorded([1])
        ({}, {'a': 1}, {'arguments': [1]})
    """
    if arguments is None:
        return {}
    return dict(arguments) if isinstance(arguments, Mapping) else {"arguments": arguments}


class Tool(Generic[_P, _R]):
    """A function the agent can call over MCP. Made by :func:`tool`; still callable as before,
    with the function's signature (``Tool[P, R]``: its parameters and return type, for a
    type checker; a bare ``Tool`` is any tool).

    Example:
        >>> @tool(name="add", description="Add two numbers.")
        ... async def add_numbers(a: int, b: int) -> int:
        ...     return a + b
        >>> add_numbers.name, add_numbers.input_schema["required"]
        ('add', ['a', 'b'])
    """

    _class_method: bool
    """``@tool`` over ``@classmethod``: bound to the class it is defined in (:meth:`__set_name__`)."""

    def __init__(self, fn: Callable[_P, _R], *, name: str | None = None,
                 description: str | None = None, input_schema: Any = None) -> None:
        class_method: bool = isinstance(fn, classmethod)  # bound to its class in __set_name__
        if isinstance(fn, (staticmethod, classmethod)):
            fn = fn.__func__
        if not callable(fn):
            raise TypeError(f"@tool needs a function, got {type(fn).__name__}")
        source = fn if isinstance(fn, Tool) else None  # a tool renamed: a copy over its function
        if source is not None:
            fn = source.fn
            class_method = source._class_method
        self.fn: Callable[_P, _R] = fn
        self._class_method = class_method
        parts = callee(fn)  # a partial's function, an object's __call__
        chosen = name if name is not None else source.name if source is not None else parts.name
        if chosen is None:
            raise ValueError(f"{parts.label} has no name: give the tool one, @tool(name=...)")
        self.name: str = chosen
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must be 1-64 letters, digits, '_' or '-'")
        self.description: str = (description if description is not None
                                 else source.description if source is not None else (parts.doc or ""))
        self.spec: ArgumentSpec = (
            ArgumentSpec.from_schema(input_schema) if input_schema is not None
            else source.spec if source is not None
            # (a class method's cls is not the agent's to set)
            else ArgumentSpec.from_function(functools.partial(cast(Any, fn), None)) if class_method
            else ArgumentSpec.from_function(fn))
        self.is_async = (inspect.iscoroutinefunction(fn)
                         or inspect.iscoroutinefunction(parts.function))
        self.method_of: type | None = source.method_of if source is not None else None
        """The class whose method this is, until taken from an instance (see :meth:`__get__`)."""
        self._attribute: str = source._attribute if source is not None else ""
        self._schema_given: bool = input_schema is not None or (source is not None and source._schema_given)

    def __set_name__(self, owner: type, attribute: str) -> None:
        """``@tool`` in a class body over a function whose first parameter is ``self``: a
        method (any other stays a plain function, the class a folder of tools). Its ``self``
        is not the agent's to set (the schema leaves it out); taken from an instance, the tool
        is bound to it. ``@tool`` over ``@classmethod``: bound to the class here (its ``cls``
        left out of the schema too); over ``@staticmethod``: a plain function. A tool only
        stored on a class (``alias = lookup_order``) was not defined there: left as it is."""
        fn = self.fn
        if not inspect.isfunction(fn) or fn.__qualname__ != f"{owner.__qualname__}.{fn.__name__}":
            return
        if self._class_method:  # @tool over @classmethod: bound to its class, for good
            self.fn = types.MethodType(fn, owner)
            return
        first = next(iter(inspect.signature(fn).parameters.values()), None)
        if first is None or first.name != "self" or first.kind not in (
                inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            return  # (a class as a folder of plain functions: no self, nothing to bind)
        self.method_of, self._attribute = owner, attribute
        if not self._schema_given:  # (the agent's arguments: the parameters after self)
            self.spec = ArgumentSpec.from_function(functools.partial(fn, None))

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Tool[_P, _R]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> Tool[..., _R]: ...

    def __get__(self, instance: object, owner: type | None = None) -> Tool[..., _R]:
        """A method's tool taken from an instance (``shop.lookup_order``): a tool of that
        instance's method, with the same name, description and schema; any other tool as it is.

        Example:
            >>> class Shop:
            ...     @tool
            ...     def lookup_order(self, order_id: str) -> str:
            ...         '''Look up an order.'''
            ...         return f"{order_id}: shipped"
            >>> Shop().lookup_order("A1"), list(Shop().lookup_order.input_schema["properties"])
            ('A1: shipped', ['order_id'])
        """
        if instance is None or self.method_of is None:
            return self
        bound: Tool[..., _R] = copy.copy(self)
        bound.fn = types.MethodType(self.fn, instance)
        bound.method_of = None
        return bound

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's input, as ``tools/list`` shows it."""
        return self.spec.schema

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"

    async def invoke(self, arguments: dict[str, Any] | None) -> LocalInvocation:
        """Run one call as the agent asked for it; never raises (but when the call itself is
        cancelled, and for Ctrl-C).

        A sync function runs in a worker thread, so a slow one does not stall the event loop; a
        cancelled call stops waiting for it (the thread runs on: Python cannot interrupt it; it
        is a daemon thread, so it does not keep the program from exiting).
        An ``asyncio.CancelledError`` the function raises while nothing cancelled the call (a
        shared task someone else cancelled) is the call's error, like any other exception.
        """
        started_at, began = time.time(), time.perf_counter()
        run = asyncio.ensure_future(self._invoke(arguments))  # its own task: see whose cancel
        try:
            await asyncio.wait({run})
        except BaseException:  # this call was cancelled: so is the function
            run.cancel()
            raise
        if not run.cancelled():
            return run.result()
        error = "CancelledError: raised by the tool (nothing cancelled the call)"
        log.warning("tool %s raised asyncio.CancelledError", self.name)
        return LocalInvocation(self.name, _recorded(arguments), exception=asyncio.CancelledError(),
                               error=error, texts=[error], started_at=started_at,
                               duration_ms=(time.perf_counter() - began) * 1000)

    async def _invoke(self, arguments: dict[str, Any] | None) -> LocalInvocation:
        record = LocalInvocation(self.name, _recorded(arguments), started_at=time.time())
        began = time.perf_counter()
        try:
            args, kwargs = self.spec.bind(arguments)
            fn: Callable[..., Any] = self.fn  # called with the arguments the agent sent
            if self.is_async:
                value = await fn(*args, **kwargs)
            else:
                value = await in_daemon_thread(lambda: _caught(fn, args, kwargs), f"tool {self.name}")
                if isinstance(value, _Raised):
                    raise value
            if inspect.isawaitable(value):  # a sync wrapper around an async function
                value = await value
            record.texts, _ = to_texts(value)
            record.value = value
        except ArgumentError as e:
            record.error = printable(str(e))
        except asyncio.CancelledError:
            raise  # (invoke tells a cancel of the call from one the function raised)
        except BaseException as e:  # sys.exit() (argparse, click), pytest.fail(), a framework's own
            raised = e.raised if isinstance(e, _Raised) else e
            if raised is e and _maybe_ctrl_c(e):
                raise
            record.exception = raised
            record.error = describe(raised)
            log_exception(logging.WARNING, raised, "tool %s raised %s", self.name, record.error)
        record.duration_ms = (time.perf_counter() - began) * 1000
        if record.error is not None:
            record.texts = [record.error]
        return record


def describe(error: BaseException) -> str:
    """How the agent is told of an exception: its type, and its message if any.

    Example:
        >>> describe(KeyError("no order Z9")), describe(KeyboardInterrupt())
        ("KeyError: 'no order Z9'", 'KeyboardInterrupt')
    """
    message = printable(str(error))
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def log_exception(level: int, error: BaseException, message: str, *args: Any) -> None:
    """Log ``message`` with ``error``'s traceback on the tools' logger; a traceback that holds
    a lone surrogate (an undecodable file name in a message) is written out escaped
    (:func:`printable`), since a handler writing UTF-8 could not write it.

    Example:
        >>> import io
        >>> out = io.StringIO(); handler = logging.StreamHandler(out); log.addHandler(handler)
        >>> log_exception(logging.WARNING, OSError("no caf\\udce9"), "tool %s raised", "t")
        >>> log.removeHandler(handler); print(out.getvalue().strip())
        tool t raised
        OSError: no caf\\udce9
    """
    shown = "".join(traceback.format_exception(error))
    if _LONE_SURROGATE.search(shown) is None:
        log.log(level, message, *args, exc_info=error)
    else:
        log.log(level, message + "\n%s", *args, printable(shown.rstrip("\n")))


class _Raised(Exception):
    """What a sync tool raised in its worker thread, carried back as an ``Exception``: a
    ``BaseException`` that is not one (``KeyboardInterrupt``, ``pytest.fail()``) would
    otherwise be re-raised by the event loop that awaits the thread, out of its task."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__(raised)
        self.raised = raised


def _caught(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` in a tool's worker thread: what it returns, or a :class:`_Raised`
    for whatever it raised (no signal reaches a worker thread: never a Ctrl-C)."""
    try:
        return fn(*args, **kwargs)
    except BaseException as e:  # (the tool's own, whatever it is)
        return _Raised(e)


def _maybe_ctrl_c(error: BaseException) -> bool:
    """Whether ``error``, raised by an async tool (on the loop's thread), may be the user's
    Ctrl-C, which then stops the program as it would without tools: a ``KeyboardInterrupt`` on
    the main thread while SIGINT has Python's default handler. ``asyncio.run()`` takes SIGINT
    over (a Ctrl-C cancels its main task, so the call is cancelled) and the sync client's loop
    runs in a thread of its own: there a ``KeyboardInterrupt`` is the tool's own.

    Example:
        >>> _maybe_ctrl_c(ValueError()), _maybe_ctrl_c(SystemExit(2))
        (False, False)
    """
    return (isinstance(error, KeyboardInterrupt)
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)


@overload
def tool(fn: Callable[_P, _R], /) -> Tool[_P, _R]: ...
@overload
def tool(*, name: str | None = None, description: str | None = None,
         input_schema: Any = None) -> Callable[[Callable[_P, _R]], Tool[_P, _R]]: ...


def tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
         description: str | None = None, input_schema: Any = None
         ) -> Tool[..., Any] | Callable[[Callable[..., Any]], Tool[..., Any]]:
    """Make a function a tool the agent can call: ``@tool`` or ``@tool(name=…, description=…)``.

    The name is the function's, the description its docstring, the input schema comes from
    its type hints (see :mod:`.schema`), unless given. Pass the tools to a client:
    ``CursorAgentClient(..., tools=[lookup_order])``.

    Example:
        >>> @tool
        ... def greet(name: str) -> str:
        ...     '''Say hello.'''
        ...     return f"Hello, {name}!"
        >>> greet("Ada"), greet.input_schema["properties"]["name"]["type"]
        ('Hello, Ada!', 'string')
    """
    if fn is not None:
        return Tool(fn, name=name, description=description, input_schema=input_schema)

    def wrap(f: Callable[..., Any]) -> Tool[..., Any]:
        return Tool(f, name=name, description=description, input_schema=input_schema)

    return wrap
