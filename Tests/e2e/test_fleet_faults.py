"""The fleet under faults (issue 20; docs/fleet.md, "Faults"), against a PostgreSQL cluster of
this module's own (scripts/test-postgres --hold), which these tests stop and start (`pg_ctl -m
immediate`: a crash as the server sees it) and whose backends they terminate: the run's shared
cluster stays up for the tests running beside these (pytest-xdist).

- a database restart under load from two instances: every call answered within the bound,
  nothing acknowledged lost, seq gap-free, both instances serving again without a restart;
- a database down when stpd starts: it answers 1010 meanwhile and is READY=1 once it can serve;
- stpd's backends terminated mid-transaction: nothing acknowledged lost, seq gap-free;
- SIGTERM while calls wait on a dead database: the instance stops at once, cleanly;
- kill -9 of the instance doing each kind of leased work: another takes it over, once;
- appRequest.answer on another instance than the asker's; the instance names.

Every loop is bounded by count and by time; a fault lasts 3 s.
"""

from __future__ import annotations

import time

import pytest
import stpd

from contexts import open_session, saved_card
from fleet import (LEASE_SECONDS, Load, database_url,  # noqa: F401 (a fixture)
                   instance, needs_cluster, pair, private_cluster, psql, seen_or_wait, wait_until)
from flows import Events, bank_page, create_source, rpc_error, sofort
from stripe_servers import http_request

pytestmark = needs_cluster

STORE_UNAVAILABLE = stpd.errors.StoreUnavailable.code
INVALID_STATE = stpd.errors.InvalidState.code
RETURN_URL = "myapp://stripe-redirect/fleet?order=1"
# docs/fleet.md: a call waits at most 5 s on the database. The margin only tells a hang from a
# loaded machine; it is no measurement (bench/run.py measures).
BOUND = 5.0
HANG = BOUND + 10.0
TAKEOVER = 8 * LEASE_SECONDS + 10


@pytest.fixture(scope="module")
def postgres_cluster(tmp_path_factory):
    """This module's own cluster (it overrides conftest's shared one): its tests stop it."""
    yield from private_cluster(tmp_path_factory.mktemp("postgres"))


def log_of(client, since: int = 0) -> list[dict]:
    """Every event after SINCE, in seq order, read back from the shared table."""
    events: list[dict] = []
    while True:
        page = client.call("events.wait", {"since": since, "timeout": 0, "limit": 1000})
        events += page["events"]
        if not page["events"]:
            return events
        since = page["next"]


def assert_gap_free(events: list[dict]) -> None:
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), f"seq has gaps or repeats: {seqs[:20]}..."


def test_a_database_restart_under_load(start_stpd, tmp_path, stripe_test_server, database_url, postgres_cluster):
    server = stripe_test_server
    a, b = pair(start_stpd, tmp_path, server, database_url)
    postgres = postgres_cluster

    def create(client, n):
        return client.call("source.create", {"params": sofort(RETURN_URL, amount=100 + n % 900)})["source"]["id"]

    # Calls until stopped: with one round trip per commit, 400 a worker could all be answered
    # before a loaded machine had stopped PostgreSQL, and the restart then failed no call.
    load = Load([a, b], create, workers=8)
    wait_until(lambda: load.answered(0) >= 24, 120, "calls before the restart")
    postgres.stop()
    time.sleep(3)
    postgres.start()
    back = time.monotonic()
    # Both instances serve again by themselves (workers 0, 2, ... call a; 1, 3, ... call b).
    wait_until(lambda: load.succeeded_after(back, daemon=a) and load.succeeded_after(back, daemon=b),
               60, "both instances serving again")
    calls = load.stop()

    # Every call was answered, within the bound (a hang would leave its thread behind: stop() fails).
    slowest = max(c.seconds for c in calls)
    assert slowest < HANG, f"a call took {slowest:.1f} s"
    errors = [c.error for c in calls if c.error is not None]
    assert errors, "the restart failed no call: it did not happen under load"
    assert {e.code for e in errors} == {STORE_UNAVAILABLE}, {(e.code, str(e)) for e in errors}
    # Nothing acknowledged was lost: every Source a call was told of is there, on either instance,
    # and the shared log holds its creation once; seq has no gap.
    acknowledged = {c.result for c in calls if c.error is None}
    events = log_of(b.client())
    assert_gap_free(events)
    created = [e["objectId"] for e in events if e["type"] == "source.created"]
    assert len(created) == len(set(created))
    assert acknowledged <= set(created), acknowledged - set(created)
    for sid in list(acknowledged)[:20]:
        assert a.client().call("source.get", {"id": sid})["id"] == sid
    for daemon in (a, b):
        fleet = daemon.client().call("daemon.status")["fleet"]
        assert fleet["databaseUp"] is True and fleet["reconnects"] >= 1 and fleet["lastDatabaseError"], fleet
        metrics = daemon.client().call("daemon.metrics")["text"]
        assert "stpd_database_up 1" in metrics and "stpd_database_reconnects" in metrics
    assert "the database is unreachable" in a.log() and "the database is reachable again" in a.log()


def test_a_database_down_at_start_answers_1010_until_it_can_serve(start_stpd, tmp_path, stripe_test_server,
                                                                   database_url, postgres_cluster):
    """While it waits for the database the instance serves: whatever needs the database answers
    1010 at once, daemon.status says the database is down, systemd hears why (STATUS=) and has its
    start timeout extended; READY=1 comes once the database answered and the work resumed."""
    paynow = stripe_test_server.api("POST", "/v1/payment_intents",
                                    {"amount": 1000, "currency": "sgd", "payment_method_types": ["paynow"]})
    postgres = postgres_cluster
    postgres.stop()
    try:
        a = instance(start_stpd, tmp_path / "a", stripe_test_server, database_url, "a", wait_ready=False)
        a.wait_notify("EXTEND_TIMEOUT_USEC=10000000")
        client = a.client()
        assert client.call("daemon.ping")["version"]
        fleet = client.call("daemon.status")["fleet"]
        assert fleet["databaseUp"] is False and fleet["instance"] == "a", fleet
        started = time.monotonic()
        assert rpc_error(client, "source.list", {}).code == STORE_UNAVAILABLE
        assert rpc_error(client, "events.subscribe", {}).code == STORE_UNAVAILABLE
        # An intent's poll is recorded before the call answers: Stripe confirms it, the poll answers 1010.
        assert rpc_error(client, "paymentIntent.confirm", {"clientSecret": paynow["client_secret"],
                                                           "paymentMethod": {"paynow": {}}}).code == STORE_UNAVAILABLE
        assert time.monotonic() - started < HANG
        assert "READY=1" not in "\n".join(a.notify_messages())
        assert any("STATUS=Waiting for the database" in m for m in a.notify_messages())
    finally:
        postgres.start()
    a.wait_notify("READY=1")
    assert a.client().call("source.list", {})["sources"] == []
    create_source(a.client(), sofort(RETURN_URL))
    polled = a.client().call("paymentIntent.handleNextAction", {"clientSecret": paynow["client_secret"]})
    assert polled["result"] == "pending" and polled["poll"]["status"] == "polling", polled
    assert a.client().call("daemon.status")["fleet"]["databaseUp"] is True


def test_backends_terminated_mid_transaction_lose_nothing(start_stpd, tmp_path, stripe_test_server, database_url,
                                                         postgres_cluster):
    a = instance(start_stpd, tmp_path / "a", stripe_test_server, database_url, "a", "--debug-methods")
    database = database_url.rsplit("/", 1)[1].split("?")[0]

    def emit(client, n):
        reply = client.call("debug.emit", {"count": 3, "payload": {"n": n}})
        return list(range(reply["firstSeq"], reply["lastSeq"] + 1))

    load = Load([a], emit, workers=6, count=2000)
    for _ in range(15):
        wait_until(lambda: load.answered(0) > 0, 60, "calls")
        psql(postgres_cluster.url, f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
             f"WHERE datname = '{database}' AND pid <> pg_backend_pid()")
        time.sleep(0.2)
    terminated = time.monotonic()
    wait_until(lambda: load.succeeded_after(terminated), 60, "serving again")
    calls = load.stop()
    assert {c.error.code for c in calls if c.error} <= {STORE_UNAVAILABLE}
    events = log_of(a.client())
    assert_gap_free(events)
    # Every acknowledged commit is in the log, whole (its three events).
    committed = {e["seq"] for e in events}
    for call in calls:
        if call.error is None:
            assert set(call.result) <= committed, call.result


def test_sigterm_with_calls_waiting_on_a_dead_database_stops_at_once(start_stpd, tmp_path, stripe_test_server,
                                                                      database_url, postgres_cluster):
    a = instance(start_stpd, tmp_path / "a", stripe_test_server, database_url, "a")
    postgres = postgres_cluster
    load = Load([a], lambda client, n: client.call("source.list", {}), workers=4, count=10_000)
    wait_until(lambda: load.answered(0) > 4, 60, "calls")
    postgres.stop()
    try:
        stopping = time.monotonic()
        assert a.terminate(timeout=HANG) == 0, a.log()
        assert time.monotonic() - stopping < HANG
        load.stopping.set()
    finally:
        postgres.start()
    assert "Fatal error" not in a.log() and "Precondition failed" not in a.log()


# -- kill -9 in the middle of each kind of leased work ----------------------------------------------

def status_leases(daemon) -> list[str]:
    return daemon.client().call("daemon.status")["fleet"]["leases"]


def test_kill_9_mid_redirect_follow_up(start_stpd, tmp_path, stripe_test_server, database_url):
    """A's follow-up of a completed PaymentIntent session (an intent poll, leased itself) waits on
    Stripe when A dies: B takes the poll over (once its lease expired) and the session gets one
    outcome."""
    server = stripe_test_server
    a, b = pair(start_stpd, tmp_path, server, database_url)
    on_b = Events(b.client(), ["redirect.*"])
    intent = server.api("POST", "/v1/payment_intents",
                        {"amount": 2500, "currency": "eur", "payment_method_types": ["ideal"]})
    confirmed = a.client().call("paymentIntent.confirm", {
        "clientSecret": intent["client_secret"], "paymentMethod": {"ideal": {"bank": "ing"}}, "returnURL": RETURN_URL})
    session = confirmed["redirect"]
    started = a.client().call("redirect.start", {"session": session["id"], "mode": "inApp"})
    location = bank_page(started["openURL"], "succeed")
    server.add_fault(method="GET", path=f"/v1/payment_intents/{intent['id']}", delayMs=30_000, times=1)
    assert a.client().call("handle-url", {"url": location})["handled"] is True
    # The delayed read is A's poll's: B runs nothing until A dies.
    wait_until(lambda: not http_request("GET", f"{server.base_url}/_test/faults").json()["data"], 30,
               "A's follow-up waiting on Stripe")
    assert any(name.startswith("intentPoll:") for name in status_leases(a))
    a.kill()
    outcome = seen_or_wait(on_b, "redirect.outcome", session["id"], timeout=TAKEOVER)
    assert outcome["object"]["outcome"]["result"] == "succeeded", outcome
    assert on_b.types_for(session["id"]).count("redirect.outcome") == 1


def test_kill_9_mid_loading_and_app_request(start_stpd, tmp_path, stripe_test_server, database_url):
    """A loads a context through an app-answered customer session and waits on the app when it dies:
    its request is abandoned, and B loads the context again (asking the app itself), once."""
    server = stripe_test_server
    a, b = pair(start_stpd, tmp_path, server, database_url)
    app = Events(b.client(), ["appRequest.*", "paymentContext.*"])
    client_a = a.client()
    session = client_a.call("customer.open", {"adapter": {"kind": "app", "timeout": 60}, "prefetch": False})["id"]
    context = client_a.call("paymentContext.create", {"session": session, "amount": 1099})["id"]
    first = seen_or_wait(app, "appRequest.pending", where=lambda e: e["object"]["operation"] == "retrieveCustomer")
    a.kill()
    abandoned = seen_or_wait(app, "appRequest.abandoned", first["objectId"], timeout=TAKEOVER)
    assert abandoned["object"]["state"] == "abandoned"
    error = rpc_error(b.client(), "appRequest.answer", {"request": first["objectId"], "result": APP_CUSTOMER})
    assert error.code == INVALID_STATE and error.data["state"] == "abandoned" and "gone" in str(error), error
    # B loads it: the app answers B's own requests, on B.
    again = seen_or_wait(app, "appRequest.pending", where=lambda e: e["object"]["operation"] == "retrieveCustomer"
                     and e["objectId"] != first["objectId"], timeout=TAKEOVER)
    b.client().call("appRequest.answer", {"request": again["objectId"], "result": APP_CUSTOMER})
    methods = seen_or_wait(app, "appRequest.pending", where=lambda e: e["object"]["operation"] == "listPaymentMethods")
    b.client().call("appRequest.answer", {"request": methods["objectId"],
                                          "result": {"object": "list", "data": [], "has_more": False}})
    loaded = seen_or_wait(app, "paymentContext.didChange", context, where=lambda e: not e["object"]["loading"])
    assert loaded["object"].get("loadError") is None, loaded
    assert [e for e in app.read_for(context, "paymentContext.didChange") if not e["object"]["loading"]] == [loaded]


APP_CUSTOMER = {"id": "cus_fleet0001", "object": "customer", "email": "app@example.com"}


def test_an_answer_on_another_instance_reaches_the_asker(start_stpd, tmp_path, stripe_test_server, database_url):
    server = stripe_test_server
    a, b = pair(start_stpd, tmp_path, server, database_url)
    on_b = Events(b.client(), ["appRequest.*"])
    client_a = a.client()
    session = client_a.call("customer.open", {"adapter": {"kind": "app", "timeout": 30}, "prefetch": False})["id"]
    call = client_a.request("customer.retrieve", {"session": session})
    pending = seen_or_wait(on_b, "appRequest.pending")
    assert b.client().call("appRequest.answer", {"request": pending["objectId"], "result": APP_CUSTOMER}) \
        == {"answered": True}
    assert client_a.result(client_a.wait_reply(call))["customer"]["id"] == APP_CUSTOMER["id"]
    assert seen_or_wait(on_b, "appRequest.answered", pending["objectId"])["object"]["state"] == "answered"
    error = rpc_error(a.client(), "appRequest.answer", {"request": pending["objectId"], "result": APP_CUSTOMER})
    assert error.code == INVALID_STATE and error.data["state"] == "answered"


def loaded_context_on_a(start_stpd, tmp_path, server, database_url, **params):
    """Two instances on the stand-in's secret key, a customer with a saved card, and a context
    created on A over a server-key session, loaded: (a, b, events on B, A's client, customer, context)."""
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    env = {"STPD_STRIPE_KEY": server.secret_key}
    a, b = pair(start_stpd, tmp_path, server, database_url, env=env)
    events = Events(b.client(), ["paymentContext.*"])
    client = a.client()
    context = client.call("paymentContext.create", {"session": open_session(client, cus), "amount": 1099,
                                                    "defaultPaymentMethod": visa["id"], **params})["id"]
    seen_or_wait(events, "paymentContext.didChange", context, where=lambda e: not e["object"]["loading"])
    return a, b, events, client, cus, context


def test_kill_9_mid_pending_action_deadline(start_stpd, tmp_path, stripe_test_server, database_url):
    """A times a pending action when it dies: B times it out at its stored deadline, once."""
    a, b, events, client, _, context = loaded_context_on_a(start_stpd, tmp_path, stripe_test_server, database_url,
                                                           pendingActionTimeout=6)
    client.call("paymentContext.requestPayment", {"context": context})
    pending = seen_or_wait(events, "paymentContext.pendingAction", context)["object"]["pendingAction"]
    wait_until(lambda: f"deadline:{pending['id']}" in status_leases(a), 30, "A timing the action")
    a.kill()
    finished = seen_or_wait(events, "paymentContext.didFinish", context, timeout=TAKEOVER + 6)
    assert finished["object"]["lastResult"]["error"]["code"] == stpd.errors.PendingActionTimedOut.code
    assert len(events.read_for(context, "paymentContext.didFinish")) == 1


def test_kill_9_mid_managed_payment(start_stpd, tmp_path, stripe_test_server, database_url):
    """A's confirm of a managed PaymentIntent waits on Stripe when A dies: B looks at the
    PaymentIntent before confirming, and the context finishes once, paid once."""
    server = stripe_test_server
    a, b, events, client, cus, context = loaded_context_on_a(start_stpd, tmp_path, server, database_url)
    intent = server.api("POST", "/v1/payment_intents", {"amount": 1099, "currency": "usd", "customer": cus})
    server.add_fault(method="POST", path=f"/v1/payment_intents/{intent['id']}/confirm", delayMs=30_000, times=1)
    client.call("paymentContext.requestPayment", {"context": context,
                                                  "paymentIntent": {"clientSecret": intent["client_secret"]}})
    wait_until(lambda: f"managed:{context}" in status_leases(a), 30, "A confirming")
    a.kill()
    finished = seen_or_wait(events, "paymentContext.didFinish", context, timeout=TAKEOVER)
    assert finished["object"]["lastResult"]["status"] == "success", finished
    assert len(events.read_for(context, "paymentContext.didFinish")) == 1
    paid = server.api("GET", f"/v1/payment_intents/{intent['id']}")
    assert paid["status"] == "succeeded" and paid["amount_received"] == 1099


def test_kill_9_of_the_retention_holder(start_stpd, tmp_path, stripe_test_server, database_url):
    """One instance applies the retention hourly; when it dies, another takes the job over."""
    a, b = pair(start_stpd, tmp_path, stripe_test_server, database_url)
    holder = wait_until(lambda: next((d for d in (a, b) if "retention" in status_leases(d)), None), 30,
                        "one instance holding the retention")
    other = b if holder is a else a
    assert "retention" not in status_leases(other)
    holder.kill()
    wait_until(lambda: "retention" in status_leases(other), TAKEOVER, "the other taking the retention over")


def test_instance_names_are_distinct_and_a_second_live_one_is_refused(start_stpd, tmp_path, stripe_test_server,
                                                                      database_url):
    server = stripe_test_server
    a = instance(start_stpd, tmp_path / "a", server, database_url, None)
    b = instance(start_stpd, tmp_path / "b", server, database_url, None)
    name_a = a.client().call("daemon.status")["fleet"]["instance"]
    name_b = b.client().call("daemon.status")["fleet"]["instance"]
    assert name_a != name_b and name_a.endswith(str(a.socket_path)) and name_b.endswith(str(b.socket_path))
    assert set(a.client().call("daemon.status")["fleet"]["instances"]) == {name_a, name_b}
    instance(start_stpd, tmp_path / "c", server, database_url, "till")
    twin = instance(start_stpd, tmp_path / "d", server, database_url, "till", wait_ready=False)
    assert twin.wait_exit(timeout=TAKEOVER) != 0
    assert "another live stpd of the fleet is named" in twin.log(), twin.log()
