"""The live view's final answer as Markdown, every target shown as data.

A terminal hyperlink (OSC 8) would hide where a link goes ("CI log" opening a ``vscode://``
URL): a link is shown as ``text (url)`` (rich's ``hyperlinks=False``). An image is shown
where it stands as ``🌆 alt (url)``, text of its paragraph (rich shows "🌆 alt", its target
hidden, and before the paragraph's text). The agent's text is made printable first
(:func:`~.render.printable`): an escape sequence in a link, an image or the text is shown,
never run; and it is never read as rich markup.

Example:
    >>> from io import StringIO
    >>> from rich.console import Console
    >>> out = StringIO()
    >>> Console(file=out, width=80).print(AnswerMarkdown(
    ...     "See ![the plot](https://x.example/p.png) and [docs](https://x.example/d)."))
    >>> print(out.getvalue().strip())
    See 🌆 the plot (https://x.example/p.png) and docs (https://x.example/d).
"""

from __future__ import annotations

from collections.abc import Iterable

from markdown_it.token import Token
from rich.markdown import Markdown

from .render import printable

__all__ = ["AnswerMarkdown"]


class AnswerMarkdown(Markdown):
    """``text`` (the agent's) as Markdown with each link's and image's target shown."""

    def __init__(self, text: str) -> None:
        super().__init__(printable(text), hyperlinks=False)
        _images_as_text(self.parsed)


def _images_as_text(tokens: Iterable[Token]) -> None:
    """Each image token (in an inline token's children) becomes a text token:
    ``🌆 alt (url)`` (no alt: the file's name; no url: ``🌆 alt``)."""
    for token in tokens:
        if token.children:
            token.children = [_as_text(child) if child.type == "image" else child
                              for child in token.children]
            _images_as_text(token.children)


def _as_text(image: Token) -> Token:
    src = str(image.attrs.get("src", ""))
    alt = image.content or src.strip("/").rsplit("/", 1)[-1]
    return Token("text", "", 0, content=f"🌆 {alt} ({src})" if src else f"🌆 {alt}")
