"""SetupIntents end to end: the real stpd binary against the project's stripe-test-server, with
stpd holding only the publishable key, as an app would.

The merchant's server creates the SetupIntent with the secret key; the app confirms it through
stpd. The customer's side of a bank redirect is played over HTTP as in test_sources.py: the test
server's bank page (/_test/redirect/{id}?action=...) drives the SetupIntent and answers 302 with
the app's return URL, which the test hands to stpd with ``handle-url``.

- a card: succeeded at once, and the PaymentMethod saved to the customer;
- with a secret key, a confirmation without the client secret (Stripe refuses it from that key);
- SEPA Debit: succeeded at once, with the customer's online acceptance of the mandate;
- iDEAL: a redirect session, authorized at the bank page, followed up to ``succeeded``;
- a 3-D Secure card failing at the bank page: ``requires_payment_method``, STPPaymentHandler's failure;
- a declined card, a PaymentIntent's secret, and a confirmation with an existing PaymentMethod.
"""

from __future__ import annotations

import urllib.parse

from codes import PAYMENT_FAILED, STRIPE_CARD_ERROR
from flows import INVALID_PARAMS, Events, bank_page, query_items, rpc_error, stpd_for


RETURN_URL = "myshop://stripe-setup?order=9"
REDIRECT_EVENTS = ["redirect.created", "redirect.started", "redirect.completed", "redirect.outcome"]


def card(number: str) -> dict:
    return {"card": {"number": number, "expMonth": 12, "expYear": 2040, "cvc": "123"}}


def create_setup_intent(server, types: list[str], customer: str | None = None) -> dict:
    """As the merchant's server does, with the secret key."""
    params: dict = {"payment_method_types": types}
    if customer is not None:
        params["customer"] = customer
    intent = server.api("POST", "/v1/setup_intents", params)
    assert intent["status"] == "requires_payment_method" and intent["id"].startswith("seti_"), intent
    return intent


def test_card_setup_succeeds_and_saves_the_payment_method(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    client = stpd_for(start_stpd, tmp_path / "stpd", server).client()
    customer = server.api("POST", "/v1/customers", {})
    intent = create_setup_intent(server, ["card"], customer=customer["id"])
    secret = intent["client_secret"]

    confirmed = client.call("setupIntent.confirm", {"clientSecret": secret, "paymentMethod": card("4242424242424242")})
    seti = confirmed["setupIntent"]
    assert (seti["id"], seti["status"]) == (intent["id"], "succeeded") and "client_secret" not in seti
    assert confirmed.get("redirect") is None
    calls = server.requests(path=f"/v1/setup_intents/{intent['id']}/confirm")
    assert len(calls) == 1 and calls[0]["auth"] == "publishable"
    form = urllib.parse.parse_qs(calls[0]["body"])
    assert form["payment_method_data[type]"] == ["card"] and form["client_secret"] == [secret]
    assert server.api("GET", f"/v1/payment_methods/{seti['payment_method']}")["customer"] == customer["id"]

    retrieved = client.call("setupIntent.retrieve", {"clientSecret": secret})["setupIntent"]
    assert retrieved["status"] == "succeeded" and "client_secret" not in retrieved


def test_a_secret_key_confirms_without_the_client_secret(start_stpd, tmp_path, stripe_test_server):
    """Stripe takes client_secret on a confirmation from a publishable key only; from a secret key
    it is an unknown parameter. stpd beside a server sends the id in the path alone."""
    server = stripe_test_server
    client = stpd_for(start_stpd, tmp_path / "stpd", server, env={"STPD_STRIPE_KEY": server.secret_key}).client()
    intent = create_setup_intent(server, ["card"])
    confirmed = client.call("setupIntent.confirm", {"clientSecret": intent["client_secret"],
                                                    "paymentMethod": {"id": "pm_card_visa"}})
    assert confirmed["setupIntent"]["status"] == "succeeded"
    (call,) = server.requests(path=f"/v1/setup_intents/{intent['id']}/confirm")
    assert call["auth"] == "secret" and call["form"] == {"payment_method": "pm_card_visa", "expand": ["payment_method"]}, call


def test_sepa_debit_setup_sends_the_mandate(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    client = stpd_for(start_stpd, tmp_path / "stpd", server).client()
    intent = create_setup_intent(server, ["sepa_debit"])
    secret = intent["client_secret"]
    iban = {"sepaDebit": {"iban": "DE89370400440532013000"}}

    # Stripe needs the account holder's name and email: refused before anything is sent.
    error = rpc_error(client, "setupIntent.confirm", {
        "clientSecret": secret, "paymentMethod": {**iban, "billingDetails": {"name": "Jo Doe"}}})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "paymentMethod.billingDetails.email", error
    assert server.requests(path=f"/v1/setup_intents/{intent['id']}/confirm") == []

    confirmed = client.call("setupIntent.confirm", {
        "clientSecret": secret,
        "paymentMethod": {**iban, "billingDetails": {"name": "Jo Doe", "email": "jo@example.test"}}})
    assert confirmed["setupIntent"]["status"] == "succeeded" and confirmed.get("redirect") is None
    (call,) = server.requests(path=f"/v1/setup_intents/{intent['id']}/confirm")
    form = urllib.parse.parse_qs(call["body"])
    assert form["payment_method_data[type]"] == ["sepa_debit"]
    assert form["payment_method_data[sepa_debit][iban]"] == ["DE89370400440532013000"]
    assert form["mandate_data[customer_acceptance][type]"] == ["online"]
    assert form["mandate_data[customer_acceptance][online][infer_from_client]"] == ["true"]


def test_ideal_setup_redirect_succeeds(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*"])
    intent = create_setup_intent(server, ["ideal"])
    secret = intent["client_secret"]

    confirmed = client.call("setupIntent.confirm", {
        "clientSecret": secret, "paymentMethod": {"ideal": {"bank": "ing"}}, "returnURL": RETURN_URL})
    seti = confirmed["setupIntent"]
    assert seti["status"] == "requires_action" and seti["next_action"]["type"] == "redirect_to_url"
    assert seti["next_action"]["redirect_to_url"]["return_url"] == RETURN_URL
    session = confirmed["redirect"]
    rid = session["id"]
    assert (session["status"], session["kind"], session["setupIntentId"]) == ("notStarted", "setupIntent", intent["id"])
    assert session["redirectURL"] == seti["next_action"]["redirect_to_url"]["url"]
    started = client.call("redirect.start", {"session": rid, "mode": "inApp"})
    assert started["status"] == "inProgress" and started["openURL"] == session["redirectURL"]

    location = bank_page(started["openURL"], "succeed")
    items = dict(query_items(location))
    assert location.startswith(RETURN_URL + "&")
    assert items["setup_intent"] == intent["id"] and items["redirect_status"] == "succeeded"
    assert client.call("handle-url", {"url": location}) == {"handled": True, "session": rid}

    outcome = events.wait("redirect.outcome", rid)["object"]["outcome"]
    assert outcome["result"] == "succeeded" and outcome.get("error") is None
    assert outcome["object"]["id"] == intent["id"] and "client_secret" not in outcome["object"]
    assert events.types_for(rid) == REDIRECT_EVENTS
    assert client.call("setupIntent.retrieve", {"clientSecret": secret})["setupIntent"]["status"] == "succeeded"


def test_three_d_secure_setup_fails_at_the_bank_page(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    client = daemon.client()
    events = Events(daemon.client(), ["redirect.*"])
    intent = create_setup_intent(server, ["card"])

    # start: the session is started in the same call.
    confirmed = client.call("setupIntent.confirm", {
        "clientSecret": intent["client_secret"], "paymentMethod": card("4000002500003155"),
        "returnURL": RETURN_URL, "start": {"mode": "browser"}})
    session = confirmed["redirect"]
    assert (session["status"], session["kind"], session["mode"]) == ("inProgress", "setupIntent", "browser")

    location = bank_page(session["openURL"], "fail")
    assert dict(query_items(location))["redirect_status"] == "failed"
    assert client.call("handle-url", {"url": location}) == {"handled": True, "session": session["id"]}
    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    # STPPaymentHandler: requires_payment_method after the action is a failure carrying the last error.
    assert (outcome["result"], outcome["intentResult"]) == ("requires_payment_method", "failed")
    assert outcome["error"]["code"] == PAYMENT_FAILED and outcome["error"]["data"]["reason"] == "authenticationFailed"
    assert outcome["error"]["data"]["lastSetupError"]["code"] == "setup_intent_authentication_failure"
    assert outcome["object"]["last_setup_error"]["code"] == "setup_intent_authentication_failure"


def test_declined_card_and_wrong_secrets(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    client = stpd_for(start_stpd, tmp_path / "stpd", server).client()
    intent = create_setup_intent(server, ["card"])
    secret = intent["client_secret"]

    error = rpc_error(client, "setupIntent.confirm", {"clientSecret": secret, "paymentMethod": card("4000000000000002")})
    assert error.code == STRIPE_CARD_ERROR, error
    assert client.call("setupIntent.retrieve", {"clientSecret": secret})["setupIntent"]["status"] == "requires_payment_method"

    # A PaymentIntent's secret is refused before anything is sent.
    error = rpc_error(client, "setupIntent.confirm", {
        "clientSecret": "pi_123_secret_abc", "paymentMethod": {"id": "pm_card_visa"}})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "clientSecret", error

    # A succeeded SetupIntent has nothing to redirect.
    client.call("setupIntent.confirm", {"clientSecret": secret, "paymentMethod": {"id": "pm_card_visa"}})
    assert client.call("setupIntent.retrieve", {"clientSecret": secret})["setupIntent"]["status"] == "succeeded"
    assert len(server.requests(path=f"/v1/setup_intents/{intent['id']}/confirm")) == 2
