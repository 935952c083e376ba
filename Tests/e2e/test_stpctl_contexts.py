"""`stpctl context ...` end to end: the real stpctl against stpd (running with the
stripe-test-server's secret key) over a `--stripe-server-customer` session of a customer with
saved cards.

A context is created, shown (JSON, and the human form on a pty), asked to pay; its
didCreatePaymentResult pending action is answered through stpctl, and answering it again exits 1
with PendingActionGone (5001). A request waiting for a payment option is cancelled, then goes on
once one is selected; an error answer carries the app's message; usage errors exit 2. Waits are on the context's
events (a second connection subscribed to paymentContext.*), never on sleeps.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import clean_environment
from contexts import INVALID_STATE, PENDING_ACTION_GONE, ContextEvents, saved_card, stpd_with_secret_key
from test_stpctl_customer import EXIT_TIMEOUT, run_on_terminal

COMPANY = "Rocket Rides"


@pytest.fixture
def stpctl(bin_dir: Path, start_stpd, tmp_path: Path, stripe_test_server):
    """stpctl(*args) -> CompletedProcess (stdout piped), against stpd with the test server's
    secret key; `.events` follows paymentContext.* on its own connection."""
    daemon = stpd_with_secret_key(start_stpd, tmp_path / "stpd", stripe_test_server)
    argv = [str(bin_dir / "stpctl"), "--socket", str(daemon.socket_path)]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*argv, *args], env=clean_environment(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=EXIT_TIMEOUT)

    run.argv = argv
    run.server = stripe_test_server
    run.events = ContextEvents(daemon.client(), ["paymentContext.*"])
    return run


def ok(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0 and done.stderr == "", (done.returncode, done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout  # piped: one compact line
    return json.loads(lines[0])


def error_code(done: subprocess.CompletedProcess) -> int:
    assert done.returncode == 1 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    return json.loads(done.stderr)["code"]  # piped: the JSON-RPC error object


def customer_with_cards(stpctl) -> tuple[str, dict, dict]:
    """A server-key customer session (opened through stpctl) and the customer's Visa and Mastercard."""
    server = stpctl.server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    mastercard = saved_card(server, cus, "5555555555554444")
    session = ok(stpctl("customer", "open", "--stripe-server-customer", cus, "--no-prefetch"))
    assert session["status"] == "open", session
    return session["id"], visa, mastercard


def create_loaded(stpctl, session: str, *args: str) -> dict:
    created = ok(stpctl("context", "create", "--session", session, "--amount", "1099", "--company-name", COMPANY, *args))
    assert created["id"].startswith("pctx_") and created["loading"] is True, created
    stpctl.events.loaded(created["id"])
    return ok(stpctl("context", "show", created["id"]))


def request_until_pending(stpctl, ctx: str) -> dict:
    requested = ok(stpctl("context", "request-payment", ctx))
    assert requested["id"] == ctx and requested["requestState"] == "requestingPayment", requested
    stpctl.events.context("paymentContext.pendingAction", ctx,
                          lambda o: (o.get("pendingAction") or {}).get("kind") == "didCreatePaymentResult")
    return ok(stpctl("context", "show", ctx))["pendingAction"]


def test_pay_by_answering_the_pending_action(stpctl):
    session, visa, mastercard = customer_with_cards(stpctl)
    loaded = create_loaded(stpctl, session, "--currency", "eur", "--default-payment-method", visa["id"],
                           "--pending-action-timeout", "120")
    ctx = loaded["id"]
    assert (loaded["customerSession"], loaded["amount"], loaded["currency"]) == (session, 1099, "EUR")
    assert loaded["selectedPaymentMethod"] == visa["id"] and loaded["isReadyForPayment"] is True
    assert [o["label"] for o in loaded["paymentOptions"]] == ["Mastercard 4444", "Visa 4242"]
    assert loaded["paymentSummaryItems"] == [{"label": COMPANY, "amount": 1099, "decimal": "10.99"}]
    assert [c["id"] for c in ok(stpctl("context", "list"))["contexts"]] == [ctx]

    # On a terminal: key: value lines, the selected option marked.
    status, shown = run_on_terminal([*stpctl.argv, "context", "show", ctx])
    assert status == 0, shown
    assert shown.startswith(f"context:       {ctx}\n"), shown
    assert "amount:        10.99 EUR\n" in shown and f"summary:       {COMPANY}  10.99 EUR\n" in shown
    assert f"  {mastercard['id']}  Mastercard 4444\n" in shown and f"* {visa['id']}  Visa 4242\n" in shown
    assert "last result:   none\n" in shown

    pending = request_until_pending(stpctl, ctx)
    assert pending["id"].startswith("pact_") and pending["kind"] == "didCreatePaymentResult"
    assert pending["payload"]["paymentMethod"]["id"] == visa["id"]
    status, shown = run_on_terminal([*stpctl.argv, "context", "show", ctx])
    assert status == 0 and f"pending action: {pending['id']} didCreatePaymentResult: {visa['id']} Visa 4242" in shown, shown
    assert "request state:  requestingPayment\n" in shown and "answer by:" in shown

    answered = ok(stpctl("context", "answer", pending["id"], "--status", "success"))
    assert answered["id"] == ctx and answered["lastResult"]["status"] == "success", answered
    assert answered.get("pendingAction") is None and answered["requestState"] == "none"
    assert ok(stpctl("context", "show", ctx))["lastResult"]["status"] == "success"

    # The action is gone: answering again is the daemon's error 5001, exit status 1.
    assert error_code(stpctl("context", "answer", pending["id"], "--status", "success")) == PENDING_ACTION_GONE
    assert error_code(stpctl("context", "answer", "pact_doesNotExist", "--status", "error",
                             "--error", "Declined")) == PENDING_ACTION_GONE

    closed = ok(stpctl("context", "close", ctx))
    assert closed["status"] == "closed" and closed["lastResult"]["status"] == "success"


def test_cancel_error_answer_and_usage_errors(stpctl):
    session, visa, _ = customer_with_cards(stpctl)
    ctx = create_loaded(stpctl, session)["id"]

    # No selection: the request waits for a payment option; cancel finishes it (userCancellation).
    ok(stpctl("context", "request-payment", ctx))
    assert stpctl.events.context("paymentContext.needsInput", ctx)["needs"] == "paymentOption"
    cancelled = ok(stpctl("context", "cancel", ctx))
    assert cancelled["lastResult"] == {"status": "userCancellation", "error": None}, cancelled
    assert cancelled["requestState"] == "none" and cancelled.get("needs") is None
    # Nothing waits for input now: the daemon refuses to cancel (InvalidState), exit status 1.
    assert error_code(stpctl("context", "cancel", ctx)) == INVALID_STATE

    # Again; this time a card is selected and the app is asked.
    ok(stpctl("context", "request-payment", ctx))
    stpctl.events.context("paymentContext.needsInput", ctx)
    assert ok(stpctl("context", "select", ctx, visa["id"]))["selectedPaymentMethod"] == visa["id"]
    action = stpctl.events.context("paymentContext.pendingAction", ctx,
                                   lambda o: o.get("pendingAction") is not None)["pendingAction"]["id"]

    # The app's error, with its code, is the payment's error.
    failed = ok(stpctl("context", "answer", action, "--status", "error", "--error", "Your card was declined",
                       "--error-code", "card_declined"))
    assert failed["lastResult"]["status"] == "error", failed
    error = failed["lastResult"]["error"]
    assert error["message"].endswith("Your card was declined"), error
    assert error["data"] == {"message": "Your card was declined", "code": "card_declined"}, error

    # Usage errors: exit 2, nothing sent.
    for args in (["answer", action, "--status", "success", "--error", "x"],
                 ["answer", action, "--status", "error", "--error-code", "c"],
                 ["answer", action, "--status", "success", "--shipping-method", "ups:UPS:599"],
                 ["answer", action, "--status", "valid", "--shipping-method", "ups:599"],
                 ["answer", action, "--status", "maybe"],
                 ["answer", action],
                 ["create", "--session", session, "--amount", "-1"],
                 ["create", "--session", session],
                 ["request-payment", ctx, "--return-url", "myshop://back"]):
        done = stpctl("context", *args)
        assert done.returncode == 2 and done.stdout == "", (args, done)
    assert ok(stpctl("context", "show", ctx))["lastResult"]["status"] == "error"
