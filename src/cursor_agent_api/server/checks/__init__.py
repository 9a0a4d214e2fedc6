"""The request checks in front of the server, one ASGI middleware each (composed in :mod:`..security`).

* :mod:`.headers` — :class:`SecurityHeaders`: CSP, ``nosniff``, ``no-referrer``, ``DENY`` on every answer;
* :mod:`.host` — :class:`HostCheck`: the ``Host`` header names this server (DNS rebinding);
* :mod:`.origin` — :class:`OriginCheck`: no foreign ``Origin`` on a WebSocket or a change;
* :mod:`.body_size` — :class:`BodySizeLimit`: no body over ``max_body_bytes``;
* :mod:`.authentication` — :class:`Authentication`: the token, the session cookie, sign-in links.

:mod:`.asgi` holds what they share (the ASGI types and :func:`~.asgi.deny`).
"""
