"""Card validation end to end: ``card.validate`` as a form calls it while the customer types, and
every method that takes a card refusing one that is not valid with CardInvalid, naming the field,
before any request to Stripe (the stand-in's request log stays empty):
``source.create``, ``paymentIntent.confirm``, ``setupIntent.confirm`` and ``paymentContext.addCard``."""

from __future__ import annotations

import json
import subprocess
import time

from codes import CARD_INVALID, INVALID_PARAMS
from conftest import clean_environment
from contexts import card_input, connected
from flows import rpc_error, stpd_for
from test_stpctl_customer import EXIT_TIMEOUT, run_on_terminal

LAST_YEAR = time.gmtime().tm_year - 1


def validate(client, **fields) -> dict:
    return client.call("card.validate", fields)


def test_validate_follows_the_customer_typing(start_stpd, tmp_path, stripe_test_server):
    client = stpd_for(start_stpd, tmp_path / "stpd", stripe_test_server).client()
    nothing = validate(client)
    assert nothing == {"brand": "unknown", "number": "incomplete", "expMonth": "incomplete",
                       "expYear": "incomplete", "cvc": "incomplete", "card": "incomplete"}
    # The number, digit by digit: the brand as soon as the first digits name it.
    assert validate(client, number="3")["brand"] == "unknown"
    assert validate(client, number="37") == {**nothing, "brand": "amex"}
    assert validate(client, number="3782 822463 1000")["number"] == "incomplete"
    assert validate(client, number="3782 822463 10005")["number"] == "valid"
    assert validate(client, number="3782 822463 10006")["number"] == "invalid"  # Luhn
    assert validate(client, number="3782 822463 100050")["number"] == "invalid"  # too long for amex
    assert validate(client, number="4242-4242")["number"] == "invalid"  # only spaces are ignored
    assert validate(client, number="9999")["number"] == "invalid"  # no brand issues it
    # Month, then year (two digits, as an MM/YY field takes them), then the CVC for the brand.
    assert [validate(client, expMonth=m)["expMonth"] for m in ("1", "12", "13")] == ["incomplete", "valid", "invalid"]
    next_year, last_year = str(LAST_YEAR + 2)[2:], str(LAST_YEAR)[2:]
    assert validate(client, expMonth="12", expYear=next_year)["expYear"] == "valid"
    assert validate(client, expMonth="12", expYear=last_year)["expYear"] == "invalid"
    assert validate(client, expMonth="12", expYear=str(LAST_YEAR + 2))["expYear"] == "valid"
    assert validate(client, number="378282246310005", cvc="1234")["cvc"] == "valid"
    assert validate(client, number="4242424242424242", cvc="1234")["cvc"] == "invalid"
    whole = validate(client, number="4242 4242 4242 4242", expMonth="04", expYear=next_year, cvc="123")
    assert whole == {"brand": "visa", "number": "valid", "expMonth": "valid", "expYear": "valid", "cvc": "valid",
                     "card": "valid"}
    error = rpc_error(client, "card.validate", {"number": 4242})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "number", error
    assert stripe_test_server.requests() == []


def test_stpctl_card_validate(bin_dir, start_stpd, tmp_path, stripe_test_server):
    daemon = stpd_for(start_stpd, tmp_path / "stpd", stripe_test_server)
    argv = [str(bin_dir / "stpctl"), "--socket", str(daemon.socket_path), "card", "validate",
            "--number", "3782 822463 10005", "--exp-month", "04", "--exp-year", str(LAST_YEAR + 2)[2:], "--cvc", "12"]
    done = subprocess.run(argv, env=clean_environment(), capture_output=True, text=True, timeout=EXIT_TIMEOUT)
    assert done.returncode == 0 and json.loads(done.stdout) == {
        "brand": "amex", "number": "valid", "expMonth": "valid", "expYear": "valid", "cvc": "incomplete",
        "card": "incomplete"}, (done.stdout, done.stderr)
    status, printed = run_on_terminal(argv)
    assert status == 0 and printed.splitlines() == [
        "brand:     amex", "number:    valid", "exp month: valid", "exp year:  valid", "cvc:       incomplete",
        "card:      incomplete"], printed


def assert_refused(error, parameter: str, state: str, brand: str) -> None:
    assert error.code == CARD_INVALID, error
    field = parameter.rsplit(".", 1)[1]
    assert error.data == {"parameter": parameter, "field": field, "state": state, "brand": brand}, error.data


def test_source_and_intent_confirmations_refuse_an_invalid_card(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    client = stpd_for(start_stpd, tmp_path / "stpd", server).client()
    card = {"number": "4242424242424241", "expMonth": 12, "expYear": LAST_YEAR + 3, "cvc": "123"}
    error = rpc_error(client, "source.create", {"params": {"card": card}})
    assert_refused(error, "params.card.number", "invalid", "visa")

    pi = server.api("POST", "/v1/payment_intents", {"amount": 1099, "currency": "eur", "payment_method_types": ["card"]})
    expired = {**card, "number": "5555555555554444", "expYear": LAST_YEAR}
    error = rpc_error(client, "paymentIntent.confirm", {"clientSecret": pi["client_secret"],
                                                        "paymentMethod": {"card": expired}})
    assert_refused(error, "paymentMethod.card.expYear", "invalid", "mastercard")

    seti = server.api("POST", "/v1/setup_intents", {"payment_method_types": ["card"]})
    long_cvc = {**card, "number": "4000056655665556", "cvc": "1234"}
    error = rpc_error(client, "setupIntent.confirm", {"clientSecret": seti["client_secret"],
                                                      "paymentMethod": {"card": long_cvc}})
    assert_refused(error, "paymentMethod.card.cvc", "invalid", "visa")

    # Nothing reached Stripe; a valid card then goes through.
    for path in ("/v1/sources", f"/v1/payment_intents/{pi['id']}/confirm", f"/v1/setup_intents/{seti['id']}/confirm"):
        assert server.requests(path=path) == [], path
    confirmed = client.call("paymentIntent.confirm", {"clientSecret": pi["client_secret"],
                                                      "paymentMethod": {"card": {**card, "number": "4242424242424242"}}})
    assert confirmed["paymentIntent"]["status"] == "succeeded"


def test_add_card_refuses_an_invalid_card(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    customer = server.create_customer(email="new@example.com")["id"]
    _, events, client, session = connected(start_stpd, tmp_path / "stpd", server, customer)
    created = client.call("paymentContext.create", {"session": session, "amount": 2500})
    context = events.loaded(created["id"])["id"]
    server.clear_requests()
    error = rpc_error(client, "paymentContext.addCard", {"context": context, "card": card_input("4242 4242 4242")})
    assert_refused(error, "card.number", "incomplete", "visa")
    assert server.requests() == []
    assert client.call("paymentContext.get", {"context": context})["paymentOptions"] == []


UNIONPAY_19 = "6205500000000000004"  # Stripe's 19-digit UnionPay test card


def test_a_19_digit_unionpay_card_validates_and_confirms(start_stpd, tmp_path, stripe_test_server):
    """The bundled UnionPay range is 16 digits; the card metadata (GET /edge-internal/card-metadata
    with the publishable key, once per six-digit prefix) says 620550 is 19, as the SDK learns it."""
    server = stripe_test_server
    client = stpd_for(start_stpd, tmp_path / "stpd", server).client()
    whole = validate(client, number="6205 5000 0000 0000 004", expMonth="12", expYear=str(LAST_YEAR + 3)[2:],
                     cvc="123")
    assert whole == {"brand": "unionPay", "number": "valid", "expMonth": "valid", "expYear": "valid",
                     "cvc": "valid", "card": "valid"}
    assert validate(client, number=UNIONPAY_19[:16])["number"] == "incomplete"
    lookups = server.requests(path="/edge-internal/card-metadata")
    assert len(lookups) == 1 and lookups[0]["method"] == "GET", lookups  # cached per prefix

    pi = server.api("POST", "/v1/payment_intents", {"amount": 1099, "currency": "eur", "payment_method_types": ["card"]})
    card = {"number": UNIONPAY_19, "expMonth": 12, "expYear": LAST_YEAR + 3, "cvc": "123"}
    confirmed = client.call("paymentIntent.confirm", {"clientSecret": pi["client_secret"], "paymentMethod": {"card": card}})
    assert confirmed["paymentIntent"]["status"] == "succeeded"
    assert len(server.requests(path="/edge-internal/card-metadata")) == 1


def test_without_card_metadata_the_bundled_range_judges(start_stpd, tmp_path, stripe_test_server):
    """With a secret key stpd has no publishable key to ask the card metadata with: the bundled
    16-digit range judges, and the card is refused before any request, as before."""
    server = stripe_test_server
    client = stpd_for(start_stpd, tmp_path / "stpd", server, env={"STPD_STRIPE_KEY": server.secret_key}).client()
    assert validate(client, number=UNIONPAY_19)["number"] == "invalid"
    assert validate(client, number="6200000000000005")["number"] == "valid"
    assert server.requests() == []
