"""`stpctl payment-intent confirm` says everything paymentIntent.confirm can: the real stpctl
against stpd and the project's stripe-test-server. --payment-method-options and --shipping reach
Stripe's confirm form as the SDK sends them; --voucher chooses how a voucher is handled; a bad JSON
value is a usage error (exit 2) before anything is sent.
"""

from __future__ import annotations

import json

from test_stpctl_sources import ok, stpctl  # noqa: F401 (the fixture)

SHIPPING = {"name": "Jo Doe", "address": {"line1": "1 Main St", "city": "San Francisco", "state": "CA",
                                          "postalCode": "94107", "country": "US"}}


def test_confirm_sends_payment_method_options_and_shipping(stpctl):  # noqa: F811
    intent = stpctl.server.api("POST", "/v1/payment_intents",
                               {"amount": 5000, "currency": "usd", "payment_method_types": ["affirm"]})
    answer = ok(stpctl("payment-intent", "confirm", intent["client_secret"], "--payment-method", '{"affirm": {}}',
                       "--return-url", "myshop://back", "--shipping", json.dumps(SHIPPING),
                       "--payment-method-options", '{"raw": {"affirm": {"preferred_locale": "en-US"}}}'))
    assert answer["result"] == "pending", answer
    form = stpctl.server.requests(path=f"/v1/payment_intents/{intent['id']}/confirm")[-1]["form"]
    assert form["shipping"]["name"] == "Jo Doe" and form["shipping"]["address"]["postal_code"] == "94107", form
    assert form["payment_method_options"] == {"affirm": {"preferred_locale": "en-US"}}, form

    # Not JSON, or not the contract's shape: a usage error, and no request.
    sent = len(stpctl.server.requests(path=f"/v1/payment_intents/{intent['id']}/confirm"))
    for bad in (["--shipping", "{not json"], ["--payment-method-options", '{"card": {"network": 7}}']):
        done = stpctl("payment-intent", "confirm", intent["client_secret"], "--payment-method", '{"affirm": {}}',
                      *bad)
        assert done.returncode == 2 and bad[0] in done.stderr, (done.returncode, done.stderr)
    assert len(stpctl.server.requests(path=f"/v1/payment_intents/{intent['id']}/confirm")) == sent


def test_voucher_display_leaves_the_voucher_to_the_app(stpctl):  # noqa: F811
    intent = stpctl.server.api("POST", "/v1/payment_intents",
                               {"amount": 25000, "currency": "mxn", "payment_method_types": ["oxxo"]})
    method = json.dumps({"oxxo": {}, "billingDetails": {"name": "Jo Doe", "email": "jo@example.test"}})
    answer = ok(stpctl("payment-intent", "confirm", intent["client_secret"], "--payment-method", method,
                       "--voucher", "display"))
    assert answer["result"] == "succeeded" and answer["nextAction"]["kind"] == "display", answer
    assert stpctl("payment-intent", "confirm", intent["client_secret"], "--payment-method", method,
                  "--voucher", "print").returncode == 2
