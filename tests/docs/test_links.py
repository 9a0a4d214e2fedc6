"""Every relative link and every cited repository path in README.md and docs/*.md exists.

A *link* is Markdown's ``[text](target)`` with a target that is not a URL: the file must
exist (relative to the document) and so must its ``#anchor`` when it names a heading of a
Markdown file. A *cited path* is, in the prose (code blocks are run or are data):

* a code span holding one path with a ``/`` that names a directory (``tests/data/cursor-real/``)
  or a file (``js/app.js``), or starts with a top-level entry of the repository;
* a Markdown file's name, in a code span or not (``PROTOCOL.md §1``).

It must exist relative to the repository, to the document, to ``src/`` or the package
(``protocol/tools.py``), or to a directory the same document cites. Paths that git ignores
(``.venv/bin``, ``.demo/workspace``) are made at run time, as are absolute, home and ``$VAR``
paths: they are not checked. ``…`` and ``*`` are wildcards.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_blocks import REPO, doc_files, prose

DOCS = doc_files()
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_SPAN = re.compile(r"`([^`\n]+)`")
_MD_NAME = re.compile(r"(?<![\w/.-])([\w-]+\.md)\b")
_FILE = re.compile(r"\.(md|py|sh|toml|ndjson|txt|json|js|css|html|sqlite3|ya?ml|cfg)$")
_TOP = {p.name for p in REPO.iterdir()} - {".git"}
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes.

    >>> github_anchor("A record (`event`)")
    'a-record-event'
    """
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {github_anchor(h) for h in _HEADING.findall(prose(path))}


def links(path: Path) -> list[str]:
    text = _SPAN.sub("", prose(path))
    return [t for t in _LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def cited_paths(path: Path) -> list[str]:
    text = prose(path)
    found: list[str] = []
    for span in _SPAN.findall(text):
        span = span.strip()
        if " " in span or "<" in span or "{" in span or span.startswith(("/", "~", "$", "-", "http")):
            continue
        if "/" in span and re.fullmatch(r"[\w.…*/-]+", span) and (
                span.endswith("/") or _FILE.search(span) or span.split("/")[0] in _TOP):
            found.append(span)
    outside_spans = _SPAN.sub(lambda m: m.group(0) if m.group(1).endswith(".md") else "", text)
    found += [m for m in _MD_NAME.findall(outside_spans.replace("`", " "))]
    return found


def _ignored(rel: str) -> bool:
    """True when ``.gitignore`` names the path's top directory (``.venv/``, ``.demo/``)."""
    patterns = {line.strip().strip("/") for line in (REPO / ".gitignore").read_text().splitlines()}
    return rel.split("/")[0] in patterns


def _exists(base: Path, rel: str) -> bool:
    rel = rel.rstrip("/") or "."
    if any(c in rel for c in "…*"):
        return any(True for _ in base.glob(rel.replace("…", "*")))
    return (base / rel).exists()


def missing_paths(path: Path) -> list[str]:
    cited = cited_paths(path)
    bases = [REPO, path.parent, REPO / "src", REPO / "src" / "cursor_agent_api"]
    bases += [REPO / c for c in cited if c.endswith("/") and (REPO / c).is_dir()]
    return sorted({c for c in cited
                   if not any(_exists(b, c) for b in bases) and not _ignored(c)})


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in anchors(dest)):
            broken.append(target)
    return broken


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(REPO)) for p in DOCS])
def test_relative_links_resolve(path: Path) -> None:
    assert broken_links(path) == []


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(REPO)) for p in DOCS])
def test_cited_paths_exist(path: Path) -> None:
    assert missing_paths(path) == []


def test_the_checks_catch_what_issue_12_found(tmp_path: Path) -> None:
    """The three references of issue 12 that did not resolve are caught, and good ones pass."""
    (tmp_path / "other.md").write_text("# Part one (`x`)\n", encoding="utf-8")
    doc = tmp_path / "probe.md"
    doc.write_text(
        "See PROTOCOL.md §1, the seeds in `seeds/`, the recordings in `fixtures/cursor-real/`.\n"
        "Fine: [other](other.md#part-one-x), `tests/data/cursor-real/07-….ndjson`, `docs/client.md`,\n"
        "`protocol/tools.py`, `.venv/bin`, `system/init`, `--partial/--no-partial`.\n"
        "Broken: [x](nowhere.md), [y](other.md#no-such-part).\n",
        encoding="utf-8",
    )
    assert missing_paths(doc) == ["PROTOCOL.md", "fixtures/cursor-real/", "nowhere.md", "seeds/"]
    assert broken_links(doc) == ["nowhere.md", "other.md#no-such-part"]
