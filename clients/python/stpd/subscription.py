"""Events as an iterator that survives `events.dropped`, daemon restarts and socket activation.

The daemon numbers events with a global, gap-free ``seq`` and replays those after ``since`` on
`events.subscribe`. A subscription therefore needs only one number to go on where it stopped:
``position``, the seq up to which every matching event was yielded (or did not match). It is the
``since`` of every new `events.subscribe`, so after a restart nothing is missed, and an event at or
below it is never yielded twice.
"""

from __future__ import annotations

import math
import time
from typing import Any

from . import client as connection
from .errors import ShuttingDown
from .exceptions import ConnectionClosed
from .schemas import EventNotification, EventsSubscribeParamsFilter

#: Errors after which connecting again may work: the daemon is stopping, restarting or starting.
_TRANSIENT = (ConnectionClosed, FileNotFoundError, ConnectionRefusedError, ShuttingDown)


class Subscription:
    """Iterates over the params of `event` notifications (``seq``, ``type``, ``objectId``,
    ``object``...), in ``seq`` order, for ever (``next(timeout=...)`` bounds one wait).

    It holds a connection of its own. When the daemon drops it (``events.dropped``: it read too
    slowly) or the connection ends (a restart, a stop under socket activation), it connects again
    and subscribes with ``since=position``: retrying every 0.1 s, doubling up to ``max_delay``,
    until a `next` deadline passes. Errors that retrying cannot fix are raised: CursorExpired
    (events it had not yet yielded were pruned: re-read the objects' state), CursorAhead (the
    daemon's log was reset). The first subscription is made at once, and its errors raised.

    One thread at a time may iterate."""

    def __init__(self, path: str, since: int | None = None, filter: EventsSubscribeParamsFilter | None = None, *,
                 timeout: float | None = 30.0, observer: connection.Observer | None = None, reconnect: bool = True,
                 max_delay: float = 2.0):
        self.path = path
        self.filter = filter
        self.timeout = timeout
        self.observer = observer
        self.reconnect = reconnect
        self.max_delay = max_delay
        #: Every matching event up to this seq was yielded (or did not match); None until known.
        self.position: int | None = since
        #: The id of the current `events.subscribe`, and the daemon's latest seq when it began.
        self.subscription: str | None = None
        self.latest_seq: int | None = None
        #: How many times the daemon dropped this subscription, and connections made after the first.
        self.drops = 0
        self.reconnects = 0
        self._client: connection.Client | None = None
        self._closed = False
        self._open(None, retry=False)

    def __iter__(self) -> Subscription:
        return self

    def __next__(self) -> EventNotification:
        if self._closed:
            raise StopIteration
        return self.next()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Ends the subscription (its connection closes); iterating stops."""
        self._closed = True
        if self._client is not None:
            self._client.close()
            self._client = None

    def next(self, timeout: float | None = None) -> EventNotification:
        """The next event; TimeoutError if none comes within TIMEOUT seconds (None: wait for ever)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._closed:
                raise ConnectionClosed("the subscription was closed")
            if self._client is None:
                self._open(deadline, retry=True)
                assert self._client is not None
            remaining = math.inf if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                message = self._client.next_notification(remaining)
            except ConnectionClosed as error:
                self._lost(f"the connection closed ({error}); resume with since={self.position}")
                continue
            params = message.get("params") or {}
            if params.get("subscription") != self.subscription:
                continue
            if message.get("method") == "event":
                seq = params["seq"]
                if self.position is not None and seq <= self.position:
                    continue  # sent again by a resumed subscription: yielded already
                self.position = seq
                return params
            if message.get("method") == "events.dropped":
                # Every event up to resumeSince was sent, and each one read was yielded: those
                # not read did not match. Resuming after it loses nothing.
                self.drops += 1
                self.position = max(self.position or 0, params["resumeSince"])
                self._lost(f"the daemon dropped the subscription ({params.get('reason')}); "
                           f"resume with since={self.position}")

    def _lost(self, why: str) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if not self.reconnect:
            self._closed = True
            raise ConnectionClosed(why)

    def _open(self, deadline: float | None, retry: bool) -> None:
        """Connects and subscribes from ``position``, retrying what is transient when RETRY."""
        delay = 0.1
        while True:
            client = connection.Client(self.path, self.timeout, connect=False, observer=self.observer, reconnect=False)
            try:
                client.connect()
                params: dict[str, Any] = {}
                if self.position is not None:
                    params["since"] = self.position
                if self.filter:
                    params["filter"] = self.filter
                reply = client.call("events.subscribe", params)
                break
            except _TRANSIENT:
                client.close()
                if not retry:
                    raise
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise TimeoutError(f"could not subscribe again at {self.path} in time")
                time.sleep(delay)
                delay = min(delay * 2, self.max_delay)
            except BaseException:
                client.close()
                raise
        if retry:
            self.reconnects += 1
        if self.position is None:
            self.position = reply["latestSeq"]
        self.subscription = reply["subscription"]
        self.latest_seq = reply["latestSeq"]
        self._client = client
