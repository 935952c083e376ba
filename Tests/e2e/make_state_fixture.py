"""Makes Tests/Fixtures/state-RELEASE/ (state_fixture.py says what for): run through
``scripts/make-state-fixture``, never by the suite (its name does not start with test_).

The stpd of the build at hand, with the stripe-test-server's secret key, stores one object of
every kind, each gone as far as a customer takes it: a customer session (server keys) with a
last selected card (a customer preference), an app-adapter session with an answered app
request, a Sofort Source redirected and authorised, a 3-D Secure card's SetupIntent redirected and
followed up, a PayNow PaymentIntent polled to success, and a loaded payment context with a shipping
address and a selected card. Nothing is left running: a restart finds no work to resume, so
the reading test needs no Stripe stand-in. Then stpd stops and the state directory is copied.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from contexts import ContextEvents, open_session, saved_card, stpd_with_secret_key
from flows import Events, bank_page
from state_fixture import FILES, read_events, read_views
from test_customers import APP_CUSTOMER, next_pending

RETURN_URL = "myshop://stripe-fixture"


def test_make_state_fixture(start_stpd, tmp_path, stripe_test_server):
    out = Path(os.environ["STPD_STATE_FIXTURE_OUT"])
    server = stripe_test_server
    daemon = stpd_with_secret_key(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    events = ContextEvents(daemon.client(), ["customer.*", "paymentContext.*", "redirect.*", "source.*",
                                             "paymentIntent.*", "setupIntent.*"])
    ids: dict[str, list[str]] = {}

    # A customer session over the daemon's key, its card selected: a customer preference.
    customer = server.api("POST", "/v1/customers", {"email": "jenny@example.com"})["id"]
    card = saved_card(server, customer, "4242424242424242")
    session = open_session(client, customer)
    client.call("customer.selectPaymentMethod", {"session": session, "paymentMethod": card["id"]})
    events.wait("customer.paymentMethodSelected", session)
    ids["customerSession"] = [session]

    # A payment context, loaded, with a shipping address and the card selected.
    context = client.call("paymentContext.create", {
        "session": session, "amount": 2500, "currency": "eur", "country": "DE",
        "configuration": {"companyName": "Fixture Shop", "requiredShippingAddressFields": ["postalAddress"],
                          "shippingType": "delivery"}})["id"]
    events.loaded(context)
    client.call("paymentContext.setShippingAddress", {"context": context, "address": {
        "name": "Jenny Rosen", "email": "jenny@example.com",
        "address": {"line1": "1 Main St", "city": "Berlin", "postalCode": "10115", "country": "DE"}}})
    client.call("paymentContext.selectPaymentMethod", {"context": context, "paymentMethod": card["id"]})
    ids["paymentContext"] = [context]

    # An app-adapter session whose customer the app gave: an answered app request.
    app_client = daemon.client()
    subscription = app_client.call("events.subscribe", {"filter": {"types": ["appRequest.*"]}})["subscription"]
    app_session = app_client.call("customer.open", {"adapter": {"kind": "app", "timeout": 30}, "prefetch": False})["id"]
    pending_call = app_client.request("customer.retrieve", {"session": app_session})
    request = next_pending(app_client, subscription)["object"]
    app_client.call("appRequest.answer", {"request": request["id"], "result": APP_CUSTOMER})
    app_client.result(app_client.wait_reply(pending_call))
    ids["customerSession"].append(app_session)

    # A Sofort Source, redirected and authorised at the bank.
    source = client.call("source.create", {"params": {"sofort": {
        "amount": 1099, "returnURL": RETURN_URL, "country": "DE"}}})["source"]
    redirect = client.call("redirect.create", {"source": {"id": source["id"]}})["id"]
    started = client.call("redirect.start", {"session": redirect, "mode": "inApp"})
    client.call("handle-url", {"url": bank_page(started["openURL"], "authorize")})
    events.wait("redirect.outcome", redirect)
    ids["source"] = [source["id"]]
    ids["redirect"] = [redirect]

    # A SetupIntent for a 3-D Secure card, redirected and followed up: a redirect session and a
    # SetupIntent poll.
    setup = server.api("POST", "/v1/setup_intents", {"payment_method_types": ["card"]})
    confirmed = client.call("setupIntent.confirm", {
        "clientSecret": setup["client_secret"], "returnURL": RETURN_URL,
        "paymentMethod": {"id": "pm_card_authenticationRequiredOnSetup"}})
    setup_redirect = confirmed["redirect"]["id"]
    started = client.call("redirect.start", {"session": setup_redirect, "mode": "inApp"})
    client.call("handle-url", {"url": bank_page(started["openURL"], "succeed")})
    events.seen_or_wait("redirect.outcome", setup_redirect)
    events.seen_or_wait("setupIntent.finished", setup["id"])
    ids["redirect"].append(setup_redirect)
    ids["setupIntent"] = [setup["id"]]

    # A PayNow PaymentIntent: its QR code awaited by a poll until the customer paid.
    intent = server.api("POST", "/v1/payment_intents",
                        {"amount": 1000, "currency": "sgd", "payment_method_types": ["paynow"]})
    answer = client.call("paymentIntent.confirm", {"clientSecret": intent["client_secret"], "paymentMethod": {"paynow": {}}})
    assert answer["result"] == "pending", answer
    server.control(f"payment_intents/{intent['id']}/succeed")
    events.seen_or_wait("paymentIntent.finished", intent["id"])
    ids["paymentIntent"] = [intent["id"]]

    views = read_views(client, ids)
    log = read_events(client)
    assert daemon.terminate() == 0
    # The write-ahead log holds the last pages: checkpointed into the database of a copy, so
    # that one file (still in WAL mode, as stpd made it) is the whole state.
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in daemon.state_dir.iterdir():
        if path.name.startswith("stpd.sqlite") or path.name == "state-key":
            shutil.copyfile(path, copy / path.name)
    with closing(sqlite3.connect(copy / "stpd.sqlite")) as db:
        assert db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    leftovers = [p.name for p in copy.iterdir() if p.name.startswith("stpd.sqlite-") and p.stat().st_size > 0]
    assert not leftovers, f"the checkpoint left {leftovers}"
    out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(copy / name, out / name)
    (out / "expected.json").write_text(json.dumps(
        {"release": os.environ.get("STPD_STATE_FIXTURE_RELEASE", ""), "uid": os.getuid(), "ids": ids,
         "views": views, "events": log}, indent=1, sort_keys=True) + "\n")
