"""Reading README.md and docs/*.md: fenced blocks, snippet markers, links and cited paths.

The docs' convention (the brief's and the README's): ```python is Python that runs on the
simulator, ```sh is commands that run; every other language (json, text, http) is data.
A block may be preceded by a marker comment that changes *how* it runs, never whether:

    <!-- snippet: stop-after "Open:"; append "--port 0"; env NAME=VALUE -->

* ``stop-after "TEXT"``: the snippet runs until TEXT appears on its stdout, then gets
  SIGINT (what Ctrl-C sends) and must end cleanly (a server dies from it) — for servers;
* ``append "ARGS"``: words added to the end of the block's last command (``--port 0``:
  servers in tests take any free port);
* ``env NAME=VALUE``: an environment variable for the run (repeatable);
* ``skip "REASON"``: the block does not run yet — for an example that needs a part another
  branch brings (the integrator removes the marker once it is merged).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN_LANGUAGES = ("python", "sh")
DATA_LANGUAGES = ("json", "text", "http")

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+)(?P<lang>[^`\s]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*snippet:(?P<body>.*?)-->\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")


def doc_files() -> list[Path]:
    """README.md and every docs/*.md, in a stable order."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@dataclass
class Marker:
    """What a ``<!-- snippet: ... -->`` comment asks for."""

    stop_after: str | None = None
    append: str = ""
    env: dict[str, str] = field(default_factory=dict)
    skip: str | None = None

    @classmethod
    def parse(cls, body: str) -> Marker:
        marker = cls()
        for part in filter(None, (p.strip() for p in body.split(";"))):
            key, _, rest = part.partition(" ")
            words = shlex.split(rest)
            if key == "stop-after" and len(words) == 1:
                marker.stop_after = words[0]
            elif key == "append" and len(words) == 1:
                marker.append = words[0]
            elif key == "skip" and len(words) == 1:
                marker.skip = words[0]
            elif key == "env" and words and all("=" in w for w in words):
                marker.env.update(w.split("=", 1) for w in words)  # type: ignore[arg-type]
            else:
                raise ValueError(f"unknown snippet marker part {part!r}")
        return marker


@dataclass
class Block:
    """One fenced block of a doc."""

    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    heading: str
    index: int  # among the runnable blocks under the same heading
    marker: Marker | None

    @property
    def id(self) -> str:
        """A readable, fairly stable name: ``README.md#quick-start[1]``."""
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-") or "top"
        return f"{self.path.relative_to(REPO)}#{slug}[{self.index}]"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, with its language, heading and marker."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    heading, counts = "", {}
    pending: Marker | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence is None:
            m = _MARKER.match(line)
            if m is not None:
                pending = Marker.parse(m.group("body"))
            elif line.strip():
                h = _HEADING.match(line)
                if h is not None:
                    heading = h.group("title")
                pending = None
            i += 1
            continue
        ticks, lang = fence.group("fence"), fence.group("lang")
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != ticks:
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        index = 0
        if lang in RUN_LANGUAGES:
            index = counts.get(heading, 0) + 1
            counts[heading] = index
        out.append(Block(path, start + 1, lang, "\n".join(body) + "\n", heading, index, pending))
        pending = None
    return out


def runnable_blocks() -> list[Block]:
    """The ```python and ```sh blocks of README.md and docs/*.md."""
    return [b for p in doc_files() for b in blocks(p) if b.lang in RUN_LANGUAGES]


def prose(path: Path) -> str:
    """The text of ``path`` outside fenced blocks."""
    keep: list[str] = []
    inside: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        fence = _FENCE.match(line)
        if inside is None and fence is not None:
            inside = fence.group("fence")
        elif inside is not None and line.strip() == inside:
            inside = None
        elif inside is None:
            keep.append(line)
    return "\n".join(keep)
