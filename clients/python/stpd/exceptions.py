"""The exceptions every other module raises. The per-code subclasses of `RpcError` are in `errors`."""

from __future__ import annotations

from typing import Any


class RpcError(Exception):
    """An error reply: ``code``, ``message`` and ``data`` as the daemon sent them, and the whole
    ``reply``. A code the contract lists is raised as its own subclass (``stpd.errors.NotFound``...),
    so ``except RpcError`` catches them all."""

    code: Any = None

    def __init__(self, code: Any, message: str, data: Any = None, reply: dict | None = None):
        super().__init__(f"{code}: {message}" + (f" ({data!r})" if data is not None else ""))
        self.code = code
        self.message = message
        self.data = data
        self.reply = reply


class ConnectionClosed(ConnectionError):
    """The daemon closed the connection (or it broke) while something was awaited on it."""


class ProtocolError(ConnectionClosed):
    """The daemon sent a line that is not JSON; the connection is unusable and was closed."""
