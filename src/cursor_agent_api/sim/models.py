"""The models the simulator accepts: slug -> display name (``system/init`` reports the
display name, not the slug, as real builds do), and the call-id style each family uses.

Example:
    >>> display_name("gpt-5-mini"), call_style("composer-2.5-fast"), call_style("auto")
    ('GPT-5 Mini', 'tool', 'call')
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


def call_style(slug: str) -> str:
    """``"tool"`` (``tool_<uuid>`` ids, Composer models, recording 03) or ``"call"``
    (``call_…\\nfc_…`` ids with a newline, every other model, recording 02).

    Example:
        >>> call_style("sonnet-4.6")
        'call'
    """
    return "tool" if slug.startswith("composer") else "call"
