"""A small JSON-RPC 2.0 client for stpd's socket, standard library only.

Framing: one compact JSON text per line (``\\n``), both ways. Replies may come out of order,
so replies that arrive while waiting for another id are kept until asked for; server
notifications (no ``id``) are queued in ``Client.notifications``.

Contract checks are not done here: pass a ``checker`` (see ``Tests/e2e/contract.py``) and every
result, error and notification that arrives is handed to it.
"""

from __future__ import annotations

import collections
import itertools
import json
import socket
import time
from typing import Any, Iterable


class RpcError(Exception):
    """An ``error`` reply: ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None, reply: dict | None = None):
        super().__init__(f"{code}: {message}" + (f" ({data!r})" if data is not None else ""))
        self.code = code
        self.message = message
        self.data = data
        self.reply = reply


class ConnectionClosed(Exception):
    """The daemon closed the connection (EOF) while a reply was awaited."""


def encode(message: Any) -> bytes:
    """One frame: compact JSON plus a newline."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


class Client:
    def __init__(self, path: str, timeout: float = 30.0, checker: Any = None, connect: bool = True):
        self.path = path
        self.timeout = timeout
        self.checker = checker
        self.notifications: collections.deque[dict] = collections.deque()
        self._replies: dict[Any, dict] = {}
        self._methods: dict[Any, str] = {}  # id -> method, for replies to requests we sent
        self._ids = itertools.count(1)
        self._buffer = b""
        self._eof = False
        self.reset = False
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if connect:
            self.connect()

    def connect(self) -> "Client":
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)
        return self

    # -- context manager -----------------------------------------------------------------
    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    # -- sending ---------------------------------------------------------------------------
    def next_id(self) -> int:
        return next(self._ids)

    def request_message(self, method: str, params: Any = None, id: Any = None) -> dict:
        """Builds a request (and remembers its method, so its reply can be checked)."""
        if id is None:
            id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        self._methods[id] = method
        return message

    @staticmethod
    def notification_message(method: str, params: Any = None) -> dict:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return message

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, message: Any) -> None:
        """Sends one message (an object or a batch array) as one frame."""
        self.send_raw(encode(message))

    def request(self, method: str, params: Any = None, id: Any = None) -> Any:
        """Sends a request without waiting; returns its id."""
        message = self.request_message(method, params, id)
        self.send(message)
        return message["id"]

    def notify(self, method: str, params: Any = None) -> None:
        self.send(self.notification_message(method, params))

    def call(self, method: str, params: Any = None) -> Any:
        """Sends a request and returns its result, or raises RpcError."""
        return self.result(self.wait_reply(self.request(method, params)))

    # -- receiving -------------------------------------------------------------------------
    def read_line(self, timeout: float | None = None) -> bytes | None:
        """The next raw frame without its newline, or None at EOF."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while b"\n" not in self._buffer:
            if self._eof:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no complete frame from {self.path} in time")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                # The peer closed with bytes of ours still unread (the kernel then resets
                # instead of a plain EOF): still a close.
                self.reset = True
                chunk = b""
            if not chunk:
                self._eof = True
                if self._buffer:
                    raise ConnectionClosed(f"EOF after a partial frame: {self._buffer[:200]!r}")
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def receive(self, timeout: float | None = None) -> Any:
        """The next message (a reply, a batch reply or a notification), checked; None at EOF.
        Notifications are also appended to ``notifications``."""
        line = self.read_line(timeout)
        if line is None:
            return None
        message = json.loads(line)
        self._check(message)
        if isinstance(message, dict) and "id" not in message and "method" in message:
            self.notifications.append(message)
        return message

    def wait_reply(self, id: Any, timeout: float | None = None) -> dict:
        """Reads until the reply with ``id`` arrives; other replies are kept for later."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while id not in self._replies:
            message = self.receive(max(0.0, deadline - time.monotonic()))
            if message is None:
                raise ConnectionClosed(f"connection closed while waiting for the reply to id {id!r}")
            for reply in message if isinstance(message, list) else [message]:
                if isinstance(reply, dict) and "id" in reply and ("result" in reply or "error" in reply):
                    self._replies[reply["id"]] = reply
        return self._replies.pop(id)

    def next_notification(self, timeout: float | None = None) -> dict:
        """The oldest server notification not yet taken, reading more if none is queued
        (replies read meanwhile are kept for wait_reply)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self.notifications:
            message = self.receive(max(0.0, deadline - time.monotonic()))
            if message is None:
                raise ConnectionClosed("connection closed while waiting for a notification")
            for reply in message if isinstance(message, list) else [message]:
                if isinstance(reply, dict) and "id" in reply and ("result" in reply or "error" in reply):
                    self._replies[reply["id"]] = reply
        return self.notifications.popleft()

    def at_eof(self, timeout: float | None = None) -> bool:
        """True when the daemon closes the connection before sending anything else."""
        try:
            return self.read_line(timeout) is None
        except ConnectionClosed:
            return False

    @staticmethod
    def result(reply: dict) -> Any:
        if "error" in reply:
            error = reply["error"]
            raise RpcError(error.get("code"), error.get("message"), error.get("data"), reply)
        return reply["result"]

    # -- contract checks ---------------------------------------------------------------------
    def _check(self, message: Any) -> None:
        if self.checker is None:
            return
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict):
                continue
            if "id" not in item and "method" in item:
                self.checker.check_notification(item)
            elif "result" in item:
                method = self._methods.get(item.get("id"))
                if method is not None:
                    self.checker.check_result(method, item["result"])
            elif "error" in item:
                self.checker.check_error(self._methods.get(item.get("id")), item["error"])


def batch(client: Client, calls: Iterable[tuple[str, Any]]) -> list[dict]:
    """Builds batch members (requests with fresh ids) for ``client.send``."""
    return [client.request_message(method, params) for method, params in calls]
