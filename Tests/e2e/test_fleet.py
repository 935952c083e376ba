"""Fleet mode: two stpd instances on one PostgreSQL database (docs/fleet.md).

Runs where scripts/test-postgres started a throwaway cluster (STPD_TEST_DATABASE_URL); each test
gets a database of its own on it, dropped afterwards. Skipped without a cluster.

- handle-url on B completes a redirect session started on A;
- a subscriber on B sees A's events (and B's) in seq order, gap-free;
- kill -9 of A, which holds a running poll (a Source's, an intent's): B takes it over and finishes it;
- an intent poll stopped on B stops on A, which runs it;
- debug.emit on A and B at once on one object: every change is committed, none lost.

Every wait is on a reply or an event; nothing sleeps.
"""

from __future__ import annotations

import re
import subprocess
import threading

from conftest import clean_environment
from fleet import (credentials, database_url, instance, needs_cluster, pair, psql,  # noqa: F401 (a fixture)
                   wait_until)
from flows import Events, bank_page, create_source, drive_source, sofort

pytestmark = needs_cluster

RETURN_URL = "myapp://stripe-redirect/fleet?order=1"


def test_status_names_the_instance_and_the_database(start_stpd, tmp_path, stripe_test_server, database_url):
    a = instance(start_stpd, tmp_path / "a", stripe_test_server, database_url, "host-a")
    fleet = a.client().call("daemon.status")["fleet"]
    assert fleet["instance"] == "host-a"
    assert fleet["database"].startswith("postgresql://") and "/fleet_" in fleet["database"]
    assert fleet["leases"] == [] or fleet["leases"] == ["retention"], fleet
    assert fleet["databaseUp"] is True and fleet["reconnects"] == 0 and fleet["followerLag"] == 0
    assert fleet["instances"] == {"host-a": len(fleet["leases"])}


def test_handle_url_on_b_completes_a_session_started_on_a(start_stpd, tmp_path, stripe_test_server, database_url):
    server = stripe_test_server
    a, b = pair(start_stpd, tmp_path, server, database_url)
    on_b = Events(b.client(), ["redirect.*"])
    client_a = a.client()
    source, _ = create_source(client_a, sofort(RETURN_URL))
    session = client_a.call("redirect.create", {"source": {"id": source["id"]}, "followUpTimeout": 5})
    started = client_a.call("redirect.start", {"session": session["id"]})
    location = bank_page(started["openURL"], "authorize")

    assert b.client().call("handle-url", {"url": location}) == {"handled": True, "session": session["id"]}
    assert on_b.wait("redirect.completed", session["id"])["object"]["completion"]["trigger"] == "url"
    outcome = on_b.wait("redirect.outcome", session["id"])
    # Seen on A too, whichever instance followed it up.
    assert client_a.call("redirect.get", {"session": session["id"]})["status"] == outcome["object"]["status"]
    assert on_b.types_for(session["id"]) == ["redirect.created", "redirect.started", "redirect.completed",
                                             "redirect.outcome"]


def test_handle_url_on_b_and_c_at_once_completes_the_session_once(start_stpd, tmp_path, stripe_test_server,
                                                                   database_url):
    server = stripe_test_server
    a, b, c = (instance(start_stpd, tmp_path / name, server, database_url, name) for name in "abc")
    on_a = Events(a.client(), ["redirect.*"])
    source, _ = create_source(a.client(), sofort(RETURN_URL))
    session = a.client().call("redirect.create", {"source": {"id": source["id"]}, "followUpTimeout": 5})
    started = a.client().call("redirect.start", {"session": session["id"]})
    location = bank_page(started["openURL"], "authorize")
    replies: list[dict] = []
    lock = threading.Lock()

    def deliver(daemon) -> None:
        reply = daemon.client(checker=None).call("handle-url", {"url": location})
        with lock:
            replies.append(reply)

    threads = [threading.Thread(target=deliver, args=(d,)) for d in (b, c)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(r["handled"] for r in replies) == [False, True], replies
    on_a.wait("redirect.outcome", session["id"])
    assert on_a.types_for(session["id"]) == ["redirect.created", "redirect.started", "redirect.completed",
                                             "redirect.outcome"]


def test_a_subscriber_on_b_sees_every_event_in_seq_order(start_stpd, tmp_path, stripe_test_server, database_url):
    a = instance(start_stpd, tmp_path / "a", stripe_test_server, database_url, "a", "--debug-methods")
    b = instance(start_stpd, tmp_path / "b", stripe_test_server, database_url, "b", "--debug-methods")
    on_b = Events(b.client(), ["debug.*"])
    emitted = []
    for round in range(10):
        for daemon in (a, b, a):
            reply = daemon.client().call("debug.emit", {"count": 3, "payload": {"round": round}})
            emitted += range(reply["firstSeq"], reply["lastSeq"] + 1)
    for _ in emitted:
        on_b.next()
    # Every seq, from both instances, once and in order: gap-free since nothing else was committed.
    assert [e["seq"] for e in on_b.seen] == sorted(emitted) == list(range(emitted[0], emitted[0] + 90))
    # A late subscriber on A replays the same log from the table.
    replay = Events(a.client(), ["debug.*"], since=emitted[0] - 1)
    for _ in emitted:
        replay.next()
    assert [e["seq"] for e in replay.seen] == [e["seq"] for e in on_b.seen]

    # B restarts; its subscriber resumes after the last seq it saw, and A's events made meanwhile arrive.
    last = on_b.seen[-1]["seq"]
    assert b.terminate() == 0
    later = a.client().call("debug.emit", {"count": 4})
    b = instance(start_stpd, tmp_path / "b", stripe_test_server, database_url, "b", "--debug-methods")
    resumed = Events(b.client(), ["debug.*"], since=last)
    for _ in range(4):
        resumed.next()
    assert [e["seq"] for e in resumed.seen] == list(range(later["firstSeq"], later["lastSeq"] + 1)) \
        == list(range(last + 1, last + 5))


def test_kill_9_of_the_poll_holder_and_the_other_instance_finishes_the_poll(
        start_stpd, tmp_path, stripe_test_server, database_url):
    server = stripe_test_server
    a, b = pair(start_stpd, tmp_path, server, database_url)
    on_b = Events(b.client(), ["source.*"])
    source, _ = create_source(a.client(), sofort(RETURN_URL))
    sid = source["id"]
    a.client().call("source.poll", {"id": sid, "timeout": 120})
    on_b.wait("source.pollStarted", sid)
    polls = [name for name in a.client().call("daemon.status")["fleet"]["leases"] if name.startswith("poll:")]
    assert len(polls) == 1, polls
    assert not any(name.startswith("poll:") for name in b.client().call("daemon.status")["fleet"]["leases"])

    a.kill()
    drive_source(server, sid, "authorize")
    finished = on_b.wait("source.pollFinished", sid, timeout=60)
    assert finished["object"]["poll"]["sourceStatus"] == "chargeable", finished
    assert len(on_b.read_for(sid, "source.pollFinished")) == 1
    assert b.client().call("source.get", {"id": sid})["poll"]["status"] == "finished"


def test_concurrent_changes_on_two_instances_are_all_committed(start_stpd, tmp_path, stripe_test_server,
                                                               database_url):
    a = instance(start_stpd, tmp_path / "a", stripe_test_server, database_url, "a", "--debug-methods")
    b = instance(start_stpd, tmp_path / "b", stripe_test_server, database_url, "b", "--debug-methods")
    seqs: list[int] = []
    lock = threading.Lock()

    def hammer(daemon) -> None:
        client = daemon.client()
        for n in range(50):
            reply = client.call("debug.emit", {"objectId": "dbg_shared", "count": 2})
            with lock:
                seqs.extend(range(reply["firstSeq"], reply["lastSeq"] + 1))

    threads = [threading.Thread(target=hammer, args=(d,)) for d in (a, b, a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    # 4 writers x 50 calls x 2 changes: every one committed with a seq of its own, none lost.
    assert sorted(seqs) == list(range(min(seqs), min(seqs) + 400))
    replay = Events(b.client(), ["debug.*"], since=0)
    for _ in range(400):
        replay.next()
    assert [e["seq"] for e in replay.seen] == sorted(seqs)


def confirmed_paynow_on_a(server, a) -> tuple[dict, dict]:
    """A PayNow PaymentIntent confirmed on A, its QR code awaited by a poll A runs: (intent, answer)."""
    intent = server.api("POST", "/v1/payment_intents",
                        {"amount": 1000, "currency": "sgd", "payment_method_types": ["paynow"]})
    answer = a.client().call("paymentIntent.confirm", {"clientSecret": intent["client_secret"],
                                                       "paymentMethod": {"paynow": {}}})
    assert answer["result"] == "pending"
    lease = f"intentPoll:{answer['poll']['id']}"
    wait_until(lambda: lease in leases_of(a), 30, "A polling the intent")
    return intent, answer


def leases_of(daemon) -> list[str]:
    return daemon.client().call("daemon.status")["fleet"]["leases"]


def test_kill_9_of_an_intent_poll_holder_and_the_other_instance_finishes_it(
        start_stpd, tmp_path, stripe_test_server, database_url):
    """An intent poll (a QR code awaiting the customer) is leased like a Source's."""
    server = stripe_test_server
    a, b = pair(start_stpd, tmp_path, server, database_url)
    on_b = Events(b.client(), ["paymentIntent.*"])
    intent, answer = confirmed_paynow_on_a(server, a)
    assert not any(name.startswith("intentPoll:") for name in leases_of(b))

    a.kill()
    server.control(f"payment_intents/{intent['id']}/succeed")
    finished = on_b.wait("paymentIntent.finished", intent["id"], timeout=60)["object"]
    assert finished["poll"]["id"] == answer["poll"]["id"] and finished["poll"]["result"] == "succeeded"
    assert len(on_b.read_for(intent["id"], "paymentIntent.finished")) == 1


def test_an_intent_poll_stopped_on_b_stops_where_it_runs(start_stpd, tmp_path, stripe_test_server, database_url):
    """stopPolling on B revokes the lease: A cancels its poll at its next renewal (a third of a lease)."""
    server = stripe_test_server
    a, b = pair(start_stpd, tmp_path, server, database_url)
    intent, _ = confirmed_paynow_on_a(server, a)
    stopped = b.client().call("paymentIntent.stopPolling", {"id": intent["id"]})
    assert stopped["poll"]["status"] == "stopped"
    wait_until(lambda: not any(name.startswith("intentPoll:") for name in leases_of(a)), 30, "A stopping its poll")
    wait_until(lambda: re.search(r"^stpd_polls_running 0(\.0)?$", a.client().call("daemon.metrics")["text"], re.M),
               30, "A's poller ending")
    assert a.client().call("paymentIntent.get", {"id": intent["id"]})["poll"]["status"] == "stopped"


def test_state_key_rotation_reseals_while_the_fleet_serves(start_stpd, tmp_path, stripe_test_server, stpd_bin,
                                                            database_url):
    """docs/fleet.md's rotation: instances on the old key, then on the new one with the old as
    state-key.previous, `stpd --rotate-state-key`, then the new key alone reads everything."""
    old, new = "11" * 32, "22" * 32
    server = stripe_test_server
    a = instance(start_stpd, tmp_path / "a", server, database_url, "a", env={"CREDENTIALS_DIRECTORY": str(
        credentials(tmp_path / "old", old))})
    source, _ = create_source(a.client(), sofort(RETURN_URL))
    assert a.terminate() == 0
    both = credentials(tmp_path / "both", new)
    (both / "state-key.previous").write_text(old)
    b = instance(start_stpd, tmp_path / "b", server, database_url, "b", env={"CREDENTIALS_DIRECTORY": str(both)})
    assert b.client().call("source.get", {"id": source["id"]})["id"] == source["id"]
    # The rows are sealed with a key id of their own, never in the clear.
    assert "sealed:v1:" in psql(database_url, f"SELECT state FROM object WHERE id = '{source['id']}'")
    config = tmp_path / "rotate.conf"
    config.touch()
    rotated = subprocess.run(
        [str(stpd_bin), "--rotate-state-key", "--state-dir", str(tmp_path / "rotate"), "--config", str(config)],
        env={**clean_environment(), "STPD_DATABASE_URL": database_url, "CREDENTIALS_DIRECTORY": str(both)},
        capture_output=True, text=True, timeout=120)
    assert rotated.returncode == 0, rotated.stderr
    assert "re-sealed 1 objects" in rotated.stdout and "written meanwhile" not in rotated.stdout, rotated.stdout
    # Issue 32.5: a rotation never makes a key of its own.
    assert not (tmp_path / "rotate" / "state-key").exists()
    assert b.terminate() == 0
    c = instance(start_stpd, tmp_path / "c", server, database_url, "c", env={"CREDENTIALS_DIRECTORY": str(
        credentials(tmp_path / "new", new))})
    assert c.client().call("source.get", {"id": source["id"]})["id"] == source["id"]
    # The events the old key sealed read back too.
    replayed = c.client().call("events.wait", {"since": 0, "timeout": 0})["events"]
    assert [e["type"] for e in replayed if e["objectId"] == source["id"]] == ["source.created"]
    # And a subscription from 0 replays them (issue 32.5: after a recovery it once never delivered).
    events = Events(c.client(), ["source.*"], since=0)
    assert events.wait("source.created", source["id"])["objectId"] == source["id"]


def statements(url: str) -> list[tuple[int, str]]:
    """The statements stpd sent to the database URL names since the last reset, as PostgreSQL counts
    them (pg_stat_statements, which scripts/test-postgres preloads): (calls, text), most first."""
    rows = psql(url, "SELECT calls || '|' || regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements "
                     "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                     "AND query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC")
    return [(int(calls), text) for calls, text in (line.split("|", 1) for line in rows.splitlines() if line)]


def test_a_created_session_sends_at_most_12_statements(start_stpd, tmp_path, stripe_test_server, database_url):
    """docs/fleet.md, "One round trip per commit": a started session (source.create, redirect.create,
    redirect.start) costs the database at most 12 statements, each commit one (issue 31: 37 before)."""
    psql(database_url, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    # Long leases: their renewals and the adoption rounds stay out of the count.
    a = instance(start_stpd, tmp_path / "a", stripe_test_server, database_url, "a", env={"STPD_LEASE_SECONDS": "60"})
    client = a.client()

    def started_session(n: int) -> None:
        source, _ = create_source(client, sofort(f"myapp://stripe-redirect/fleet?order={n}"))
        session = client.call("redirect.create", {"source": {"id": source["id"]}})["id"]
        client.call("redirect.start", {"session": session})

    started_session(0)  # the pool's connections, each asked once for its backend
    psql(database_url, "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database "
                       "WHERE datname = current_database()), 0)")
    sessions = 20
    for n in range(1, sessions + 1):
        started_session(n)
    sent = statements(database_url)
    total = sum(calls for calls, _ in sent)
    applies = sum(calls for calls, text in sent if text.startswith("CALL stpd_apply("))
    breakdown = "\n".join(f"{calls:5} {text[:150]}" for calls, text in sent)
    assert applies == 3 * sessions, breakdown
    assert total <= 12 * sessions, f"{total / sessions:.1f} statements per session:\n{breakdown}"
