"""The models the simulator accepts: slug -> display name (``system/init`` reports the
display name, not the slug, as real builds do), and each model's traits as the recordings show
them: the call-id style, and whether it streams thinking.

Example:
    >>> display_name("gpt-5-mini"), call_style("composer-2.5-fast"), call_style("auto")
    ('GPT-5 Mini', 'tool', 'auto')
    >>> streams_thinking("gpt-5-mini"), streams_thinking("Composer 2.5 Fast")
    (False, True)
"""

from __future__ import annotations

DEFAULT_MODEL = "auto"

MODELS: dict[str, str] = {
    "auto": "Auto",
    "composer-2.5-fast": "Composer 2.5 Fast",
    "composer-2.5": "Composer 2.5",
    "gpt-5": "GPT-5",
    "gpt-5-mini": "GPT-5 Mini",
    "gpt-5.1-codex": "GPT-5.1 Codex",
    "sonnet-4.6": "Claude 4.6 Sonnet",
    "sonnet-4.6-thinking": "Claude 4.6 Sonnet Thinking",
    "opus-4.6": "Claude 4.6 Opus",
    "gemini-3-pro": "Gemini 3 Pro",
    "grok-4": "Grok 4",
}
"""Every slug ``--model`` accepts; any other is refused with ``Cannot use this model``."""


def display_name(slug: str) -> str:
    """The display name for ``slug`` (the slug itself when unknown).

    Example:
        >>> display_name("auto")
        'Auto'
    """
    return MODELS.get(slug, slug)


def _slug(model: str) -> str:
    """The slug of a slug or a display name (a turn knows its model by its display name)."""
    return next((slug for slug, name in MODELS.items() if name == model), model)


def call_style(slug: str) -> str:
    """``"tool"`` (``tool_<uuid>`` ids, Composer models, recordings 03, 08), ``"auto"``
    (``call-<uuid>-<n>\\nfc_<uuid>_0``, model Auto, the 2026.10.01 fragment) or ``"call"``
    (``call_…\\nfc_…`` ids with a newline, every other model, recording 02).

    Example:
        >>> call_style("sonnet-4.6"), call_style("Auto")
        ('call', 'auto')
    """
    slug = _slug(slug)
    if slug == "auto":
        return "auto"
    return "tool" if slug.startswith("composer") else "call"


NO_THINKING = frozenset({"gpt-5-mini"})
"""The models that stream no thinking: GPT-5 Mini (none of its six recordings, 01, 02 and 04-07,
has a ``thinking`` event). Composer (03, 08) and Auto (the 2026.10.01 fragment) are recorded
thinking; the other models are not recorded, and think here."""


def streams_thinking(model: str) -> bool:
    """Whether a turn of ``model`` (a slug or a display name) streams thinking.

    Example:
        >>> streams_thinking("GPT-5 Mini"), streams_thinking("auto"), streams_thinking("gpt-5")
        (False, True, True)
    """
    return _slug(model) not in NO_THINKING
