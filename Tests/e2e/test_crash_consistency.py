"""Crash consistency: scripted flows with `kill -9` at random moments, a restart after each, and
the invariants of the record core checked against the database and the daemon after every one:

- the event log's `seq` is gap-free and increasing;
- every change whose call got a success reply is there;
- `PRAGMA integrity_check` is ok;
- each object's stored state is what its last event carried (its `get` equals the event's
  object), and its version equals its number of events (no change without its event, no event
  without its change).

Seeded (STPD_CRASH_SEED, printed on failure) so a failure reproduces; bounded by count
(STPD_CRASH_FLOWS flows, a kill every few flows) with a time budget as a safety net.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import threading
import time
from pathlib import Path

from flows import bank_page, create_source, sofort, stpd_for

SEED = int(os.environ.get("STPD_CRASH_SEED", "20261123"))
FLOWS = int(os.environ.get("STPD_CRASH_FLOWS", "220"))
KILL_EVERY = (6, 14)  # a kill lands within one flow of every 6 to 14
BUDGET_SECONDS = float(os.environ.get("STPD_CRASH_BUDGET", "600"))
# The getter of each event type prefix's object, and the member naming the id.
GETTERS = {"customer": ("customer.get", "session"), "source": ("source.get", "id"),
           "redirect": ("redirect.get", "session")}


class Acknowledged:
    """What the daemon said it did: per object, the states a success reply vouched for."""

    def __init__(self) -> None:
        self.expected: dict[str, set[str]] = {}  # object id -> statuses it may be in now (or later)
        self.unchecked: set[str] = set()  # vouched for since the last check

    def vouch(self, object_id: str, *statuses: str) -> None:
        self.expected[object_id] = set(statuses)
        self.unchecked.add(object_id)


def run_flow(client, server, rng: random.Random, ack: Acknowledged, number: int) -> None:
    kind = rng.choice(["customer", "redirect", "redirect", "debug"])
    if kind == "customer":
        session = client.call("customer.open", {"adapter": {"kind": "app"}, "prefetch": False})
        ack.vouch(session["id"], "open", "closed")
        if rng.random() < 0.6:
            client.call("customer.close", {"session": session["id"]})
            ack.vouch(session["id"], "closed")
    elif kind == "redirect":
        return_url = f"myshop://done?order={number}"
        source, _ = create_source(client, sofort(return_url))
        ack.vouch(source["id"], "any")
        session = client.call("redirect.create", {"source": {"id": source["id"]}, "followUpTimeout": 2})
        ack.vouch(session["id"], "notStarted", "inProgress", "completed", "cancelled")
        started = client.call("redirect.start", {"session": session["id"], "mode": "browser"})
        ack.vouch(session["id"], "inProgress", "completed", "cancelled")
        roll = rng.random()
        if roll < 0.5:
            location = bank_page(started["openURL"], "authorize")
            handled = client.call("handle-url", {"url": location})
            assert handled["handled"] and handled["session"] == session["id"], handled
            ack.vouch(session["id"], "completed")
        elif roll < 0.7:
            client.call("redirect.cancel", {"session": session["id"]})
            ack.vouch(session["id"], "cancelled")
    else:
        emitted = client.call("debug.emit", {"count": rng.randint(1, 5)})
        assert emitted["lastSeq"] >= emitted["firstSeq"]


def check_database(state_dir: Path) -> None:
    database = sqlite3.connect(f"file:{state_dir / 'stpd.sqlite'}?mode=ro", uri=True)
    try:
        assert database.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        seqs = [row[0] for row in database.execute("SELECT seq FROM event ORDER BY seq")]
        assert seqs == list(range(1, len(seqs) + 1)), "seq has a gap or does not start at 1"
        # Debug objects are written whatever their version (one writer), so they are left out.
        mismatched = database.execute(
            """SELECT o.id, o.version, (SELECT count(*) FROM event e WHERE e.object_id = o.id)
               FROM object o WHERE o.kind != 'debug'""").fetchall()
        mismatched = [row for row in mismatched if row[1] != row[2]]
        assert not mismatched, f"version != number of events: {mismatched[:5]}"
    finally:
        database.close()


def last_events(client, objects: list[str] | None = None, since: int = 0) -> dict[str, dict]:
    """The last event of each object (of OBJECTS, or of all) after SINCE, read once through the log."""
    last = {}
    while True:
        params = {"since": since, "limit": 1000, "timeout": 0}
        if objects is not None:
            params["filter"] = {"objects": objects}
        page = client.call("events.wait", params)
        if not page["events"]:
            return last
        for event in page["events"]:
            last[event["objectId"]] = event
        since = page["next"]


def check_daemon(client, ack: Acknowledged, since: int | None = None) -> int:
    """Every acknowledged object's stored state is its last event's object, in a status vouched for.
    With SINCE (after each kill), only the objects with an event after SINCE or vouched for since
    the last check: each other one was checked then, has had no event since, and check_database
    has just found every object's version equal to its number of events (no change without its
    event). The last check of the run looks at every object. Returns the last seq read: the next
    check's SINCE. (Every object each time read the whole log and got every object after each
    kill: over half the test's CPU.)"""
    last = last_events(client, since=since or 0)
    latest = max((event["seq"] for event in last.values()), default=since or 0)
    objects = set(ack.expected) if since is None else (set(last) | ack.unchecked) & set(ack.expected)
    missing = [object_id for object_id in objects if object_id not in last]
    if missing:  # vouched for, with no event after SINCE: their last one is earlier
        last.update(last_events(client, missing))
    ack.unchecked.clear()
    for object_id in sorted(objects):
        statuses = ack.expected[object_id]
        # A follow-up still running may commit between the two reads: look again until they agree.
        for _ in range(20):
            event = last.get(object_id)
            assert event is not None, f"{object_id} was acknowledged but has no event"
            method, member = GETTERS[event["type"].split(".")[0]]
            current = client.call(method, {member: object_id})
            if current == event["object"]:
                break
            time.sleep(0.1)
            last.update(last_events(client, [object_id]))
        else:
            raise AssertionError(f"{object_id}: its stored state never equals its last event")
        if "any" not in statuses:
            assert current["status"] in statuses, (object_id, current["status"], statuses)
    return latest


def test_kill_9_at_random_moments_loses_nothing(start_stpd, stripe_test_server, tmp_path):
    rng = random.Random(SEED)
    # Kills are drawn from their own stream: how far a cut-short flow consumed `rng` must not
    # change when and how often the daemon is killed.
    kill_rng = random.Random(SEED + 1)
    ack = Acknowledged()
    directory = tmp_path / "stpd"
    started = time.monotonic()
    kills = 0
    checked = 0  # the last seq check_daemon read
    next_kill = kill_rng.randint(*KILL_EVERY)
    daemon = stpd_for(start_stpd, directory, stripe_test_server, "--debug-methods")
    client = daemon.client()
    try:
        for number in range(FLOWS):
            assert time.monotonic() - started < BUDGET_SECONDS, \
                f"over the time budget after {number} flows and {kills} kills (seed {SEED})"
            timer = None
            if number == next_kill:
                timer = threading.Timer(kill_rng.uniform(0.0, 0.05), os.kill, (daemon.pid, signal.SIGKILL))
                timer.start()
            try:
                run_flow(client, stripe_test_server, rng, ack, number)
            except Exception as error:  # noqa: BLE001 - the kill may cut any call short
                if timer is None:
                    raise AssertionError(f"flow {number} failed without a kill (seed {SEED}): {error}") from error
            if timer is None:
                continue
            timer.join()
            daemon.proc.wait(30)
            client.close()
            kills += 1
            next_kill = number + kill_rng.randint(*KILL_EVERY)
            check_database(daemon.state_dir)
            daemon = stpd_for(start_stpd, directory, stripe_test_server, "--debug-methods")
            client = daemon.client()
            checked = check_daemon(client, ack, since=checked)
        check_daemon(client, ack)
        check_database(daemon.state_dir)
    except AssertionError as error:
        raise AssertionError(f"{error} (STPD_CRASH_SEED={SEED})") from error
    finally:
        client.close()
    assert kills >= 20, f"only {kills} kills in {FLOWS} flows"
    print(f"crash consistency: {FLOWS} flows, {kills} kills, {time.monotonic() - started:.1f} s, seed {SEED}")
