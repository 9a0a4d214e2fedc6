"""Secrets out of the logs: ``token`` and ``code`` query values, and the values of the
headers that carry credentials (a debug log dumps each WebSocket handshake's headers), hidden
in log records.

Example:
    >>> redact("GET /api/chats?a=1&tok%65n=s3cret&code=x")
    'GET /api/chats?a=1&tok%65n=[redacted]&code=[redacted]'
    >>> redact("< Authorization: token s3cret"), redact("< cookie: cursor_agent_api_session=x")
    ('< Authorization: [redacted]', '< cookie: [redacted]')
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

# A secret's value runs to the next "&", "#" or whitespace, quotes and ";" included: a token
# may hold any printable ASCII, and stopping early would log the rest of it.
_TOKEN_RE = re.compile(r"(token=)[^&\s#]+", re.IGNORECASE)
# A name runs from a separator to its "=", ";" included: ``?token;=T`` names "token;".
_NAME_RE = re.compile(r"[?&;]([^=&\s\"'?#]*)=")
_WORDS_RE = re.compile(r"[^a-z0-9]+")
_VALUE_RE = re.compile(r"[^&\s#]*")
_SECRET_PARAMS = frozenset({"token", "code"})
# the headers that carry credentials, and a header line as the websockets library logs it
# ("< %s: %s" with the name and the value; or as text, "< name: value")
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_HEADER_FORMATS = frozenset({"< %s: %s", "> %s: %s"})
_HEADER_RE = re.compile(
    r"^([<>]?\s*(?:authorization|proxy-authorization|cookie|set-cookie)\s*:\s*).*$",
    re.IGNORECASE | re.MULTILINE)


def _decoded_name(name: str) -> str:
    for _ in range(3):  # %2565 -> %65 -> e: whatever a server might decode, decode here
        plain = unquote_plus(name)
        if plain == name:
            break
        name = plain
    return name.strip().lower()


def _secret_name(name: str) -> bool:
    """Whether a query parameter's name could be ``token`` or ``code`` to some reader: decoded,
    then with every character that is not a letter or digit (separators, controls, ``%00``)
    dropped, or any of the words those characters separate.

    Example:
        >>> [_secret_name(n) for n in ("token;", "tok%00en", "x;code", "a", "tokens")]
        [True, True, True, False, False]
    """
    words = _WORDS_RE.split(_decoded_name(name))
    return "".join(words) in _SECRET_PARAMS or any(w in _SECRET_PARAMS for w in words)


def redact(text: str) -> str:
    """``text`` with the value of every ``token``/``code`` query parameter hidden.

    Parameter names are URL-decoded first: ``?tok%65n=T`` is ``?token=T`` to the server;
    separators and control characters in a name are ignored (``?token;=T``, ``?token%00=T``).

    Example:
        >>> redact("GET /?token;=T1&token%00=T2&a;code=T3&b=1")
        'GET /?token;=[redacted]&token%00=[redacted]&a;code=[redacted]&b=1'
    """
    pieces: list[str] = []
    pos = 0
    while (name := _NAME_RE.search(text, pos)) is not None:
        pieces.append(text[pos:name.end()])
        pos = name.end()
        if _secret_name(name.group(1)):
            value = _VALUE_RE.match(text, pos)
            assert value is not None  # (it matches the empty string)
            pieces.append("[redacted]")
            pos = value.end()
    pieces.append(text[pos:])
    return _HEADER_RE.sub(r"\1[redacted]", _TOKEN_RE.sub(r"\1[redacted]", "".join(pieces)))


class RedactTokens(logging.Filter):
    """A logging filter that hides ``token``/``code`` values in log records (uvicorn's access log).

    Example:
        >>> r = logging.LogRecord("a", 20, "", 0, '"%s %s"', ("GET", "/?TOK%45N=abc"), None)
        >>> RedactTokens().filter(r), r.args
        (True, ('GET', '/?TOK%45N=[redacted]'))
        >>> r = logging.LogRecord("a", 10, "", 0, "< %s: %s", ("authorization", "token T"), None)
        >>> RedactTokens().filter(r), r.getMessage()
        (True, '< authorization: [redacted]')
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            if (record.msg in _HEADER_FORMATS and isinstance(record.args, tuple)
                    and len(record.args) == 2
                    and str(record.args[0]).strip().lower() in _SECRET_HEADERS):
                record.args = (record.args[0], "[redacted]")  # the websockets library's dump
            record.msg = redact(record.msg)
        return True
