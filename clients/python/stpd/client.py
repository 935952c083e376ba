"""A JSON-RPC 2.0 client for stpd's Unix socket: thread-safe, pipelined, standard library only.

Framing: one compact JSON text per line (``\\n``), both ways. Replies come back as each request
finishes, so they are matched by ``id``; server notifications (no ``id``) arrive between them and
are queued in ``Client.notifications``.

Threads: any number may call at once; each request is sent whole under a lock, and one thread at a
time reads the socket (the one whose reply or notification is awaited), handing what it reads to
the others. Nothing reads while nobody waits, so a client that stops asking stops reading, and
the daemon's own flow control (``events.dropped`` for a stalled subscriber) applies to it.
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .errors import ShuttingDown, error_from
from .exceptions import ConnectionClosed, ProtocolError, RpcError
from .methods import Methods
from .schemas import EventsSubscribeParamsFilter, EventsWaitParamsFilter, EventsWaitResult
from .socket_path import default_socket_path

#: What `events.wait` waits on the daemon's side when not told (its `timeout` default).
DAEMON_DEFAULT_WAIT = 30.0

#: Called with every message item read (a reply, a member of a batch reply, a notification) and the
#: method of the request a reply answers (None for notifications and unknown ids). May raise: the
#: exception reaches the thread that read the item, and the item is dropped.
Observer = Callable[[dict, "str | None"], None]

_MISSING = object()


def encode(message: Any) -> bytes:
    """One frame: compact JSON, then the newline that ends it."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


class Client(Methods):
    """One connection to stpd.

    ``path`` defaults to `default_socket_path()` (``$STPD_SOCKET``, ``$XDG_RUNTIME_DIR/stpd.sock``,
    ``/run/stpd/stpd.sock``). ``timeout`` (seconds, None for ever) bounds connecting, sending and
    each wait for a reply. With ``reconnect``, a call made after the daemon closed the connection
    (a restart, an idle exit) opens a new one first; a request already sent is never sent again.
    """

    def __init__(self, path: str | None = None, timeout: float | None = 30.0, *, connect: bool = True,
                 observer: Observer | None = None, reconnect: bool = True):
        self.path = str(path) if path is not None else default_socket_path()
        self.timeout = timeout
        self.observer = observer
        self.reconnect = reconnect
        #: Server notifications read and not yet taken by `next_notification`, oldest first.
        self.notifications: collections.deque[dict] = collections.deque()
        #: True once a read found the connection reset (the daemon closed with our bytes unread).
        self.reset = False
        self._state = threading.Condition()  # guards everything below but the socket's bytes
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._replies: dict[Any, dict] = {}
        self._methods: dict[Any, str] = {}  # id -> method of requests sent and not yet answered
        self._abandoned: set[Any] = set()  # ids whose caller gave up: their late reply is dropped
        self._reading = False  # one thread reads at a time
        self._generation = 0  # bumped by each reconnection: waits on an older one fail
        self._closed = False
        self._eof = False
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer known to hold no newline
        self.sock = self._new_socket()
        if connect:
            try:
                self.connect()
            except BaseException:
                self.sock.close()
                raise

    def _new_socket(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)  # bounds connect and sendall; reads wait in poll()
        return sock

    def connect(self) -> Client:
        self.sock.connect(self.path)
        return self

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection; a thread waiting on it gets ConnectionClosed."""
        with self._state:
            self._closed = True
            self._eof = True
            self._state.notify_all()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in poll()
        except OSError:
            pass
        self.sock.close()

    @property
    def closed(self) -> bool:
        """True after `close()`, or once the daemon has closed its end."""
        return self._eof

    def _reopen(self) -> None:
        """A new connection in place of one the daemon closed; its unclaimed replies are dropped."""
        sock = self._new_socket()
        try:
            sock.connect(self.path)
        except BaseException:
            sock.close()
            raise
        with self._send_lock, self._state:
            closed, needed = self._closed, self._eof
            if closed or not needed:
                old = sock  # not needed after all: another thread reconnected first
            else:
                old, self.sock = self.sock, sock
                self._buffer.clear()
                self._scanned = 0
                self._eof = False
                self.reset = False
                self._generation += 1
                self._replies.clear()
                self._methods.clear()
                self._abandoned.clear()
        old.close()
        if closed:
            raise ConnectionClosed("the client was closed")

    # -- sending ---------------------------------------------------------------------------------

    def next_id(self) -> int:
        return next(self._ids)

    def request_message(self, method: str, params: Any = None, id: Any = None) -> dict:
        """A request with a fresh id (unless given), remembered so its reply names its method."""
        if id is None:
            id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        with self._state:
            self._methods[id] = method
        return message

    @staticmethod
    def notification_message(method: str, params: Any = None) -> dict:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return message

    def send_raw(self, data: bytes) -> None:
        """Writes DATA as it is (whole frames, or any bytes at all)."""
        with self._send_lock:
            try:
                self.sock.sendall(data)
            except (BrokenPipeError, ConnectionResetError) as error:
                self._lost()
                raise ConnectionClosed(f"the connection to {self.path} is closed: {error}") from error
            except TimeoutError:
                self._lost()  # part of a frame may have gone: the connection cannot be used again
                raise

    def send(self, message: Any) -> None:
        """Sends one message (an object, or a list for a batch) as one frame."""
        self.send_raw(encode(message))

    def request(self, method: str, params: Any = None, id: Any = None) -> Any:
        """Sends a request without waiting for its reply (pipelining); returns its id."""
        message = self.request_message(method, params, id)
        self.send(message)
        return message["id"]

    def notify(self, method: str, params: Any = None) -> None:
        """Sends a notification (a request without id: no reply)."""
        self.send(self.notification_message(method, params))

    def _lost(self) -> None:
        with self._state:
            self._eof = True
            self._state.notify_all()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- calls -----------------------------------------------------------------------------------

    def call(self, method: str, params: Any = None, /, **kwargs: Any) -> Any:
        """Calls METHOD and returns its result, or raises its error (`stpd.errors.NotFound`...).
        Params are a mapping, keyword arguments, or both: ``call("events.wait", since=0)``."""
        if kwargs:
            if params is not None and not isinstance(params, dict):
                raise TypeError("keyword params go with a params mapping, not a list")
            params = {**(params or {}), **kwargs}
        return self._call(method, params, None)

    def _send_anew(self, message: Any) -> None:
        """Sends MESSAGE, first on a new connection if the daemon closed this one (with
        ``reconnect``). A send refused with EPIPE reached nobody, so it is made once more."""
        if self._eof and self.reconnect and not self._closed:
            self._reopen()
            self._remember(message)
        try:
            self.send(message)
        except ConnectionClosed:
            if not self.reconnect or self._closed:
                raise
            self._reopen()
            self._remember(message)
            self.send(message)

    def _remember(self, message: Any) -> None:
        """The methods of MESSAGE's requests again, after a reconnection forgot the old ones."""
        with self._state:
            for item in message if isinstance(message, list) else [message]:
                self._methods[item["id"]] = item["method"]

    def _call(self, method: str, params: Any, timeout: float | None) -> Any:
        message = self.request_message(method, params)
        request_id = message["id"]
        self._send_anew(message)
        try:
            reply = self.wait_reply(request_id, timeout)
        except TimeoutError:
            with self._state:
                self._abandoned.add(request_id)
                self._replies.pop(request_id, None)
            raise
        return self.result(reply)

    def batch(self, calls: Iterable[tuple[str, Any]]) -> list[Any]:
        """Sends CALLS, (method, params) pairs, as one batch; returns each one's result, or the
        RpcError it failed with, in order."""
        messages = [self.request_message(method, params) for method, params in calls]
        if not messages:
            raise ValueError("a batch holds at least one call")
        self._send_anew(messages)
        outcomes: list[Any] = []
        for message in messages:
            try:
                outcomes.append(self.result(self.wait_reply(message["id"])))
            except RpcError as error:
                outcomes.append(error)
        return outcomes

    @staticmethod
    def result(reply: dict) -> Any:
        """A reply's result, or its error raised as the code's exception class."""
        if "error" in reply:
            raise error_from(reply["error"], reply)
        return reply["result"]

    def subscribe(self, since: int | None = None, filter: EventsSubscribeParamsFilter | None = None, *,
                  reconnect: bool = True) -> Subscription:
        """Events as an iterator, on a connection of its own that it keeps through `events.dropped`
        and daemon restarts (see `Subscription`). ``since``: replay the matching events after it
        first; None: only events after now."""
        return Subscription(self.path, since, filter, timeout=self.timeout, observer=self.observer,
                            reconnect=reconnect)

    def wait_events(self, since: int, filter: EventsWaitParamsFilter | None = None, timeout: float | None = None,
                    limit: int | None = None) -> EventsWaitResult:
        """`events.wait`: the matching events after ``since`` at once, or the first ones within
        ``timeout`` seconds (the daemon's default: 30); pass the result's ``next`` as ``since``
        next time (at once when ``endedEarly``: the page stopped at ``limit`` or at its byte bound). It only reads, so a connection lost meanwhile (a restart) is opened again and
        the call repeated, until the wait would have ended."""
        params: dict[str, Any] = {"since": since}
        if filter is not None:
            params["filter"] = filter
        if timeout is not None:
            params["timeout"] = timeout
        if limit is not None:
            params["limit"] = limit
        wait = None if self.timeout is None else self.timeout + (DAEMON_DEFAULT_WAIT if timeout is None else timeout)
        deadline = None if wait is None else time.monotonic() + wait
        delay = 0.05
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            try:
                return self._call("events.wait", params, math.inf if remaining is None else remaining)
            except (ConnectionClosed, FileNotFoundError, ConnectionRefusedError, ShuttingDown):
                if not self.reconnect or self._closed:
                    raise
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    # -- receiving -------------------------------------------------------------------------------

    def wait_reply(self, id: Any, timeout: float | None = None) -> dict:
        """The reply to request ID (its whole object), reading as needed; replies to other ids
        read meanwhile are kept for their own wait. ``timeout`` defaults to the client's."""
        return self._await(lambda: self._replies.pop(id, _MISSING), timeout, f"the reply to id {id!r}")

    def next_notification(self, timeout: float | None = None) -> dict:
        """The oldest server notification not yet taken, reading more if none is queued."""
        return self._await(lambda: self.notifications.popleft() if self.notifications else _MISSING,
                           timeout, "a notification")

    def receive(self, timeout: float | None = None) -> Any:
        """The next message read (a reply, a batch reply, a notification), or None at EOF. A
        notification is also queued in ``notifications``; a reply is handed to the caller only
        (`wait_reply` will not see it). For single-threaded use at the protocol's level."""
        deadline = self._deadline(timeout)
        self._become_reader(deadline, "a message")
        message: Any = None
        try:
            message = self._read_message(self._until(deadline))
        finally:
            with self._state:
                self._reading = False
                if isinstance(message, dict) and "id" not in message and "method" in message:
                    self.notifications.append(message)
                self._state.notify_all()
        return message

    def at_eof(self, timeout: float | None = None) -> bool:
        """True when the daemon closes the connection before sending anything more."""
        deadline = self._deadline(timeout)
        self._become_reader(deadline, "EOF")
        try:
            return self.read_line(self._until(deadline)) is None
        except ConnectionClosed:
            return False
        finally:
            with self._state:
                self._reading = False
                self._state.notify_all()

    def read_line(self, timeout: float | None = None) -> bytes | None:
        """The next raw frame without its newline, or None at EOF. Only the reading thread calls it."""
        deadline = self._deadline(timeout)
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buffer)
            if self._eof:
                if self._buffer:
                    partial = bytes(self._buffer[:200])
                    self._buffer.clear()
                    self._scanned = 0
                    raise ConnectionClosed(f"EOF after a partial frame: {partial!r}")
                return None
            remaining = self._remaining(deadline)
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"no complete frame from {self.path} in time")
            try:
                # poll, not select: an app may hold more than FD_SETSIZE (1024) descriptors.
                poller = select.poll()
                poller.register(self.sock, select.POLLIN)
                if not poller.poll(None if remaining is None else math.ceil(remaining * 1000)):
                    continue
            except (OSError, ValueError):  # closed under us
                self._eof = True
                continue
            try:
                chunk = self.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionResetError:
                # The peer closed with bytes of ours still unread (the kernel then resets
                # instead of a plain EOF): still a close.
                self.reset = True
                chunk = b""
            except OSError:
                chunk = b""
            if not chunk:
                self._eof = True
                continue
            self._buffer += chunk

    # -- the one reader ----------------------------------------------------------------------------

    def _deadline(self, timeout: float | None) -> float | None:
        wait = self.timeout if timeout is None else timeout
        return None if wait is None or wait == math.inf else time.monotonic() + wait

    @staticmethod
    def _remaining(deadline: float | None) -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    @staticmethod
    def _until(deadline: float | None) -> float:
        """A read's timeout for DEADLINE (math.inf: none; `read_line(None)` means the default)."""
        return math.inf if deadline is None else max(0.0, deadline - time.monotonic())

    def _become_reader(self, deadline: float | None, what: str) -> None:
        with self._state:
            while self._reading:
                remaining = self._remaining(deadline)
                if remaining == 0:
                    raise TimeoutError(f"no {what} from {self.path} in time")
                self._state.wait(remaining)
            self._reading = True

    def _await(self, ready: Callable[[], Any], timeout: float | None, what: str) -> Any:
        """Until READY (called under the lock) returns something: reads a message when no other
        thread is reading, else waits for the one that is."""
        deadline = self._deadline(timeout)
        with self._state:
            generation = self._generation
        while True:
            with self._state:
                while True:
                    value = ready()
                    if value is not _MISSING:
                        return value
                    if self._eof or self._generation != generation:
                        raise ConnectionClosed(f"the connection to {self.path} closed while waiting for {what}")
                    remaining = self._remaining(deadline)
                    if remaining == 0:
                        raise TimeoutError(f"no {what} from {self.path} in time")
                    if not self._reading:
                        self._reading = True
                        break
                    self._state.wait(remaining)
            message: Any = None
            try:
                message = self._read_message(self._until(deadline))
            except TimeoutError:
                pass  # the loop says whose deadline passed
            finally:
                with self._state:
                    self._reading = False
                    if message is not None:
                        self._dispatch(message)
                    self._state.notify_all()

    def _read_message(self, timeout: float | None) -> Any:
        """One message read and handed to the observer; None at EOF."""
        line = self.read_line(timeout)
        if line is None:
            return None
        try:
            message = json.loads(line)
        except ValueError as error:
            self._lost()
            raise ProtocolError(f"not JSON from {self.path}: {line[:200]!r}") from error
        items = message if isinstance(message, list) else [message]
        with self._state:
            methods = [self._methods.pop(item.get("id"), None)
                       if isinstance(item, dict) and "id" in item and ("result" in item or "error" in item)
                       else None for item in items]
        if self.observer is not None:
            for item, method in zip(items, methods):
                if isinstance(item, dict):
                    self.observer(item, method)
        return message

    def _dispatch(self, message: Any) -> None:
        """Files what was read (under the lock): replies by id, notifications in their queue."""
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict):
                continue
            if "id" not in item and "method" in item:
                self.notifications.append(item)
            elif "id" in item and ("result" in item or "error" in item):
                if item["id"] in self._abandoned:
                    self._abandoned.discard(item["id"])
                else:
                    self._replies[item["id"]] = item


# Last: subscription.py builds on Client (each subscription has a Client of its own).
from .subscription import Subscription  # noqa: E402
