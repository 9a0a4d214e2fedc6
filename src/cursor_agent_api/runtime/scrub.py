"""The secrets the agent is given masked in what a failed turn reports (its error and stderr tail).

The agent's stderr is quoted in a turn's error message and kept as its ``stderr``; an agent
may print its key, or a CLI build that refuses ``--header=Authorization: Bearer …`` echoes
the option (commander.js does). Both transports pass the turn's error and stderr through
:func:`scrub_failure` once, when the turn ends: each secret value the agent was given becomes
``***`` — ``api_key``, every header's value, and the value of every variable of the agent's
environment (``config.env`` or inherited: ``CURSOR_API_KEY`` exported in a CI job, a
``GITHUB_TOKEN``) whose name says it is one (:data:`SECRET_NAME`: ``…KEY``, ``…TOKEN``,
``…SECRET``, ``…PASSWORD``, …; ``MODE=production`` is no secret, and masking every value
garbled messages that quote it). The few such names that hold a path, never a secret
(:data:`NOT_SECRET_NAMES`: ``PWD``, the workspace every trust error quotes), are left alone, and
so are values shorter than :data:`MIN_SECRET_CHARS`: masking ``1`` or ``on`` would garble
every message and hides nothing worth hiding.

Example:
    >>> from cursor_agent_api.config import AgentConfig
    >>> from cursor_agent_api.errors import AgentProcessError
    >>> cfg = AgentConfig(api_key="sk-abcdefabcdef", headers=["X-Team: on"])
    >>> exc, tail = scrub_failure(cfg, AgentProcessError(
    ...     "bad key sk-abcdefabcdef", stderr="bad key sk-abcdefabcdef"), "bad key sk-abcdefabcdef")
    >>> exc.message, exc.stderr, tail
    ('bad key ***', 'bad key ***', 'bad key ***')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .argv import build_env

if TYPE_CHECKING:
    from ..config import AgentConfig
    from ..errors import CursorAgentError

__all__ = ["MASK", "MIN_SECRET_CHARS", "NOT_SECRET_NAMES", "SECRET_NAME", "config_secrets",
           "scrub", "scrub_failure"]

MIN_SECRET_CHARS = 6
"""Secret values shorter than this are not masked (too short to be a credential, too common
to mask without garbling the text)."""

MASK = "***"

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|AUTH(?!OR)|CREDENTIAL|COOKIE|PRIVATE|SIGNATURE",
                         re.IGNORECASE)
"""A variable of the agent's environment whose name matches holds a secret: its value is
masked (but :data:`NOT_SECRET_NAMES`). ``AUTHOR`` is no ``AUTH``: a CI job's
``GIT_AUTHOR_NAME`` is a name, which messages quote."""

NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK", "XAUTHORITY", "GIT_ASKPASS",
                              "SSH_ASKPASS", "SUDO_ASKPASS"})
"""Names :data:`SECRET_NAME` matches that hold a path, not a secret (the current
folder, a socket, a file, a program): masking them would garble every message that quotes
them."""


def config_secrets(config: AgentConfig, env: Mapping[str, str] | None = None
                   ) -> tuple[str, ...]:
    """The secret values the agent gets worth masking, longest first (so a secret that holds
    another is masked whole): ``config``'s, and those of ``env``, the agent's environment
    (:func:`~.argv.build_env`'s by default: the inherited one with ``config.env`` over it).

    Example:
        >>> from cursor_agent_api.config import AgentConfig
        >>> config_secrets(AgentConfig(api_key="sk-abcdefabcdef", env={"DB_PASSWORD": "hunter2hunter2",
        ...     "API_TOKEN": "1", "MODE": "production", "C_KEY": None},
        ...     headers=["Authorization: Bearer tok123456"]), env={})
        ('Bearer tok123456', 'sk-abcdefabcdef', 'hunter2hunter2')
        >>> config_secrets(AgentConfig(), env={"CURSOR_API_KEY": "sk-from-the-ci-job",
        ...     "PWD": "/home/ci/work", "HOME": "/home/ci", "GIT_AUTHOR_NAME": "Jane Doe",
        ...     "GIT_ASKPASS": "/usr/lib/git-core/git-gui--askpass", "GH_AUTH": "gho_abcdef"})
        ('sk-from-the-ci-job', 'gho_abcdef')
    """
    given = dict(build_env(config) if env is None else env)
    given.update((k, v) for k, v in config.env.items() if v is not None)
    values = {config.api_key or ""}
    values.update(v for k, v in given.items()
                  if SECRET_NAME.search(k) and k not in NOT_SECRET_NAMES)
    values.update(h.partition(":")[2].strip() for h in config.headers)
    return tuple(sorted((v for v in values if len(v) >= MIN_SECRET_CHARS),
                        key=lambda v: (-len(v), v)))


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with each of ``secrets`` replaced by ``***``.

    Example:
        >>> scrub("key=sk-abcdef; again sk-abcdef", ("sk-abcdef",))
        'key=***; again ***'
    """
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub_failure(config: AgentConfig, failure: CursorAgentError | None, stderr: str,
                  env: Mapping[str, str] | None = None) -> tuple[CursorAgentError | None, str]:
    """The turn's error (changed in place: message, ``str()`` and ``stderr``) and its stderr
    tail, with the secrets the agent got masked (:func:`config_secrets`; ``env``: the agent's
    environment, built from ``config`` when not given). Costs nothing when there is neither.

    Example:
        >>> from cursor_agent_api.config import AgentConfig
        >>> scrub_failure(AgentConfig(api_key="sk-abcdefabcdef"), None, "")
        (None, '')
    """
    if failure is None and not stderr:
        return None, stderr
    secrets = config_secrets(config, env)
    if not secrets:
        return failure, stderr
    if failure is not None:
        failure.message = scrub(failure.message, secrets)
        if failure.stderr:
            failure.stderr = scrub(failure.stderr, secrets)
        failure.args = tuple(scrub(a, secrets) if isinstance(a, str) else a
                             for a in failure.args)
    return failure, scrub(stderr, secrets)
