"""The durable event log end to end (design.md sections 3 and 4), against the real stpd binary
started with --debug-methods, whose `debug.emit` appends `debug.test` events.

Replay then live with no gap and no duplicate, across a `kill -9` and a restart; filters and
`events.unsubscribe`; a subscriber that stops reading (dropped with `events.dropped`, without
slowing anyone else); the `events.wait` long poll; retention with CursorExpired/CursorAhead; the
modes of the state directory and database files; `debug.emit` disabled by default.

Absences are proven by ordering, not by sleeping: a subscription's events come in `seq` order
and a live event is queued on its connection before the reply to the request that committed it,
so "nothing arrived before X" is a statement about the line stream.
"""

from __future__ import annotations

from codes import CURSOR_AHEAD, CURSOR_EXPIRED, DISABLED, SUBSCRIPTION_NOT_FOUND, TOO_MANY_WAITS
import json
import os
import sqlite3
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rpc import Client, RpcError, encode


READ_TIMEOUT = 30.0


# -- helpers -----------------------------------------------------------------------------------

@pytest.fixture
def daemon(start_stpd, tmp_path):
    return start_stpd(tmp_path, "--debug-methods")


def emit(client: Client, count: int = 1, object_id: str | None = None, payload: Any = None) -> tuple[int, int]:
    """debug.emit; returns (firstSeq, lastSeq) after checking they span `count` seqs."""
    params: dict[str, Any] = {"count": count}
    if object_id is not None:
        params["objectId"] = object_id
    if payload is not None:
        params["payload"] = payload
    result = client.call("debug.emit", params)
    assert result["lastSeq"] - result["firstSeq"] == count - 1, result
    return result["firstSeq"], result["lastSeq"]


def subscribe(client: Client, **params: Any) -> dict:
    return client.call("events.subscribe", params)


def next_event(client: Client, subscription: str, timeout: float = READ_TIMEOUT) -> dict:
    """The params of the next notification, which must be an `event` of `subscription`."""
    message = client.next_notification(timeout)
    assert message["method"] == "event", f"expected an event, got {message}"
    assert message["params"]["subscription"] == subscription, message
    return message["params"]


def events_through(client: Client, subscription: str, last_seq: int, timeout: float = READ_TIMEOUT) -> list[dict]:
    """Reads `event` notifications of `subscription` until the one with seq `last_seq`
    (a seq past it, or any other notification, fails)."""
    deadline = time.monotonic() + timeout
    received: list[dict] = []
    while not received or received[-1]["seq"] < last_seq:
        received.append(next_event(client, subscription, max(0.0, deadline - time.monotonic())))
    assert received[-1]["seq"] == last_seq, f"seq {last_seq} skipped: got {[e['seq'] for e in received]}"
    return received


def seqs(events: list[dict]) -> list[int]:
    return [event["seq"] for event in events]


def rpc_error(client: Client, method: str, params: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        client.call(method, params)
    return caught.value


def status(daemon) -> dict:
    with daemon.client() as client:
        return client.call("daemon.status")


def wait_for_subscriptions(client: Client, count: int, why: str, timeout: float = 10.0) -> dict:
    """Bounded poll of daemon.status until it counts `count` subscriptions."""
    deadline = time.monotonic() + timeout
    while (current := client.call("daemon.status"))["subscriptions"] != count:
        assert time.monotonic() < deadline, f"{why}: {current}"
        time.sleep(0.05)
    return current


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# -- replay, then live ---------------------------------------------------------------------------

def test_replay_then_live_without_gap_or_duplicate(daemon):
    with daemon.client() as emitter:
        assert emit(emitter, 20, "dbg_replay") == (1, 20)
        # Several subscribers, each from another point of the log, each racing emits from its
        # own connection (pipelined behind the subscribe) and from another connection.
        for since in (0, 1, 12, 19):
            with daemon.client() as subscriber:
                subscribe_id = subscriber.next_id()
                # One write, two frames: the emit is handled concurrently with the subscribe.
                subscriber.send_raw(
                    encode(subscriber.request_message("events.subscribe", {"since": since}, id=subscribe_id))
                    + encode(subscriber.request_message("debug.emit", {"count": 3, "objectId": "dbg_replay"})))
                emit(emitter, 2, "dbg_replay")

                # The raw line stream: no event of any subscription before the subscribe reply.
                reply = None
                while reply is None:
                    message = subscriber.receive()
                    assert message is not None, "EOF before the subscribe reply"
                    assert message.get("method") != "event", \
                        f"an event arrived before the events.subscribe reply: {message}"
                    if message.get("id") == subscribe_id:
                        reply = subscriber.result(message)
                subscription = reply["subscription"]
                assert reply["latestSeq"] >= 20

                # Then more events, after the subscription is established.
                _, last = emit(emitter, 4, "dbg_replay")
                # Replies read above are kept by the client; notifications are queued in order.
                received = events_through(subscriber, subscription, last)
                assert seqs(received) == list(range(since + 1, last + 1)), \
                    f"since={since}: not every seq after it exactly once: {seqs(received)}"
                for event in received:
                    assert event["type"] == "debug.test"
                    assert event["objectId"] == "dbg_replay"
                    assert event["object"]["id"] == "dbg_replay"


def test_subscribe_without_since_is_live_only(daemon):
    with daemon.client() as client:
        _, before = emit(client, 5)
        reply = subscribe(client)
        assert reply["latestSeq"] == before
        first, last = emit(client, 2)
        assert seqs(events_through(client, reply["subscription"], last)) == [first, last] == [before + 1, before + 2]


# -- kill -9, restart ----------------------------------------------------------------------------

def test_resume_after_kill_9_and_restart(start_stpd, tmp_path):
    first_daemon = start_stpd(tmp_path, "--debug-methods")
    payload = {"note": "kept across kill -9", "list": [1, 2, 3]}
    with first_daemon.client() as emitter, first_daemon.client() as watcher:
        assert emit(emitter, 10, "dbg_persist", payload) == (1, 10)
        subscription = subscribe(watcher, since=0)["subscription"]
        seen = events_through(watcher, subscription, 6)
        assert seqs(seen) == [1, 2, 3, 4, 5, 6]
        last_seen = seen[-1]["seq"]
        # More happens that the client does not read before the daemon dies.
        assert emit(emitter, 4, "dbg_persist", payload) == (11, 14)
        first_daemon.kill()  # SIGKILL: no shutdown path runs
        assert first_daemon.proc.returncode == -9

    second_daemon = start_stpd(tmp_path, "--debug-methods")  # same socket path and state dir
    assert second_daemon.socket_path == first_daemon.socket_path
    store = status(second_daemon)["store"]
    assert store["latestSeq"] == 14 and store["oldestSeq"] == 1, store

    with second_daemon.client() as watcher, second_daemon.client() as emitter:
        reply = subscribe(watcher, since=last_seen)
        assert reply["latestSeq"] == 14
        # New events after the restart continue the seq: nothing is reused.
        assert emit(emitter, 3, "dbg_persist", payload) == (15, 17)
        received = events_through(watcher, reply["subscription"], 17)
        assert seqs(received) == list(range(7, 18)), seqs(received)
        # The events' content survived too (object state as it was committed).
        assert [e["object"]["n"] for e in received] == [7, 8, 9, 10, 1, 2, 3, 4, 1, 2, 3]
        assert all(e["object"]["payload"] == payload and e["objectId"] == "dbg_persist" for e in received)

    # The object itself survived the kill: its committed state is in the store (read-only look
    # at the SQLite file while the restarted daemon runs; WAL allows concurrent readers).
    database = Path(second_daemon.state_dir) / "stpd.sqlite"
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        rows = connection.execute("SELECT kind, state FROM object WHERE id = ?", ("dbg_persist",)).fetchall()
    finally:
        connection.close()
    assert len(rows) == 1, rows
    kind, state = rows[0]
    # The state is sealed at rest (docs/SECURITY.md); the restarted daemon reads it back: debug.emit
    # on the id checks the stored object is the caller's own debug object before it writes.
    assert kind == "debug" and state.startswith("sealed:v1:"), state[:40]
    assert second_daemon.client().call("debug.emit", {"objectId": "dbg_persist"})["firstSeq"] == 18


# -- filters and unsubscribe ---------------------------------------------------------------------

def test_filters_by_object_and_type(daemon):
    with daemon.client() as emitter, daemon.client() as client:
        # History: a and b interleaved.
        emit(emitter, 2, "dbg_a")
        emit(emitter, 2, "dbg_b")
        emit(emitter, 1, "dbg_a")
        by_object = subscribe(client, since=0, filter={"objects": ["dbg_a"]})["subscription"]
        exact_type = subscribe(client, since=0, filter={"types": ["debug.test"], "objects": ["dbg_b"]})["subscription"]
        by_kind = subscribe(client, since=0, filter={"types": ["debug.*"]})["subscription"]
        # Live: more of both, ending with one of each so every subscription has a last event.
        emit(emitter, 1, "dbg_b")
        emit(emitter, 2, "dbg_a")
        emit(emitter, 1, "dbg_c")
        _, last_b = emit(emitter, 1, "dbg_b")
        _, last_a = emit(emitter, 1, "dbg_a")
        assert last_a == 11

        got: dict[str, list[dict]] = {by_object: [], exact_type: [], by_kind: []}
        wanted = {by_object: last_a, exact_type: last_b, by_kind: last_a}
        deadline = time.monotonic() + READ_TIMEOUT
        while any(not got[s] or got[s][-1]["seq"] < wanted[s] for s in got):
            message = client.next_notification(max(0.0, deadline - time.monotonic()))
            assert message["method"] == "event", message
            got[message["params"]["subscription"]].append(message["params"])
        # Each stream is in seq order and ends at its last matching event; anything that did not
        # match would have had to come before it.
        assert seqs(got[by_object]) == [1, 2, 5, 7, 8, 11]
        assert {e["objectId"] for e in got[by_object]} == {"dbg_a"}
        assert seqs(got[exact_type]) == [3, 4, 6, 10]
        assert {e["objectId"] for e in got[exact_type]} == {"dbg_b"}
        assert seqs(got[by_kind]) == list(range(1, 12))

        # Types that must not match debug.test: another kind's wildcard, a prefix, a bare kind,
        # an exact type of the kind that is not this one. events.wait scans the whole log with
        # the same filter and returns at once (timeout 0).
        for types in (["payment.*"], ["debug.tes"], ["debug"], ["debug.other"], ["deb.*"], ["debug.test.*"]):
            result = client.call("events.wait", {"since": 0, "filter": {"types": types}, "timeout": 0})
            assert result == {"events": [], "next": 11, "endedEarly": False}, (types, result)
        result = client.call("events.wait", {"since": 0, "filter": {"types": ["payment.*", "debug.test"],
                                                                    "objects": ["dbg_c"]}, "timeout": 0})
        assert seqs(result["events"]) == [9] and result["next"] == 11
        result = client.call("events.wait", {"since": 0, "filter": {"objects": ["dbg_none"]}, "timeout": 0})
        assert result == {"events": [], "next": 11, "endedEarly": False}


def test_unsubscribe_stops_delivery(daemon):
    with daemon.client() as client:
        subscription = subscribe(client)["subscription"]
        _, seq = emit(client)
        # Proves the subscription is live: its event arrives.
        assert next_event(client, subscription)["seq"] == seq

        assert client.call("events.unsubscribe", {"subscription": subscription}) == {"unsubscribed": True}
        # Events committed after the unsubscribe reply: a live subscription's notification would be
        # queued before the reply to the emit that committed it, and surely before the ping reply.
        emit(client, 3)
        client.notifications.clear()
        ping_id = client.request("daemon.ping")
        while True:
            message = client.receive()
            assert message is not None, "EOF"
            assert message.get("method") != "event", f"event after events.unsubscribe: {message}"
            if message.get("id") == ping_id:
                break
        assert status(daemon)["subscriptions"] == 0

        # Ending it again: it is gone.
        error = rpc_error(client, "events.unsubscribe", {"subscription": subscription})
        assert error.code == SUBSCRIPTION_NOT_FOUND


def test_unsubscribe_unknown_or_someone_elses_subscription(daemon):
    with daemon.client() as owner, daemon.client() as other:
        subscription = subscribe(owner)["subscription"]
        error = rpc_error(other, "events.unsubscribe", {"subscription": subscription})
        assert error.code == SUBSCRIPTION_NOT_FOUND
        error = rpc_error(owner, "events.unsubscribe", {"subscription": "sub_doesnotexist"})
        assert error.code == SUBSCRIPTION_NOT_FOUND
        # The owner's subscription was not touched by the other connection's attempt.
        _, seq = emit(other)
        assert next_event(owner, subscription)["seq"] == seq
        assert status(daemon)["subscriptions"] == 1


# -- slow consumer -------------------------------------------------------------------------------

BATCH = 10            # events per debug.emit: ~42 KB, under the 64 KiB outbound budget
BATCHES = 100         # ~4.2 MB of events in all
BLOB = "x" * 4000


def test_slow_consumer_is_dropped_without_slowing_anyone(start_stpd, tmp_path):
    started = time.monotonic()
    daemon = start_stpd(tmp_path, "--debug-methods", "--max-outbound-bytes", "65536")
    total = BATCH * BATCHES
    with daemon.client() as slow, daemon.client() as fast, daemon.client() as emitter:
        slow_reply = subscribe(slow)
        slow_subscription = slow_reply["subscription"]
        assert slow_reply["latestSeq"] == 0
        fast_subscription = subscribe(fast)["subscription"]
        # From here on `slow` reads nothing until the end.

        progress = threading.Condition()
        fast_seen: list[int] = []
        fast_other: list[dict] = []
        fast_failure: list[BaseException] = []

        def read_fast() -> None:
            try:
                while len(fast_seen) < total:
                    message = fast.next_notification(READ_TIMEOUT)
                    if message["method"] != "event" or message["params"]["subscription"] != fast_subscription:
                        fast_other.append(message)
                        return
                    with progress:
                        fast_seen.append(message["params"]["seq"])
                        progress.notify_all()
            except BaseException as error:  # reported by the main thread
                fast_failure.append(error)
            finally:
                with progress:
                    progress.notify_all()

        reader = threading.Thread(target=read_fast, daemon=True)
        reader.start()
        for batch in range(BATCHES):
            # The fast reader has everything so far, so nothing is queued for it: a batch (one
            # burst of ~42 KB, committed and fanned out at once) fits its 64 KiB budget. A reader a
            # batch behind could legitimately be over budget for the millisecond the daemon
            # takes to write a burst out, so the test does not let it lag.
            floor = batch * BATCH
            with progress:
                assert progress.wait_for(
                    lambda: len(fast_seen) >= floor or fast_failure or fast_other or not reader.is_alive(),
                    timeout=READ_TIMEOUT), f"the fast subscriber is stuck at {len(fast_seen)} events"
            assert not fast_failure and not fast_other, (fast_failure, fast_other[:1])
            first, last = emit(emitter, BATCH, "dbg_flood", {"blob": BLOB, "batch": batch})
            assert (first, last) == (batch * BATCH + 1, (batch + 1) * BATCH)
        reader.join(READ_TIMEOUT)
        assert not reader.is_alive(), "the fast subscriber did not get every event"
        assert not fast_failure, fast_failure
        assert not fast_other, f"the fast subscriber got something else: {fast_other[0]}"
        assert fast_seen == list(range(1, total + 1))

        # The stalled subscription is gone (bounded poll of a condition).
        wait_for_subscriptions(emitter, 1, "the stalled subscriber was never dropped")
        # The daemon answers a new connection at once while `slow` still has unread data queued.
        with daemon.client(timeout=5) as third:
            asked = time.monotonic()
            assert third.call("daemon.ping")["pong"] is True
            assert time.monotonic() - asked < 10

        # Now the stalled client reads: consecutive events from its start, one events.dropped
        # naming the last seq it got, then EOF.
        received: list[int] = []
        while True:
            message = slow.next_notification(READ_TIMEOUT)
            if message["method"] != "event":
                break
            assert message["params"]["subscription"] == slow_subscription
            received.append(message["params"]["seq"])
        assert message["method"] == "events.dropped", message
        assert message["params"] == {"subscription": slow_subscription, "reason": "slow-consumer",
                                     "resumeSince": received[-1] if received else 0}, message
        assert received == list(range(1, len(received) + 1)), "the stalled subscriber's events have a gap"
        assert len(received) < total, "the stalled subscriber was never dropped"
        assert slow.at_eof(READ_TIMEOUT), "the connection stayed open after events.dropped"
        resume_since = message["params"]["resumeSince"]

        # Resuming from resumeSince loses nothing.
        with daemon.client() as again:
            reply = subscribe(again, since=resume_since)
            assert reply["latestSeq"] == total
            assert seqs([next_event(again, reply["subscription"]) for _ in range(3)]) == \
                [resume_since + 1, resume_since + 2, resume_since + 3]
        # `again` has closed: only `fast` remains (the daemon notices the close asynchronously).
        wait_for_subscriptions(emitter, 1, "a subscription outlived its closed connection")
    assert time.monotonic() - started < 60


def test_never_reading_subscriber_gets_events_dropped_first_and_resumes_without_loss(start_stpd, tmp_path):
    """issue 11: a subscriber that reads nothing while 20,000 events (9 MB) are emitted used to
    be cut off with a bare EOF, its events.dropped queued behind the 4 MiB that overflowed and
    lost when the connection closed. Now, when it reads, each of its subscriptions has an
    unbroken run of events, then its own events.dropped naming the last one, then EOF; and
    resuming from resumeSince loses nothing."""
    daemon = start_stpd(tmp_path, "--debug-methods")  # the default outbound budget, 4 MiB
    with daemon.client() as slow, daemon.client() as emitter:
        everything = subscribe(slow)["subscription"]
        only_b = subscribe(slow, filter={"objects": ["dbg_b"]})["subscription"]
        # From here on `slow` reads nothing until every event is committed.
        blob = "y" * 400
        for batch in range(20):
            emit(emitter, 990, "dbg_a", {"blob": blob})
            emit(emitter, 10, "dbg_b", {"blob": blob})
        total = 20 * 1000
        wait_for_subscriptions(emitter, 0, "the stalled subscriber was never dropped")

        received: dict[str, list[dict]] = {everything: [], only_b: []}
        dropped: dict[str, dict] = {}
        while (message := slow.receive(READ_TIMEOUT)) is not None:
            assert "method" in message, f"not a notification: {message}"
            subscription = message["params"]["subscription"]
            assert subscription not in dropped, f"{message['method']} after events.dropped of {subscription}"
            if message["method"] == "events.dropped":
                dropped[subscription] = message["params"]
            else:
                assert message["method"] == "event", message
                received[subscription].append(message["params"])
        assert set(dropped) == {everything, only_b}, f"events.dropped missing: got {dropped}"

    all_seqs = seqs(received[everything])
    assert all_seqs == list(range(1, len(all_seqs) + 1)), "the stream has a gap"
    assert len(all_seqs) < total
    assert dropped[everything] == {"subscription": everything, "reason": "slow-consumer",
                                   "resumeSince": all_seqs[-1] if all_seqs else 0}
    b_seqs = seqs(received[only_b])
    assert all(e["objectId"] == "dbg_b" for e in received[only_b])
    assert dropped[only_b]["reason"] == "slow-consumer"
    assert not b_seqs or dropped[only_b]["resumeSince"] >= b_seqs[-1]

    # Resuming each from its resumeSince gives exactly the rest: nothing lost, nothing twice.
    with daemon.client() as again, daemon.client() as emitter:
        _, last = emit(emitter, 1, "dbg_b")
        for subscription, filter_ in ((everything, None), (only_b, {"objects": ["dbg_b"]})):
            since = dropped[subscription]["resumeSince"]
            params: dict[str, Any] = {"since": since}
            if filter_:
                params["filter"] = filter_
            result = again.call("events.wait", {**params, "limit": 1000, "timeout": 0})
            rest = result["events"]
            while result["next"] < last:
                result = again.call("events.wait", {**params, "since": result["next"], "limit": 1000, "timeout": 0})
                rest += result["events"]
            got = seqs(received[subscription]) + seqs(rest)
            if filter_ is None:
                assert got == list(range(1, last + 1)), f"{subscription}: resuming lost or repeated events"
            else:
                assert all(e["objectId"] == "dbg_b" for e in rest)
                assert len(got) == len(set(got)) == 20 * 10 + 1, f"{subscription}: resuming lost or repeated events"


def wait_for_refusals(client: Client, ids: list[int], count: int) -> tuple[list[dict], list[int]]:
    """Reads replies to `ids` until `count` of them are TooManyWaits errors; returns those
    errors and the ids still waiting (calls run concurrently: any of them may be refused)."""
    refused: list[dict] = []
    waiting = list(ids)
    while len(refused) < count:
        message = client.receive(READ_TIMEOUT)
        assert message is not None, "EOF"
        if isinstance(message, dict) and message.get("id") in waiting:
            assert "error" in message, f"a wait returned while it should wait: {message}"
            assert message["error"]["code"] == TOO_MANY_WAITS, message
            refused.append(message["error"])
            waiting.remove(message["id"])
    return refused, waiting


def test_wait_is_bounded_per_connection_and_per_user(start_stpd, tmp_path):
    """issue 11: events.wait calls waiting at once are bounded per connection and per uid, and
    a call past a bound is refused at once with TooManyWaits naming the bound (a batch of 7,000
    waits used to take 800 MB); a connection's waits end when it closes, freeing the uid's."""
    daemon = start_stpd(tmp_path, "--debug-methods", "--max-waits-per-connection", "3",
                        "--max-waits-per-uid", "5")
    with daemon.client() as first, daemon.client() as second, daemon.client() as emitter:
        _, latest = emit(emitter, 1)
        wait = {"since": latest, "timeout": 60}
        # Pipelined, one frame each: the refusals come back at once while three wait.
        refused, first_waiting = wait_for_refusals(first, [first.request("events.wait", wait) for _ in range(5)], 2)
        assert refused == [{"code": TOO_MANY_WAITS, "message": refused[0]["message"],
                            "data": {"scope": "connection", "limit": 3,
                                     "setting": "STPD_MAX_WAITS_PER_CONNECTION"}}] * 2, refused
        # The uid has 3 waiting: 2 more fit, on another connection, then its bound holds.
        refused, second_waiting = wait_for_refusals(
            second, [second.request("events.wait", wait) for _ in range(3)], 1)
        assert refused[0]["data"] == {"scope": "user", "limit": 5, "setting": "STPD_MAX_WAITS_PER_UID"}

        # A batch counts entry by entry: with the uid at its bound, every entry is refused at once.
        second.send([second.request_message("events.wait", wait) for _ in range(50)])
        replies = second.receive(READ_TIMEOUT)
        assert isinstance(replies, list) and len(replies) == 50, replies
        assert all(r.get("error", {}).get("code") == TOO_MANY_WAITS for r in replies), replies[:2]

        # An event releases every waiter with it.
        woken, _ = emit(emitter, 1, "dbg_wake")
        for client, waiting in ((first, first_waiting), (second, second_waiting)):
            for i in waiting:
                assert seqs(client.result(client.wait_reply(i))["events"]) == [woken]

    # A connection that closes with calls waiting frees the uid's slots at once (not after 60 s).
    with daemon.client() as doomed, daemon.client() as survivor:
        latest = survivor.call("daemon.status")["store"]["latestSeq"]
        wait = {"since": latest, "timeout": 60}
        wait_for_refusals(doomed, [doomed.request("events.wait", wait) for _ in range(4)], 1)  # 3 wait
        refused, _ = wait_for_refusals(survivor, [survivor.request("events.wait", wait) for _ in range(3)], 1)
        assert refused[0]["data"]["scope"] == "user", refused  # 3 + 2 waiting: the uid is full
        doomed.close()
        deadline = time.monotonic() + 10
        while True:
            reply = survivor.wait_reply(survivor.request("events.wait", {"since": latest, "timeout": 0}))
            if "result" in reply:
                break
            assert reply["error"]["code"] == TOO_MANY_WAITS, reply
            assert time.monotonic() < deadline, "the closed connection's waits still hold the uid's slots"
            time.sleep(0.05)


# -- events.wait ---------------------------------------------------------------------------------

def test_wait_returns_existing_events_at_once(daemon):
    with daemon.client() as client:
        emit(client, 5, "dbg_w")
        asked = time.monotonic()
        result = client.call("events.wait", {"since": 0, "timeout": 30})
        assert time.monotonic() - asked < 5, "events.wait waited although events were there"
        assert seqs(result["events"]) == [1, 2, 3, 4, 5] and result["next"] == 5
        assert all(e["type"] == "debug.test" and e["objectId"] == "dbg_w" for e in result["events"])
        assert all(set(e) == {"seq", "type", "time", "objectId", "object"} for e in result["events"])

        limited = client.call("events.wait", {"since": 1, "limit": 2})
        assert seqs(limited["events"]) == [2, 3] and limited["next"] == 3
        rest = client.call("events.wait", {"since": limited["next"], "limit": 100})
        assert seqs(rest["events"]) == [4, 5] and rest["next"] == 5


def test_wait_times_out_with_nothing_new(daemon):
    with daemon.client() as client:
        emit(client, 2)
        asked = time.monotonic()
        result = client.call("events.wait", {"since": 2, "timeout": 0.2})
        elapsed = time.monotonic() - asked
        assert result == {"events": [], "next": 2, "endedEarly": False}
        assert 0.15 <= elapsed < 5, f"events.wait with timeout 0.2 returned after {elapsed:.3f} s"


def test_wait_wakes_on_an_event_from_another_connection(daemon):
    with daemon.client() as waiter, daemon.client() as emitter:
        _, latest = emit(emitter, 3)
        outcome: dict[str, Any] = {}

        def wait() -> None:
            try:
                asked = time.monotonic()
                outcome["result"] = waiter.call("events.wait", {"since": latest, "timeout": 20})
                outcome["elapsed"] = time.monotonic() - asked
            except BaseException as error:
                outcome["error"] = error

        thread = threading.Thread(target=wait, daemon=True)
        thread.start()
        # Let the wait reach the daemon and find nothing: this is a condition to observe, so
        # give it a bounded moment and check it has not returned yet.
        thread.join(0.3)
        assert thread.is_alive(), f"events.wait returned with nothing to return: {outcome}"
        emitted = time.monotonic()
        first, _ = emit(emitter, 1, "dbg_wake")
        thread.join(READ_TIMEOUT)
        assert not thread.is_alive(), "events.wait did not return after the event"
        assert "error" not in outcome, outcome
        result = outcome["result"]
        assert seqs(result["events"]) == [first] and result["next"] == first
        assert result["events"][0]["objectId"] == "dbg_wake"
        assert time.monotonic() - emitted < 5, "events.wait slept through the event"


def test_wait_cursor_errors(daemon):
    with daemon.client() as client:
        emit(client, 3)
        error = rpc_error(client, "events.wait", {"since": 4, "timeout": 0})
        assert error.code == CURSOR_AHEAD and error.data == {"latestSeq": 3}, error


# -- retention -----------------------------------------------------------------------------------

def test_retention_by_count_applies_at_start(start_stpd, tmp_path):
    args = ("--debug-methods", "--event-max-count", "5")
    first = start_stpd(tmp_path, *args)
    with first.client() as client:
        assert emit(client, 12, "dbg_retained") == (1, 12)
    assert first.terminate() == 0

    second = start_stpd(tmp_path, *args)  # pruning runs at start
    with second.client() as client:
        error = rpc_error(client, "events.subscribe", {"since": 0})
        assert error.code == CURSOR_EXPIRED and error.data == {"oldestSeq": 8}, error
        error = rpc_error(client, "events.subscribe", {"since": 6})
        assert error.code == CURSOR_EXPIRED and error.data == {"oldestSeq": 8}, error
        error = rpc_error(client, "events.wait", {"since": 0, "timeout": 0})
        assert error.code == CURSOR_EXPIRED and error.data == {"oldestSeq": 8}, error

        store = client.call("daemon.status")["store"]
        assert store["oldestSeq"] == 8 and store["latestSeq"] == 12, store

        reply = subscribe(client, since=7)
        assert reply["latestSeq"] == 12
        assert seqs(events_through(client, reply["subscription"], 12)) == [8, 9, 10, 11, 12]

        error = rpc_error(client, "events.subscribe", {"since": 13})
        assert error.code == CURSOR_AHEAD and error.data == {"latestSeq": 12}, error
        # since == latest is valid (nothing to replay).
        assert subscribe(client, since=12)["latestSeq"] == 12


# -- file modes ----------------------------------------------------------------------------------

def start_with_umask(start_stpd, directory: Path, *args: str):
    """stpd inherits umask 022 from its parent, as from a typical login shell."""
    previous = os.umask(0o022)
    try:
        return start_stpd(directory, *args)
    finally:
        os.umask(previous)


def database_files(state_dir: Path) -> list[Path]:
    files = [state_dir / "stpd.sqlite"]
    files += [p for p in (state_dir / "stpd.sqlite-wal", state_dir / "stpd.sqlite-shm") if p.exists()]
    return files


def test_state_files_are_private_even_with_umask_022(start_stpd, tmp_path):
    daemon = start_with_umask(start_stpd, tmp_path, "--debug-methods")
    state_dir = Path(daemon.state_dir)
    with daemon.client() as client:
        emit(client, 20, payload={"secret": "x" * 1000})  # the WAL is written
        assert client.call("daemon.status")["store"]["path"] == str(state_dir / "stpd.sqlite")
    assert mode(state_dir) == 0o700, oct(mode(state_dir))
    files = database_files(state_dir)
    assert (state_dir / "stpd.sqlite-wal").exists(), os.listdir(state_dir)
    for path in files:
        assert mode(path) == 0o600, f"{path.name} is {oct(mode(path))}"
    # Nothing else in the state directory is readable by others either.
    for path in state_dir.iterdir():
        assert mode(path) & 0o077 == 0, f"{path.name} is {oct(mode(path))}"
    assert daemon.terminate() == 0


def test_existing_state_with_loose_modes_is_tightened(start_stpd, tmp_path):
    daemon = start_with_umask(start_stpd, tmp_path, "--debug-methods")
    with daemon.client() as client:
        emit(client, 3)
    assert daemon.terminate() == 0
    state_dir = Path(daemon.state_dir)
    os.chmod(state_dir, 0o755)
    for path in state_dir.iterdir():
        os.chmod(path, 0o644)

    daemon = start_with_umask(start_stpd, tmp_path, "--debug-methods")
    with daemon.client() as client:
        emit(client, 3)
        assert client.call("daemon.status")["store"]["latestSeq"] == 6
    assert mode(state_dir) == 0o700, oct(mode(state_dir))
    for path in database_files(state_dir):
        assert mode(path) == 0o600, f"{path.name} is {oct(mode(path))}"


# -- debug.emit is off by default ----------------------------------------------------------------

def test_debug_emit_is_disabled_without_the_flag(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path)
    with daemon.client() as client:
        error = rpc_error(client, "debug.emit", {"count": 1})
        assert error.code == DISABLED, error
        assert error.data == {"setting": "STPD_DEBUG_METHODS"}, error
        assert client.call("daemon.status")["store"]["latestSeq"] == 0
