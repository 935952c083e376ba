"""Customer sessions and intents against localstripe (a third-party, stateful Stripe fake), so
stpd's Stripe calls are checked against a server the project did not write. Of STPPaymentHandler's
flows localstripe serves SetupIntent confirmations, 3-D Secure as use_stripe_sdk, and (with its
update and `_authenticate` steps) a PaymentIntent awaiting the customer; it has no redirects, no
client-side PaymentIntent confirmation and no payment-method types but cards and SEPA.

localstripe serves no ephemeral keys and accepts only secret keys in the Authorization header,
so stpd runs with a secret test key and the `server` key provider (the daemon's own key used
directly for one customer). localstripe is started by stripe_servers.start_localstripe: its app
bound to 127.0.0.1 only, its pickle in the test's directory. The tests skip only when
localstripe cannot be imported (install requirements-test.txt).

What localstripe does differently from Stripe, and what these tests expect because of it:
- a card declined on attach (4000000000000002) answers 402 with `type: invalid_request_error`
  and `code: card_declined` and no `decline_code` (Stripe says `card_error`); stpd maps errors
  by type as the SDK does, so this is StripeInvalidRequest (3002) with `data.code`
  `card_declined` and `data.http_status` 402;
- payment-method cards always come back as brand visa, country FR; lists are oldest first.
"""

from __future__ import annotations

from codes import INVALID_STATE, NEXT_ACTION_UNSUPPORTED, STRIPE_INVALID_REQUEST
import json
import socket
import time
from typing import Any

import pytest

from flows import Events
from rpc import Client, RpcError
from stripe_servers import TEST_SECRET_KEY, http_request

READ_TIMEOUT = 30.0


def card(server, number: str) -> dict:
    """A card PaymentMethod, created with the secret key (localstripe refuses a publishable key
    here); localstripe wants exactly number, exp_month, exp_year and cvc."""
    return server.api("POST", "/v1/payment_methods", {
        "type": "card", "card": {"number": number, "exp_month": 12, "exp_year": time.gmtime().tm_year + 3, "cvc": "123"}})


def wait_event(client: Client, subscription: str, type: str, object_id: str, timeout: float = READ_TIMEOUT) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        message = client.next_notification(max(0.0, deadline - time.monotonic()))
        event = message["params"]
        assert message["method"] == "event" and event["subscription"] == subscription, message
        if event["objectId"] != object_id:
            continue
        if event["type"] == type:
            return event
        if event["type"] == "customer.failed":
            raise AssertionError(f"waiting for {type}, got customer.failed: {event['object'].get('lastError')}")


def rpc_error(client: Client, method: str, params: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        client.call(method, params)
    return caught.value


def pm_ids(client: Client, session: str) -> list[str]:
    return [m["id"] for m in client.call("customer.listPaymentMethods", {"session": session})["paymentMethods"]]


def test_localstripe_is_loopback_only(localstripe_server):
    with pytest.raises(OSError):
        socket.create_connection(("::1", localstripe_server.port), timeout=2).close()
    assert (localstripe_server.directory / "localstripe.log").exists()


def test_server_key_session_against_localstripe(start_stpd, tmp_path, localstripe_server):
    stripe = localstripe_server
    cus = stripe.api("POST", "/v1/customers", {"email": "jenny@example.com", "name": "Jenny Rosen"})["id"]
    daemon = start_stpd(tmp_path / "stpd", env={"STPD_STRIPE_KEY": TEST_SECRET_KEY,
                                                "STPD_STRIPE_API_BASE": stripe.base_url})
    client = daemon.client()
    subscription = client.call("events.subscribe", {"filter": {"types": ["customer.*"]}})["subscription"]

    opened = client.call("customer.open", {"adapter": {"kind": "stripe", "keyProvider": {"kind": "server", "customer": cus}}})
    sid = opened["id"]
    assert opened["adapter"]["keyProvider"] == {"kind": "server", "customer": cus}
    loaded = wait_event(client, subscription, "customer.loaded", sid)
    assert loaded["object"]["customerId"] == cus

    customer = client.call("customer.retrieve", {"session": sid})["customer"]
    assert customer["id"] == cus and customer["email"] == "jenny@example.com"
    assert pm_ids(client, sid) == []

    # Attach two cards, list, detach one.
    first, second = card(stripe, "4242424242424242"), card(stripe, "5555555555554444")
    for pm in (first, second):
        client.call("customer.attachPaymentMethod", {"session": sid, "paymentMethod": pm["id"]})
        wait_event(client, subscription, "customer.paymentMethodAttached", sid)
    methods = client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"]
    assert sorted(m["id"] for m in methods) == sorted([first["id"], second["id"]])
    assert {m["card"]["last4"] for m in methods} == {"4242", "4444"}
    assert stripe.api("GET", f"/v1/payment_methods/{first['id']}")["customer"] == cus

    client.call("customer.selectPaymentMethod", {"session": sid, "paymentMethod": first["id"]})
    detached = client.call("customer.detachPaymentMethod", {"session": sid, "paymentMethod": first["id"]})
    assert detached["lastSelectedPaymentMethod"] == first["id"]  # as STPCustomerContext leaves it
    wait_event(client, subscription, "customer.paymentMethodDetached", sid)
    assert pm_ids(client, sid) == [second["id"]]
    assert stripe.api("GET", f"/v1/payment_methods/{first['id']}")["customer"] is None

    # A card localstripe declines on attach (see the module's docstring for the error's shape).
    declined = card(stripe, "4000000000000002")
    error = rpc_error(client, "customer.attachPaymentMethod", {"session": sid, "paymentMethod": declined["id"]})
    assert error.code == STRIPE_INVALID_REQUEST, error
    assert error.data["code"] == "card_declined" and error.data["http_status"] == 402, error.data
    assert error.data["type"] == "invalid_request_error" and error.data["decline_code"] is None
    failed = wait_event(client, subscription, "customer.failed", sid)
    assert failed["object"]["lastError"]["operation"] == "attachPaymentMethod"
    assert pm_ids(client, sid) == [second["id"]]
    assert stripe.api("GET", f"/v1/payment_methods/{declined['id']}")["customer"] is None

    # Shipping: localstripe stores what stpd sends.
    client.call("customer.updateShipping", {"session": sid, "shipping": {
        "name": "Jenny Rosen", "phone": "+15555550100",
        "address": {"line1": "1 Main St", "city": "Springfield", "postalCode": "12345", "country": "US"}}})
    wait_event(client, subscription, "customer.shippingUpdated", sid)
    stored = stripe.api("GET", f"/v1/customers/{cus}")["shipping"]
    assert stored["name"] == "Jenny Rosen" and stored["phone"] == "+15555550100"
    assert stored["address"]["line1"] == "1 Main St" and stored["address"]["postal_code"] == "12345"
    assert stored["address"]["city"] == "Springfield" and stored["address"]["country"] == "US"
    client.call("customer.clearCache", {"session": sid})
    shipping = client.call("customer.retrieve", {"session": sid})["customer"]["shipping"]
    assert shipping["address"]["postal_code"] == "12345"

    client.call("customer.close", {"session": sid})
    assert rpc_error(client, "customer.retrieve", {"session": sid}).code == INVALID_STATE


# -- Intents: what localstripe serves of STPPaymentHandler's flows --------------------------------

def localstripe_stpd(start_stpd, tmp_path, stripe):
    return start_stpd(tmp_path / "stpd", env={"STPD_STRIPE_KEY": TEST_SECRET_KEY,
                                              "STPD_STRIPE_API_BASE": stripe.base_url})


def test_setup_intents_confirm_and_3ds_without_a_return_url(start_stpd, tmp_path, localstripe_server):
    """A card SetupIntent confirms (the card as payment_method_data, no client secret from a secret
    key); a 3-D Secure card comes back as use_stripe_sdk's three_d_secure_redirect with an empty
    stripe_js, a page the SDK cannot open either ("missing redirect URL"): NextActionUnsupported."""
    stripe = localstripe_server
    client = localstripe_stpd(start_stpd, tmp_path, stripe).client()
    card = {"number": "4242424242424242", "expMonth": 12, "expYear": time.gmtime().tm_year + 3, "cvc": "123"}
    plain = stripe.api("POST", "/v1/setup_intents", {})
    answer = client.call("setupIntent.confirm", {"clientSecret": plain["client_secret"], "paymentMethod": {"card": card}})
    assert (answer["result"], answer["setupIntent"]["status"]) == ("succeeded", "succeeded"), answer

    secure = stripe.api("POST", "/v1/setup_intents", {})
    answer = client.call("setupIntent.confirm", {"clientSecret": secure["client_secret"],
                                                 "paymentMethod": {"card": {**card, "number": "4000002500003155"}}})
    assert answer["result"] == "failed" and answer["nextAction"]["type"] == "use_stripe_sdk", answer
    assert answer["error"]["code"] == NEXT_ACTION_UNSUPPORTED


def test_a_server_confirmed_payment_intent_is_polled_until_authenticated(start_stpd, tmp_path, localstripe_server):
    """handleNextAction on a PaymentIntent the merchant's server confirmed: 3-D Secure's
    use_stripe_sdk's redirect form has no page to open (stripe_js is empty); a next action that awaits the customer (injected with
    localstripe's update) is polled until localstripe's authentication step ends it."""
    stripe = localstripe_server
    client = localstripe_stpd(start_stpd, tmp_path, stripe).client()
    events = Events(client, ["paymentIntent.*"])
    pm = card(stripe, "4000002500003155")["id"]
    confirmed = stripe.api("POST", "/v1/payment_intents", {"amount": 1000, "currency": "eur", "payment_method": pm,
                                                           "confirm": "true"})
    assert confirmed["status"] == "requires_action", confirmed
    retrieved = client.call("paymentIntent.retrieve", {"clientSecret": confirmed["client_secret"]})
    assert retrieved["nextAction"]["kind"] == "redirect"
    answer = client.call("paymentIntent.handleNextAction", {"clientSecret": confirmed["client_secret"]})
    assert answer["result"] == "failed" and answer["error"]["code"] == NEXT_ACTION_UNSUPPORTED

    intent = stripe.api("POST", "/v1/payment_intents", {"amount": 1000, "currency": "eur", "payment_method": pm})
    reply = http_request("POST", f"{stripe.base_url}/v1/payment_intents/{intent['id']}",
                         body=json.dumps({"next_action": {"type": "blik_authorize", "blik_authorize": {}}}).encode(),
                         headers={"Authorization": f"Bearer {TEST_SECRET_KEY}", "Content-Type": "application/json"})
    assert reply.status == 200 and reply.json()["status"] == "requires_action", reply
    answer = client.call("paymentIntent.handleNextAction", {"clientSecret": intent["client_secret"]})
    assert answer["result"] == "pending" and answer["poll"]["nextActionType"] == "blik_authorize", answer
    stripe.api("POST", f"/v1/payment_intents/{intent['id']}/_authenticate?success=true",
               {"client_secret": intent["client_secret"]})
    done = events.wait("paymentIntent.finished", intent["id"])["object"]
    assert (done["status"], done["poll"]["result"]) == ("succeeded", "succeeded"), done
