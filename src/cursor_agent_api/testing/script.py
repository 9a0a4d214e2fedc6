"""The in-memory script transport: an agent that plays given lines, without a process.

A testing aid, not part of the runtime: it plugs into the runtime's seam as any transport
would. :class:`ScriptTransport` opens an :class:`~cursor_agent_api.runtime.run.AgentRun` (the
same lifecycle core as the subprocess transport: the stop policy, the fold, the end-of-turn
rules) whose "process" is a :class:`ScriptProcess`: it takes the prompt, writes the script's
stdout lines (optionally ``delay`` seconds apart, honouring back-pressure), its stderr, and
exits with its exit code, or with ``128 + N`` when signal N reaches it first (unless the
script ignores N; nothing ignores SIGKILL). With ``hang=True`` it stays silent after its
lines until signalled.

A mistake in the script is a ``TypeError`` out of the turn's start, naming what is wrong (a
line JSON cannot encode, a callable that returns no :class:`Script`, a field of the wrong
type), never a turn that waits forever; should playing fail all the same, the turn ends at
once with exit code 1 and the error on its stderr.

Tests use it wherever no real process is needed; process groups, signals and leftovers
are tested against real processes.

Example:
    >>> from cursor_agent_api import CursorAgentClient
    >>> script = ScriptTransport(['{"type":"result","subtype":"success","result":"4"}'])
    >>> with CursorAgentClient(transport=script) as client:
    ...     result = client.query("2+2?")
    >>> result.result, result.exit_code, script.prompts
    ('4', 0, [b'2+2?'])
"""

from __future__ import annotations

import asyncio
import signal as signal_module
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from ..config import AgentConfig
    from ..runtime.run import AgentRun
    from ..runtime.sinks import EventSink

__all__ = ["Script", "ScriptProcess", "ScriptTransport"]

Line = str | bytes | Mapping[str, Any]


@dataclass
class Script:
    """One turn of the scripted agent.

    ``stdout``: lines (a ``str``/``dict`` gets its newline; ``bytes`` are written as
    given); ``stderr``; ``exit_code``; ``delay`` between lines; ``hang``: stay alive and
    silent after the lines until signalled; ``ignore``: signals it survives.

    Example:
        >>> Script([{"type": "result"}]).chunks()
        [b'{"type":"result"}\\n']
        >>> Script([{"ids": {1, 2}}]).chunks()
        Traceback (most recent call last):
        TypeError: Script.stdout[0]: cannot encode {'ids': {1, 2}} as JSON (Type is not ...: set)
        >>> Script('{"type": "result"}')
        Traceback (most recent call last):
        TypeError: Script.stdout: a sequence of lines, got a str (one line? put it in a list)
    """

    stdout: Sequence[Line] = ()
    exit_code: int = 0
    stderr: str | bytes = b""
    delay: float = 0.0
    hang: bool = False
    ignore: Collection[int] = ()

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise ``TypeError`` naming the field of the wrong type (the lines: :meth:`chunks`)."""
        if isinstance(self.stdout, (str, bytes, bytearray)) or not isinstance(self.stdout, Sequence):
            hint = " (one line? put it in a list)" if isinstance(self.stdout, (str, bytes)) else ""
            raise TypeError(f"Script.stdout: a sequence of lines, got a {type(self.stdout).__name__}{hint}")
        if not isinstance(self.exit_code, int) or isinstance(self.exit_code, bool):
            raise TypeError(f"Script.exit_code: an int, got {self.exit_code!r}")
        if not isinstance(self.stderr, (str, bytes)):
            raise TypeError(f"Script.stderr: a str or bytes, got {self.stderr!r}")
        if (not isinstance(self.delay, (int, float)) or isinstance(self.delay, bool)
                or not 0 <= self.delay < float("inf")):
            raise TypeError(f"Script.delay: a number of seconds >= 0, got {self.delay!r}")
        if not isinstance(self.hang, bool):
            raise TypeError(f"Script.hang: a bool, got {self.hang!r}")
        if (isinstance(self.ignore, (str, bytes)) or not isinstance(self.ignore, Collection)
                or not all(isinstance(sig, int) for sig in self.ignore)):
            raise TypeError(f"Script.ignore: signal numbers, got {self.ignore!r}")

    def chunks(self) -> list[bytes]:
        """The stdout lines as the bytes written; ``TypeError`` naming a line that is none."""
        out = []
        for i, line in enumerate(self.stdout):
            if isinstance(line, bytes):
                out.append(line)
            elif isinstance(line, str):
                out.append(line.encode() + b"\n")
            elif isinstance(line, Mapping):
                try:
                    out.append(orjson.dumps(line) + b"\n")
                except TypeError as e:  # orjson.JSONEncodeError: a set, an int key, ...
                    raise TypeError(f"Script.stdout[{i}]: cannot encode {line!r:.200} as JSON "
                                    f"({e})") from None
            else:
                raise TypeError(f"Script.stdout[{i}]: a str, bytes or dict, got {line!r:.200}")
        return out


@dataclass
class ScriptTransport:
    """A transport whose turns play a :class:`Script` (the same one, or ``script(prompt)``).

    ``ScriptTransport(lines, exit_code=…, …)`` is ``ScriptTransport(Script(lines, …))``.
    :attr:`prompts` lists what each turn received on stdin, :attr:`turns` the turns.

    Example:
        >>> ScriptTransport(["x"], exit_code=3).script.exit_code
        3
        >>> ScriptTransport('{"type": "result"}')
        Traceback (most recent call last):
        TypeError: ScriptTransport: give a Script, a list of lines or a callable, not a str (one ...)
    """

    script: Script | Callable[[bytes], Script]
    prompts: list[bytes] = field(default_factory=list)
    turns: list[AgentRun] = field(default_factory=list)

    def __init__(self, script: Script | Sequence[Line] | Callable[[bytes], Script] = (),
                 **fields: Any) -> None:
        if isinstance(script, Script) or callable(script):
            if fields:
                raise TypeError("give a Script or lines with fields, not both")
            self.script = script
        elif isinstance(script, (str, bytes, bytearray)) or not isinstance(script, Sequence):
            hint = " (one line? put it in a list)" if isinstance(script, (str, bytes)) else ""
            raise TypeError("ScriptTransport: give a Script, a list of lines or a callable, "
                            f"not a {type(script).__name__}{hint}")
        else:
            self.script = Script(script, **fields)
        self.prompts = []
        self.turns = []

    def open_turn(self, config: AgentConfig, prompt: str | bytes | None, *,
                  sink: EventSink | None = None) -> AgentRun:
        """An :class:`~cursor_agent_api.runtime.run.AgentRun` played by a :class:`ScriptProcess`."""
        from ..runtime.run import AgentRun  # imported here: this module loads with the plugin

        turn = AgentRun(config, prompt, sink=sink, spawn=self._spawn)
        self.turns.append(turn)
        return turn

    async def _spawn(self, run: AgentRun) -> ScriptProcess:
        return ScriptProcess(self, run)


class ScriptProcess:
    """The scripted agent of one turn: the run's process
    (:class:`~cursor_agent_api.runtime.process.RunProcess`), reporting to the run."""

    pid: int | None = None  # no process (and no group, no Popen)

    def __init__(self, transport: ScriptTransport, run: AgentRun) -> None:
        self._transport = transport
        self._run = run
        self._loop = asyncio.get_running_loop()
        self._exited = self._loop.create_future()
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._script = Script()
        self.returncode: int | None = None
        self.signals_sent: list[int] = []

    # ---- the process -------------------------------------------------------------------

    @property
    def has_exited(self) -> bool:
        """True once the script has exited."""
        return self._exited.done()

    @property
    def exit_code(self) -> int | None:
        """The script's exit code, ``128 + N`` after signal N."""
        return self.returncode

    def alive(self) -> bool:
        """True until the script has exited."""
        return not self._exited.done()

    def write_stdin(self, data: bytes) -> None:
        """Take the prompt and start playing (the script "reads stdin to EOF" first).

        A script that cannot play (see :meth:`Script.check`, :meth:`Script.chunks`) raises
        ``TypeError`` here, out of the turn's start."""
        self._transport.prompts.append(data)
        script = self._transport.script
        if not isinstance(script, Script):
            made = script(data)
            if not isinstance(made, Script):
                name = getattr(script, "__qualname__", None) or repr(script)
                raise TypeError(f"ScriptTransport: the script callable {name:.100} returned "
                                f"{made!r:.100} for the prompt {data[:60]!r}, not a Script")
            script = made
        script.check()
        chunks = script.chunks()
        self._script = script
        self._task = self._loop.create_task(self._play(script, chunks))

    async def _play(self, script: Script, chunks: list[bytes]) -> None:
        try:
            await self._play_lines(script, chunks)
        except Exception as e:  # the turn must end, never wait on a task dead in the background
            if not self._closing:
                self._run.stderr_data(f"ScriptTransport: playing the script failed: "
                                      f"{type(e).__name__}: {e}\n".encode())
            self._exit(1)

    async def _play_lines(self, script: Script, chunks: list[bytes]) -> None:
        run = self._run
        for chunk in chunks:
            await self._resumed.wait()
            if script.delay:
                await asyncio.sleep(script.delay)
            if self._closing:
                break
            run.stdout_data(chunk)
        if script.stderr and not self._closing:
            stderr = script.stderr
            run.stderr_data(stderr.encode() if isinstance(stderr, str) else stderr)
        if script.hang:
            await asyncio.shield(self._exited)  # until a signal ends it
        self._exit(script.exit_code)

    def _exit(self, code: int) -> None:
        if self._exited.done():
            return
        self.returncode = code
        self._closing = True
        self._run.stdout_eof()
        self._run.stderr_eof()
        self._exited.set_result(None)
        self._run.exited()

    def signal(self, sig: int) -> bool:
        """Signal N ends the script with ``128 + N`` (unless it ignores N); False once exited."""
        self.signals_sent.append(sig)
        if self._exited.done():
            return False
        if sig in self._script.ignore and sig != signal_module.SIGKILL:
            return True
        if self._task is not None:
            self._task.cancel()
        self._loop.call_soon(self._exit, 128 + sig)
        return True

    def kill_now(self) -> None:
        """SIGKILL, at once."""
        if self._task is not None:
            self._task.cancel()
        self._exit(128 + signal_module.SIGKILL)

    async def wait_gone(self, timeout: float | None) -> bool:
        """Wait for the exit; False if ``timeout`` passed."""
        try:
            await asyncio.wait_for(asyncio.shield(self._exited), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    def pause_stdout(self) -> None:
        """Back-pressure: write no more lines until resumed."""
        self._resumed.clear()

    def resume_stdout(self) -> None:
        """Write lines again."""
        self._resumed.set()

    def abandon_pipes(self) -> None:
        """Stop writing."""
        self._closing = True

    def release(self) -> None:
        """Stop playing."""
        if self._task is not None:
            self._task.cancel()

    def close(self) -> None:
        """The turn is over: nothing more is written."""
        self._closing = True
        if self._exited.done():
            self.release()
