"""The client secret is the capability for its intent or Source, whatever key stpd holds.

Stripe checks `client_secret` on a publishable key's request only: under a secret or restricted
key it answers whoever names the id. So stpd, on a secret key here, reads the object and compares
its secret before it returns, stores or acts on anything. Another uid that knows only root's ids
(uid 1001, over a 0666 socket) gets, for a forged secret, exactly what an unknown id gets, after
the same one read at Stripe and with nothing sent that would change the object; and a conflict
with another user's poll of the same intent answers the same way.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from codes import NOT_FOUND, STRIPE_INVALID_REQUEST
from contexts import connected, saved_card
from flows import run_as
from stripe_servers import TEST_CALL_PREFIX
from test_payment_contexts import create_loaded
from test_security import OTHER_UID, system_python

RETURN_URL = "myapp://stripe-redirect/done"


@pytest.fixture(scope="module")
def world(module_start_stpd, module_stripe_test_server):
    python = system_python()
    directory = Path(tempfile.mkdtemp(prefix="stpd-secret-"))
    directory.chmod(0o755)
    server = module_stripe_test_server
    socket_path = directory / "stpd.sock"
    daemon = module_start_stpd(directory / "state", "--stripe-api-base", server.base_url, "--socket",
                               str(socket_path), "--socket-mode", "0666", env={"STPD_STRIPE_KEY": server.secret_key})
    yield SimpleNamespace(server=server, daemon=daemon, root=daemon.client(),
                          other=lambda calls: run_as(python, OTHER_UID, socket_path, calls))
    shutil.rmtree(directory, ignore_errors=True)


def payment_intent(server, **extra) -> dict:
    return server.api("POST", "/v1/payment_intents", {"amount": 2000, "currency": "eur",
                                                      "payment_method_types": ["card"], **extra})


def forged(intent_or_id) -> str:
    ident = intent_or_id if isinstance(intent_or_id, str) else intent_or_id["id"]
    return f"{ident}_secret_FORGED0000"


def answered_as_unknown(reply: dict, ident: str, unknown_reply: dict, unknown_id: str) -> None:
    """REPLY (about IDENT) is what UNKNOWN_REPLY (about an id nobody made) is, ids aside."""
    assert "error" in reply, reply
    def normal(error: dict, name: str) -> dict:
        data = {k: v for k, v in (error.get("data") or {}).items() if k != "request_id"}
        text = re.sub(re.escape(name), "ID", f"{error['code']} {error['message']} {data}")
        return {"text": text}
    assert normal(reply["error"], ident) == normal(unknown_reply["error"], unknown_id), (reply, unknown_reply)


def stripe_calls(server, ident: str) -> list[tuple[str, str]]:
    """What stpd sent to Stripe about IDENT (the test's own calls left out)."""
    return [(r["method"], r["path"]) for r in server.every_request()
            if ident in r["path"] and not (r.get("idempotency_key") or "").startswith(TEST_CALL_PREFIX)]


def test_a_forged_secret_opens_no_intent(world):
    """Every intent method that takes a client secret: a forged one is an unknown id, one GET at
    Stripe (as an unknown id costs), no confirmation or verification sent, nothing stored."""
    server = world.server
    three_ds = payment_intent(server, payment_method="pm_card_authenticationRequired", confirm="true",
                              return_url=RETURN_URL)
    assert three_ds["status"] == "requires_action"
    unpaid = payment_intent(server)
    setup = server.api("POST", "/v1/setup_intents", {"payment_method_types": ["card"]})
    cases = [
        ("paymentIntent.retrieve", three_ds, {}),
        ("paymentIntent.confirm", unpaid, {"paymentMethod": {"id": "pm_card_visa"}}),
        ("paymentIntent.handleNextAction", three_ds, {"returnURL": RETURN_URL}),
        ("paymentIntent.verifyMicrodeposits", unpaid, {"amounts": [32, 45]}),
        ("setupIntent.retrieve", setup, {}),
        ("setupIntent.confirm", setup, {"paymentMethod": {"id": "pm_card_visa"}}),
        ("setupIntent.handleNextAction", setup, {"returnURL": RETURN_URL}),
        ("setupIntent.verifyMicrodeposits", setup, {"descriptorCode": "SM11AA"}),
    ]
    for method, intent, params in cases:
        prefix = "seti_" if method.startswith("setup") else "pi_"
        unknown = f"{prefix}NoSuchIntent000000000000"
        before = stripe_calls(server, intent["id"])
        mine, nobodys = world.other([[method, {"clientSecret": forged(intent), **params}],
                                     [method, {"clientSecret": forged(unknown), **params}]])
        answered_as_unknown(mine, intent["id"], nobodys, unknown)
        assert mine["error"]["code"] == STRIPE_INVALID_REQUEST
        assert mine["error"]["data"]["code"] == "resource_missing" and mine["error"]["data"]["http_status"] == 404
        sent = stripe_calls(server, intent["id"])[len(before):]
        assert sent == [("GET", f"/v1/{'setup_intents' if prefix == 'seti_' else 'payment_intents'}/{intent['id']}")], \
            (method, sent)
    assert server.api("GET", f"/v1/payment_intents/{unpaid['id']}")["status"] == "requires_payment_method"
    assert server.api("GET", f"/v1/setup_intents/{setup['id']}")["status"] == "requires_payment_method"
    # Nothing was recorded or opened for uid 1001.
    lists = world.other([["paymentIntent.list", {}], ["setupIntent.list", {}], ["redirect.list", {}]])
    assert [len(reply["result"][key]) for reply, key in zip(lists, ["intents", "intents", "sessions"])] == [0, 0, 0]


def test_the_real_secret_is_the_capability(world):
    """Whoever holds the secret may act on its intent, whoever made it."""
    intent = payment_intent(world.server)
    [reply] = world.other([["paymentIntent.retrieve", {"clientSecret": intent["client_secret"]}]])
    assert reply["result"]["paymentIntent"]["id"] == intent["id"]
    assert "client_secret" not in reply["result"]["paymentIntent"]


def test_redirect_create_with_a_forged_secret_is_an_unknown_id(world):
    intent = payment_intent(world.server, payment_method="pm_card_authenticationRequired", confirm="true",
                            return_url=RETURN_URL)
    unknown = "pi_NoSuchIntent000000000000"
    mine, nobodys = world.other([["redirect.create", {"paymentIntent": forged(intent)}],
                                 ["redirect.create", {"paymentIntent": forged(unknown)}]])
    answered_as_unknown(mine, intent["id"], nobodys, unknown)


def test_a_forged_source_secret_opens_no_source(world):
    created = world.root.call("source.create", {"params": {"sofort": {
        "amount": 1099, "returnURL": RETURN_URL, "country": "DE"}}})
    source = created["source"]["id"]
    unknown = "src_NoSuchSource0000000000"
    fake = "src_client_secret_FORGED0000"
    replies = world.other([
        ["source.retrieve", {"id": source, "clientSecret": fake}],
        ["source.retrieve", {"id": unknown, "clientSecret": fake}],
        ["redirect.create", {"source": {"id": source, "clientSecret": fake}}],
        ["redirect.create", {"source": {"id": unknown, "clientSecret": fake}}],
        ["source.poll", {"id": source, "clientSecret": fake}],
        ["source.poll", {"id": unknown, "clientSecret": fake}],
    ])
    for mine, nobodys in zip(replies[::2], replies[1::2]):
        answered_as_unknown(mine, source, nobodys, unknown)
    assert replies[4]["error"]["code"] == NOT_FOUND


def test_another_users_poll_answers_as_an_unknown_intent(world):
    """Root's QR code is being polled; uid 1001, even with the intent's real secret, cannot take
    the poll over nor learn that it exists."""
    server = world.server
    intent = server.api("POST", "/v1/payment_intents", {"amount": 2000, "currency": "sgd",
                                                       "payment_method_types": ["paynow"]})
    answer = world.root.call("paymentIntent.confirm", {"clientSecret": intent["client_secret"],
                                                       "paymentMethod": {"paynow": {}}})
    assert answer["result"] == "pending" and answer["poll"]["status"] == "polling"
    unknown = "pi_NoSuchIntent000000000000"
    mine, nobodys = world.other([["paymentIntent.handleNextAction", {"clientSecret": intent["client_secret"]}],
                                 ["paymentIntent.handleNextAction", {"clientSecret": forged(unknown)}]])
    answered_as_unknown(mine, intent["id"], nobodys, unknown)
    assert world.root.call("paymentIntent.get", {"id": intent["id"]})["poll"]["status"] == "polling"
    world.root.call("paymentIntent.stopPolling", {"id": intent["id"]})


def test_a_managed_payment_with_a_forged_secret_confirms_nothing(start_stpd, tmp_path, stripe_test_server):
    """paymentContext.requestPayment's PaymentIntent: a forged secret finishes the context with
    the unknown-id error; the merchant's intent is left unconfirmed."""
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    _, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    ctx = create_loaded(client, events, sid, amount=2000, defaultPaymentMethod=visa["id"])["id"]
    intent = payment_intent(server, customer=cus)
    client.call("paymentContext.requestPayment", {"context": ctx, "paymentIntent": {"clientSecret": forged(intent)}})
    finished = events.context("paymentContext.didFinish", ctx)
    error = finished["lastResult"]["error"]
    assert finished["lastResult"]["status"] == "error"
    assert error["code"] == STRIPE_INVALID_REQUEST and error["data"]["code"] == "resource_missing", error
    assert server.api("GET", f"/v1/payment_intents/{intent['id']}")["status"] == "requires_payment_method"
    assert not [c for c in stripe_calls(server, intent["id"]) if c[0] == "POST"]
