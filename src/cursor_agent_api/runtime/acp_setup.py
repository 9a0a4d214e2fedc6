"""What an ``agent acp`` said of each session's setup — its ``modes``, ``models`` and
``configOptions`` (ACP.md §4, §5) — kept current as they change.

A session's ``session/new`` or ``session/load`` answer sets its setup; from then on it follows
every change that the client makes or the agent reports:

* ``session/set_mode`` answered: ``modes.currentModeId`` (and the ``mode`` option's value);
* ``session/set_config_option`` answered: the ``mode`` or ``model`` it set, then the refreshed
  ``configOptions`` of the answer (``{"configOptions": [...]}``, or the bare array);
* a ``current_mode_update`` or ``config_option_update`` of the session.

So a turn that asks for a mode or a model compares it with what the session runs now, and
switches when they differ (a switch made by ``set_session_option`` is not forgotten).

Example:
    >>> setups = SessionSetups()
    >>> setups.remember("s1", {"modes": {"currentModeId": "agent"},
    ...                        "models": {"currentModelId": "default[]", "availableModels": [
    ...                            {"modelId": "default[]", "name": "Auto"},
    ...                            {"modelId": "gpt-5[]", "name": "GPT-5"}]}})
    >>> setups.option_set("s1", "mode", "plan", {"configOptions": []})
    >>> setups.option_set("s1", "model", "gpt-5[]", None)
    >>> setups.mode_of("s1"), setups.model_of("s1"), setups.model_id_for("s1", "auto")
    ('plan', 'gpt-5[]', 'default[]')
    >>> setups.on_update("s1", {"sessionUpdate": "current_mode_update", "currentModeId": "ask"})
    >>> setups.mode_of("s1")
    'ask'
"""

from __future__ import annotations

from typing import Any

__all__ = ["SessionSetups"]

_KEYS = ("modes", "models", "configOptions")
_CURRENT = {"mode": ("modes", "currentModeId"), "model": ("models", "currentModelId")}
"""Where each config option's current value lives in the setup's ``modes``/``models``."""


class SessionSetups(dict[str, dict[str, Any]]):
    """Each session's ``modes``, ``models`` and ``configOptions``, as the agent last said (or
    as the client last set with an answered request): session id -> setup."""

    def remember(self, session_id: str, answer: Any) -> None:
        """The setup of a ``session/new`` or ``session/load`` answer (``{}`` when it has none):
        what the agent says now replaces what it said before."""
        source = answer if isinstance(answer, dict) else {}
        self[session_id] = {k: source[k] for k in _KEYS if k in source}

    def mode_of(self, session_id: str) -> str | None:
        """The session's mode (``modes.currentModeId``), if known."""
        return self._current(session_id, "mode")

    def model_of(self, session_id: str) -> str | None:
        """The session's model id (``models.currentModelId``), if known."""
        return self._current(session_id, "model")

    def model_id_for(self, session_id: str, model: str) -> str:
        """The id of ``model`` (a slug such as ``gpt-5``, or an id) among the session's
        ``availableModels`` (ids carry parameters: ``gpt-5[effort=high]``); ``model`` itself
        when none matches (the agent then says whether it knows it).

        Example:
            >>> s = SessionSetups(a={"models": {"availableModels": [
            ...     {"modelId": "gpt-5[effort=high]", "name": "GPT-5"}]}})
            >>> s.model_id_for("a", "gpt-5"), s.model_id_for("a", "sonnet")
            ('gpt-5[effort=high]', 'sonnet')
        """
        models = self.get(session_id, {}).get("models")
        available = models.get("availableModels") if isinstance(models, dict) else None
        entries: list[tuple[str, str]] = [
            (m["modelId"], str(m.get("name") or "")) for m in available or []
            if isinstance(m, dict) and isinstance(m.get("modelId"), str)]
        for i, _ in entries:
            if i == model:
                return i
        for i, _ in entries:
            if i.partition("[")[0] == model:
                return i
        for i, name in entries:
            if name.lower() == model.lower():  # "auto" is the one named "Auto"
                return i
        return model

    def mode_set(self, session_id: str, mode_id: str) -> None:
        """``session/set_mode`` to ``mode_id`` was answered: the session runs in it."""
        self._set(session_id, "mode", mode_id)

    def option_set(self, session_id: str, config_id: str, value: str, answer: Any) -> None:
        """``session/set_config_option`` of ``config_id`` to ``value`` was answered with
        ``answer``: the value is the session's, and so are the refreshed options."""
        self._set(session_id, config_id, value)
        options = answer.get("configOptions") if isinstance(answer, dict) else answer
        self._options(session_id, options)

    def on_update(self, session_id: str, update: dict[str, Any]) -> None:
        """A ``session/update`` of the session: ``current_mode_update`` and
        ``config_option_update`` change its setup (any other kind does not)."""
        if session_id not in self:
            return  # (a session/load's replay: its answer gives the setup)
        kind = update.get("sessionUpdate")
        if kind == "current_mode_update" and isinstance(update.get("currentModeId"), str):
            self._set(session_id, "mode", update["currentModeId"])
        elif kind == "config_option_update":
            self._options(session_id, update.get("configOptions"))

    # ---- inside --------------------------------------------------------------------------

    def _current(self, session_id: str, config_id: str) -> str | None:
        block, key = _CURRENT[config_id]
        held = self.get(session_id, {}).get(block)
        current = held.get(key) if isinstance(held, dict) else None
        return current if isinstance(current, str) else None

    def _set(self, session_id: str, config_id: str, value: str) -> None:
        """The session's ``config_id`` is ``value`` now: its block, and its option's value."""
        self._put(session_id, config_id, value)
        options = self[session_id].get("configOptions")
        if isinstance(options, list):
            self[session_id]["configOptions"] = [
                {**o, "currentValue": value} if isinstance(o, dict) and o.get("id") == config_id
                else o for o in options]

    def _options(self, session_id: str, options: Any) -> None:
        """The agent's refreshed ``configOptions``: kept, and their current mode and model."""
        if not isinstance(options, list):
            return
        self.setdefault(session_id, {})["configOptions"] = options
        for option in options:
            if isinstance(option, dict) and isinstance(option.get("id"), str) \
                    and isinstance(option.get("currentValue"), str):
                self._put(session_id, option["id"], option["currentValue"])

    def _put(self, session_id: str, config_id: str, value: str) -> None:
        """``modes.currentModeId`` or ``models.currentModelId`` (other options have none)."""
        setup = self.setdefault(session_id, {})
        if config_id in _CURRENT:
            block, key = _CURRENT[config_id]
            held = setup.get(block)
            setup[block] = {**(held if isinstance(held, dict) else {}), key: value}
