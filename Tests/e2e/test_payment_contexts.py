"""Payment contexts (the SDK's STPPaymentContext, `paymentContext.*`) end to end: the real stpd
binary and its socket, over customer sessions whose adapter is Stripe with the daemon's own key
(`keyProvider: server`; stpd runs with the stand-in's secret key), against the project's
stripe-test-server and, for the card flows it can serve, localstripe.

1. loading: a customer's saved cards, sorted by label; preselection of the customer's last
   selected card (customer.selectPaymentMethod, paymentContext.selectPaymentMethod) and of
   defaultPaymentMethod; removing an option;
2. addCard: the card is created, attached to the customer at Stripe and selected; a declined
   card changes nothing;
3. shipping: didUpdateShippingAddress answered invalid, then valid with methods (total, summary
   items, the selected-method rule); without validatesShipping an address is accepted directly
   and saved to the customer at Stripe;
4. requestPayment: didCreatePaymentResult answered success, error and userCancellation; a second
   answer or an unknown action is PendingActionGone (5001); needs paymentOption, then
   selectPaymentMethod goes on; cancel finishes with userCancellation; choosing a card or an
   address outside a request does not pay;
5. a load that fails (a fault at the stripe-test-server; a customer that does not exist), then
   retryLoading;
6. stpd-managed PaymentIntents on the stripe-test-server: a 3-D Secure redirect through a
   redirect session to success (and to failure), a card without authentication, a decline; asked
   while the context (re)loads (the request waits for loading) and after it;
7. localstripe: addCard, a payment that succeeds and one declined through didCreatePaymentResult,
   the test paying at localstripe itself (see test_localstripe_card_flows for why);
8. durability: kill -9 with a didCreatePaymentResult pending action, restart, answer it; pending
   action deadlines (PendingActionTimedOut, 5002), also across a restart.

Waits are on events (events.subscribe) and replies, never on sleeps. Every reply and
notification is checked against the contract by the conftest's checker.
"""

from __future__ import annotations

import json
import urllib.parse

import pytest

from contexts import (INVALID_PARAMS, INVALID_STATE, NOT_FOUND, PAYMENT_FAILED, PENDING_ACTION_GONE,
                      PENDING_ACTION_TIMED_OUT, STRIPE_CARD_ERROR, STRIPE_INVALID_REQUEST, ContextEvents,
                      card_input, connected, open_session, saved_card, shipping_address, stpd_with_secret_key)
from codes import SHIPPING_ADDRESS_INCOMPLETE
from flows import bank_page, http_get, query_items, rpc_error
from stripe_servers import http_request

COMPANY = "Rocket Rides"
RETURN_URL = "rocketrides://stripe-redirect?order=7"


def create(client, session: str, **params) -> dict:
    return client.call("paymentContext.create", {"session": session, **params})


def create_loaded(client, events: ContextEvents, session: str, **params) -> dict:
    """Creates a context and returns its state once loaded."""
    params.setdefault("configuration", {"companyName": COMPANY})
    created = create(client, session, **params)
    return events.loaded(created["id"])


def summary(*items: tuple[str, int, str]) -> list[dict]:
    return [{"label": label, "amount": amount, "decimal": decimal} for label, amount, decimal in items]


def request_until_pending(client, events: ContextEvents, context: str, **params) -> dict:
    """requestPayment, up to its didCreatePaymentResult pending action (returned)."""
    client.call("paymentContext.requestPayment", {"context": context, **params})
    state = events.context("paymentContext.pendingAction", context,
                           lambda o: (o.get("pendingAction") or {}).get("kind") == "didCreatePaymentResult")
    pending = state["pendingAction"]
    assert pending["kind"] == "didCreatePaymentResult" and pending["id"].startswith("pact_"), state
    assert state["requestState"] == "requestingPayment" and state.get("needs") is None
    return pending


# -- 1. loading and preselection -----------------------------------------------------------------

def test_saved_cards_load_sorted_and_preselected(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    mastercard = saved_card(server, cus, "5555555555554444")
    amex = saved_card(server, cus, "378282246310005", cvc="1234")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)

    # Nothing selected before: no default, no last selected card.
    created = create(client, sid, amount=1099, configuration={"companyName": COMPANY})
    ctx = created["id"]
    assert ctx.startswith("pctx_") and created["object"] == "payment_context" and created["customerSession"] == sid
    assert created["loading"] is True and created["status"] == "open"
    assert (created["currency"], created["country"], created["amount"]) == ("USD", "US", 1099)
    assert created["requestState"] == "none" and created.get("needs") is None and created.get("pendingAction") is None
    assert events.wait("paymentContext.created", ctx)["object"]["loading"] is True
    loaded = events.loaded(ctx)
    assert [o["label"] for o in loaded["paymentOptions"]] == ["American Express 0005", "Mastercard 4444", "Visa 4242"]
    assert [o["id"] for o in loaded["paymentOptions"]] == [amex["id"], mastercard["id"], visa["id"]]
    for option in loaded["paymentOptions"]:
        assert option["type"] == "card" and option["paymentMethod"]["id"] == option["id"]
        assert option["paymentMethod"]["customer"] == cus
    assert loaded.get("selectedPaymentMethod") is None and loaded["isReadyForPayment"] is False
    assert loaded["paymentAmount"] == 1099
    assert loaded["paymentSummaryItems"] == summary((COMPANY, 1099, "10.99"))
    assert loaded.get("loadError") is None and loaded.get("shippingAddress") is None
    assert client.call("paymentContext.get", {"context": ctx}) == loaded

    # The customer's last selected card (customer.selectPaymentMethod) is preselected.
    client.call("customer.selectPaymentMethod", {"session": sid, "paymentMethod": mastercard["id"]})
    second = create_loaded(client, events, sid, amount=1099)
    assert second["selectedPaymentMethod"] == mastercard["id"] and second["isReadyForPayment"] is True

    # defaultPaymentMethod wins over the last selected one.
    third = create_loaded(client, events, sid, amount=1099, defaultPaymentMethod=amex["id"])
    assert third["selectedPaymentMethod"] == amex["id"]
    # A default that is not one of the customer's cards selects nothing.
    stranger = server.create_card_payment_method("4242424242424242")
    fourth = create_loaded(client, events, sid, amount=1099, defaultPaymentMethod=stranger["id"])
    assert fourth.get("selectedPaymentMethod") is None and len(fourth["paymentOptions"]) == 3

    # Selecting in a context is remembered as the customer's last selected card.
    picked = client.call("paymentContext.selectPaymentMethod", {"context": ctx, "paymentMethod": visa["id"]})
    assert picked["selectedPaymentMethod"] == visa["id"] and picked["isReadyForPayment"] is True
    assert events.context("paymentContext.didChange", ctx)["selectedPaymentMethod"] == visa["id"]
    # Saved without the call waiting for it, as the SDK's options screen saves it.
    events.seen_or_wait("customer.paymentMethodSelected", sid,
                        where=lambda e: e["object"].get("lastSelectedPaymentMethod") == visa["id"])
    assert client.call("customer.get", {"session": sid})["lastSelectedPaymentMethod"] == visa["id"]
    fifth = create_loaded(client, events, sid, amount=1099)
    assert fifth["selectedPaymentMethod"] == visa["id"]
    # Only one of the options can be selected.
    error = rpc_error(client, "paymentContext.selectPaymentMethod", {"context": ctx, "paymentMethod": stranger["id"]})
    assert error.code == NOT_FOUND, error

    # Amount and currency: a zero-decimal currency has no decimals.
    updated = client.call("paymentContext.update", {"context": ctx, "amount": 500, "currency": "jpy"})
    assert updated["currency"] == "JPY" and updated["paymentSummaryItems"] == summary((COMPANY, 500, "500"))

    # Removing the selected option detaches it at Stripe and selects the first remaining one.
    removed = client.call("paymentContext.removePaymentMethod", {"context": ctx, "paymentMethod": visa["id"]})
    assert [o["id"] for o in removed["paymentOptions"]] == [amex["id"], mastercard["id"]]
    assert removed["selectedPaymentMethod"] == amex["id"]
    assert server.api("GET", f"/v1/payment_methods/{visa['id']}")["customer"] is None

    listed = [c["id"] for c in client.call("paymentContext.list")["contexts"]]
    assert listed == [ctx, second["id"], third["id"], fourth["id"], fifth["id"]]
    error = rpc_error(client, "paymentContext.get", {"context": "pctx_000000000000000000000000"})
    assert error.code == NOT_FOUND, error

    # A closed context stays readable and refuses changes.
    closed = client.call("paymentContext.close", {"context": ctx})
    assert closed["status"] == "closed"
    events.wait("paymentContext.closed", ctx)
    error = rpc_error(client, "paymentContext.selectPaymentMethod", {"context": ctx, "paymentMethod": amex["id"]})
    assert error.code == INVALID_STATE, error
    assert client.call("paymentContext.get", {"context": ctx})["status"] == "closed"


# -- 2. addCard ----------------------------------------------------------------------------------

def test_a_context_needs_an_open_session_of_the_callers(start_stpd, tmp_path, stripe_test_server):
    """The domain's rule (PaymentContexts.create): a closed session is InvalidState, an unknown one
    NotFound, and nothing is created."""
    server = stripe_test_server
    customer = server.api("POST", "/v1/customers", {})["id"]
    daemon, events, client, session = connected(start_stpd, tmp_path / "stpd", server, customer)
    client.call("customer.close", {"session": session})
    error = rpc_error(client, "paymentContext.create", {"session": session, "amount": 100})
    assert error.code == INVALID_STATE and error.data["state"] == "closed", error
    assert f"customer session {session} is closed" in error.message
    error = rpc_error(client, "paymentContext.create", {"session": "cses_00000000000000000000000000000000"})
    assert error.code == NOT_FOUND, error
    assert client.call("paymentContext.list", {})["contexts"] == []


def test_add_card_attaches_and_selects(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    cus = server.create_customer(email="new@example.com")["id"]
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    loaded = create_loaded(client, events, sid, amount=2500)
    ctx = loaded["id"]
    assert loaded["paymentOptions"] == [] and loaded.get("selectedPaymentMethod") is None

    added = client.call("paymentContext.addCard", {"context": ctx, "card": card_input("4242424242424242")})
    visa = added["selectedPaymentMethod"]
    assert visa and visa.startswith("pm_"), added
    assert [(o["id"], o["label"]) for o in added["paymentOptions"]] == [(visa, "Visa 4242")]
    assert added["isReadyForPayment"] is True
    assert events.context("paymentContext.didChange", ctx, lambda o: o.get("selectedPaymentMethod") == visa)
    # Attached to the customer at Stripe, listed by the session, remembered as last selected.
    assert server.api("GET", f"/v1/payment_methods/{visa}")["customer"] == cus
    listed = client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"]
    assert [m["id"] for m in listed] == [visa]
    events.seen_or_wait("customer.paymentMethodSelected", sid,
                        where=lambda e: e["object"].get("lastSelectedPaymentMethod") == visa)
    assert client.call("customer.get", {"session": sid})["lastSelectedPaymentMethod"] == visa
    # The card number never comes back.
    assert "4242424242424242" not in json.dumps(added)

    added = client.call("paymentContext.addCard", {"context": ctx, "card": card_input("5555555555554444")})
    mastercard = added["selectedPaymentMethod"]
    assert [(o["id"], o["label"]) for o in added["paymentOptions"]] == [(mastercard, "Mastercard 4444"), (visa, "Visa 4242")]
    assert server.api("GET", f"/v1/payment_methods/{mastercard}")["customer"] == cus

    # A card Stripe declines on attach: StripeCardError, and the context is unchanged.
    error = rpc_error(client, "paymentContext.addCard", {"context": ctx, "card": card_input("4000000000000002")})
    assert error.code == STRIPE_CARD_ERROR, error
    assert error.data["code"] == "card_declined" and error.data["decline_code"] == "generic_decline", error.data
    after = client.call("paymentContext.get", {"context": ctx})
    assert [o["id"] for o in after["paymentOptions"]] == [mastercard, visa] and after["selectedPaymentMethod"] == mastercard

    # A new context over the same customer loads both and preselects the last added card.
    again = create_loaded(client, events, sid, amount=2500)
    assert [o["id"] for o in again["paymentOptions"]] == [mastercard, visa]
    assert again["selectedPaymentMethod"] == mastercard


def test_add_card_demands_stripe_ios_23s_billing_fields(start_stpd, tmp_path, stripe_test_server):
    """STPAddCardViewController submits only with the configuration's requiredBillingAddressFields
    (default postalCode; a postal code is needed when the country is unknown)."""
    server = stripe_test_server
    cus = server.create_customer(email="new@example.com")["id"]
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    ctx = create_loaded(client, events, sid, amount=2500)["id"]
    card = card_input("4242424242424242")
    del card["zip"]
    error = rpc_error(client, "paymentContext.addCard", {"context": ctx, "card": card})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "card.zip", error
    full = create_loaded(client, events, sid, amount=2500, configuration={"requiredBillingAddressFields": "full"})
    error = rpc_error(client, "paymentContext.addCard", {"context": full["id"], "card": card_input("4242424242424242")})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "card.addressLine1", error
    assert server.requests(path="/v1/payment_methods", method="POST") == []
    address = {"name": "Jenny Rosen", "addressLine1": "1 Main St", "city": "Austin", "state": "TX", "country": "US"}
    added = client.call("paymentContext.addCard", {"context": full["id"], "card": {**card_input("4242424242424242"),
                                                                                     **address, "zip": "78701"}})
    pm = server.api("GET", f"/v1/payment_methods/{added['selectedPaymentMethod']}")
    assert pm["billing_details"]["address"]["postal_code"] == "78701" and pm["billing_details"]["name"] == "Jenny Rosen"


def test_the_apps_own_payment_summary_items(start_stpd, tmp_path, stripe_test_server):
    """STPPaymentContext.paymentSummaryItems set by the app: the last is the total; setting
    paymentAmount replaces them."""
    server = stripe_test_server
    cus = server.create_customer(email="new@example.com")["id"]
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    ctx = create_loaded(client, events, sid, amount=2500, configuration={"companyName": COMPANY})["id"]
    own = client.call("paymentContext.update", {"context": ctx, "paymentSummaryItems": [
        {"label": "Book", "amount": 1800}, {"label": "Tax", "amount": 200}, {"label": "Acme Books", "amount": 2000}]})
    assert own["paymentSummaryItems"] == summary(("Book", 1800, "18.00"), ("Tax", 200, "2.00"),
                                                 ("Acme Books", 2000, "20.00"))
    assert own["paymentAmount"] == 2000
    back = client.call("paymentContext.update", {"context": ctx, "amount": 700})
    assert back["paymentSummaryItems"] == summary((COMPANY, 700, "7.00"))
    error = rpc_error(client, "paymentContext.update", {"context": ctx, "amount": 1, "paymentSummaryItems": [
        {"label": "x", "amount": 1}]})
    assert error.code == INVALID_PARAMS, error


# Serial: the calling app is this process, which is `python -m pytest` only outside an xdist worker.
@pytest.mark.serial
def test_company_name_defaults_to_the_calling_apps_name(start_stpd, tmp_path, stripe_test_server):
    """companyName follows the rule of Sources' redirect_merchant_name: the configuration's, else
    STPD_MERCHANT_NAME, else the calling app's name (this test runs in `python -m pytest`)."""
    server = stripe_test_server
    cus = server.create_customer(email="new@example.com")["id"]
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    loaded = create_loaded(client, events, sid, amount=700, configuration={})
    assert loaded["configuration"]["companyName"] == "pytest"
    assert loaded["paymentSummaryItems"] == summary(("pytest", 700, "7.00"))
    # No items at all, as the SDK takes them: none shown, nothing to pay without a shipping method.
    empty = client.call("paymentContext.update", {"context": loaded["id"], "paymentSummaryItems": []})
    assert empty["paymentSummaryItems"] == [] and empty["paymentAmount"] == 0


# -- 3. shipping ---------------------------------------------------------------------------------

def test_shipping_validated_by_the_app(start_stpd, tmp_path, stripe_test_server):
    """The customer picks a card only at the end."""
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    loaded = create_loaded(client, events, sid, amount=2000, validatesShipping=True,
                           configuration={"companyName": COMPANY, "requiredShippingAddressFields": ["postalAddress"]})
    ctx = loaded["id"]
    assert loaded["validatesShipping"] is True and loaded.get("shippingAddress") is None
    assert loaded.get("selectedPaymentMethod") is None

    # The app is asked; it refuses the address.
    nowhere = shipping_address(line1="1 Nowhere Rd", city="Nowhere", postal_code="99999")
    asked = client.call("paymentContext.setShippingAddress", {"context": ctx, "address": nowhere})
    pending = asked["pendingAction"]
    assert pending["kind"] == "didUpdateShippingAddress" and pending["id"].startswith("pact_")
    event = events.context("paymentContext.pendingAction", ctx)
    assert event["pendingAction"] == pending
    assert pending["payload"]["address"]["address"]["line1"] == "1 Nowhere Rd"
    assert pending["payload"]["address"]["name"] == "Jenny Rosen"
    # One address at a time.
    error = rpc_error(client, "paymentContext.setShippingAddress", {"context": ctx, "address": shipping_address()})
    assert error.code == INVALID_STATE, error
    # An answer of the other kind is refused.
    error = rpc_error(client, "paymentContext.answer", {"action": pending["id"], "status": "success"})
    assert error.code == INVALID_PARAMS, error
    client.call("paymentContext.answer", {"action": pending["id"], "status": "invalid",
                                          "error": {"message": "We do not ship to Nowhere"}})
    refused = events.context("paymentContext.shippingInvalid", ctx)
    assert refused["shippingError"]["code"] == PAYMENT_FAILED, refused["shippingError"]
    assert refused["shippingError"]["data"]["message"] == "We do not ship to Nowhere"
    assert "We do not ship to Nowhere" in refused["shippingError"]["message"]
    assert refused.get("shippingAddress") is None and refused.get("pendingAction") is None
    assert refused.get("selectedShippingMethod") is None and refused["paymentAmount"] == 2000
    error = rpc_error(client, "paymentContext.answer", {"action": pending["id"], "status": "valid"})
    assert error.code == PENDING_ACTION_GONE, error

    # A valid answer with methods: the preferred one is selected and the total includes it.
    methods = [{"identifier": "ground", "label": "Ground", "amount": 0},
               {"identifier": "express", "label": "Express", "detail": "Tomorrow", "amount": 1500}]
    asked = client.call("paymentContext.setShippingAddress", {"context": ctx, "address": shipping_address()})
    accepted = client.call("paymentContext.answer", {"action": asked["pendingAction"]["id"], "status": "valid",
                                                     "shippingMethods": methods, "selectedShippingMethod": "express"})
    state = events.context("paymentContext.didChange", ctx, lambda o: o.get("shippingAddress") is not None)
    for view in (accepted, state):
        assert view["shippingAddress"]["address"]["line1"] == "1 Main St" and view["shippingAddress"]["name"] == "Jenny Rosen"
        assert view["shippingAddressNeedsVerification"] is False and view.get("shippingError") is None
        assert [m["identifier"] for m in view["shippingMethods"]] == ["ground", "express"]
        assert view["selectedShippingMethod"] == "express" and view["amount"] == 2000
        assert view["paymentAmount"] == 3500
        assert view["paymentSummaryItems"] == summary(("Express", 1500, "15.00"), (COMPANY, 3500, "35.00"))
        assert view.get("pendingAction") is None
    # The accepted address is saved to the customer too.
    events.seen_or_wait("customer.shippingUpdated", sid)
    assert server.api("GET", f"/v1/customers/{cus}")["shipping"]["address"]["line1"] == "1 Main St"

    chosen = client.call("paymentContext.selectShippingMethod", {"context": ctx, "shippingMethod": "ground"})
    assert chosen["selectedShippingMethod"] == "ground" and chosen["paymentAmount"] == 2000
    assert chosen["paymentSummaryItems"] == summary(("Ground", 0, "0.00"), (COMPANY, 2000, "20.00"))
    error = rpc_error(client, "paymentContext.selectShippingMethod", {"context": ctx, "shippingMethod": "teleport"})
    assert error.code == NOT_FOUND, error

    def answer_valid(methods: list[dict], selected: str | None = None) -> dict:
        asked = client.call("paymentContext.setShippingAddress", {"context": ctx, "address": shipping_address()})
        answer = {"action": asked["pendingAction"]["id"], "status": "valid", "shippingMethods": methods}
        if selected is not None:
            answer["selectedShippingMethod"] = selected
        return client.call("paymentContext.answer", answer)

    # The v19 rule: the selected method missing from the new list → the first one.
    overnight = {"identifier": "overnight", "label": "Overnight", "amount": 2500}
    pickup = {"identifier": "pickup", "label": "Pick-up", "amount": 0}
    view = answer_valid([overnight, pickup])
    assert view["selectedShippingMethod"] == "overnight" and view["paymentAmount"] == 4500
    # ... still offered → kept (also when the preferred one is not offered).
    view = answer_valid([pickup, overnight])
    assert view["selectedShippingMethod"] == "overnight"
    view = answer_valid([pickup, overnight], selected="teleport")
    assert view["selectedShippingMethod"] == "overnight"
    # ... a preferred one that is offered wins.
    view = answer_valid([pickup, overnight], selected="pickup")
    assert view["selectedShippingMethod"] == "pickup" and view["paymentAmount"] == 2000
    # ... no methods → none selected; the total is the amount alone.
    view = answer_valid([])
    assert view.get("selectedShippingMethod") is None and view["shippingMethods"] == []
    assert view["paymentAmount"] == 2000 and view["paymentSummaryItems"] == summary((COMPANY, 2000, "20.00"))

    # Pay with a method selected: the address needs no more input.
    view = answer_valid([overnight, pickup], selected="overnight")
    client.call("paymentContext.selectPaymentMethod", {"context": ctx, "paymentMethod": visa["id"]})
    pending = request_until_pending(client, events, ctx)
    assert pending["payload"]["paymentMethod"]["id"] == visa["id"]
    client.call("paymentContext.answer", {"action": pending["id"], "status": "success"})
    assert events.context("paymentContext.didFinish", ctx)["lastResult"]["status"] == "success"


def test_shipping_accepted_without_validation_and_saved(start_stpd, tmp_path, stripe_test_server):
    """Without validatesShipping the SDK accepts an address at once; requestPayment asks for one
    when required fields are missing or the customer's saved address is not yet verified."""
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com", shipping={
        "name": "Old Name", "address": {"line1": "9 Old Rd", "city": "Oldtown", "state": "NY",
                                        "postal_code": "10001", "country": "US"}})["id"]
    visa = saved_card(server, cus, "4242424242424242")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)

    loaded = create_loaded(client, events, sid, amount=1000, defaultPaymentMethod=visa["id"], configuration={
        "companyName": COMPANY, "requiredShippingAddressFields": ["postalAddress", "name", "phoneNumber"]})
    ctx = loaded["id"]
    # The customer's saved address is copied in, to be verified.
    assert loaded["shippingAddress"]["address"]["line1"] == "9 Old Rd" and loaded["shippingAddress"]["name"] == "Old Name"
    assert loaded["shippingAddressNeedsVerification"] is True

    client.call("paymentContext.requestPayment", {"context": ctx})
    needs = events.context("paymentContext.needsInput", ctx)
    assert needs["needs"] == "shippingAddress" and needs["requestState"] == "requestingPayment"
    assert needs.get("pendingAction") is None

    # Accepted at once (no pending action), saved to the customer, and requestPayment goes on.
    address = shipping_address(name="Jenny Rosen", line1="1 Main St", city="San Francisco", state="CA",
                               postal_code="94105", phone="415 555 0100")
    view = client.call("paymentContext.setShippingAddress", {"context": ctx, "address": address})
    assert view["shippingAddress"]["address"]["line1"] == "1 Main St" and view["shippingAddressNeedsVerification"] is False
    state = events.context("paymentContext.pendingAction", ctx)
    assert state["pendingAction"]["kind"] == "didCreatePaymentResult" and state.get("needs") is None
    assert [e["object"]["pendingAction"]["kind"] for e in events.read_for(ctx, "paymentContext.pendingAction")] \
        == ["didCreatePaymentResult"]
    assert state.get("shippingMethods") is None and state["paymentAmount"] == 1000

    events.seen_or_wait("customer.shippingUpdated", sid)
    shipping = server.api("GET", f"/v1/customers/{cus}")["shipping"]
    assert shipping["name"] == "Jenny Rosen" and shipping["phone"] == "415 555 0100", shipping
    assert shipping["address"]["line1"] == "1 Main St" and shipping["address"]["city"] == "San Francisco"
    assert shipping["address"]["state"] == "CA" and shipping["address"]["postal_code"] == "94105"
    assert shipping["address"]["country"] == "US"

    client.call("paymentContext.answer", {"action": state["pendingAction"]["id"], "status": "success"})
    assert events.context("paymentContext.didFinish", ctx)["lastResult"]["status"] == "success"

    # An incomplete address (no phone, which is required; a ZIP cut short) is refused, naming what
    # is missing, as the SDK's form does not submit it: neither the context nor the customer takes it.
    incomplete = shipping_address(phone=None, postal_code="9410")
    error = rpc_error(client, "paymentContext.setShippingAddress", {"context": ctx, "address": incomplete})
    assert error.code == SHIPPING_ADDRESS_INCOMPLETE, error
    assert error.data["parameters"] == ["address.address.postalCode", "address.phone"], error.data
    assert error.data["fields"] == ["postalAddress", "phoneNumber"]
    assert error.data["parameter"] == "address.address.postalCode"
    assert client.call("paymentContext.get", {"context": ctx})["shippingAddress"]["phone"] == "415 555 0100"
    assert server.api("GET", f"/v1/customers/{cus}")["shipping"]["phone"] == "415 555 0100"


# -- 4. requestPayment ---------------------------------------------------------------------------

@pytest.mark.parametrize("status, error", [
    ("success", None),
    ("error", {"message": "Our server could not create the charge", "code": "backend_down"}),
    ("userCancellation", None),
])
def test_request_payment_answered(start_stpd, tmp_path, stripe_test_server, status, error):
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    ctx = create(client, sid, amount=1099, defaultPaymentMethod=visa["id"])["id"]

    # Asked right after create: the request waits for loading (the SDK's promise), then goes on.
    client.call("paymentContext.requestPayment", {"context": ctx})
    state = events.context("paymentContext.pendingAction", ctx)
    assert state["loading"] is False and state["selectedPaymentMethod"] == visa["id"]
    pending = state["pendingAction"]
    assert pending["kind"] == "didCreatePaymentResult" and pending["deadline"]
    assert pending["payload"]["paymentMethod"]["id"] == visa["id"]
    assert pending["payload"]["paymentMethod"]["card"]["last4"] == "4242"
    assert client.call("paymentContext.get", {"context": ctx})["pendingAction"] == pending

    # A second requestPayment while one runs is ignored (no new pending action).
    again = client.call("paymentContext.requestPayment", {"context": ctx})
    assert again["pendingAction"]["id"] == pending["id"]
    # Nothing waits for input, so there is nothing to cancel.
    assert rpc_error(client, "paymentContext.cancel", {"context": ctx}).code == INVALID_STATE

    answer = {"action": pending["id"], "status": status}
    if error:
        answer["error"] = error
    replied = client.call("paymentContext.answer", answer)
    finished = events.context("paymentContext.didFinish", ctx)
    for view in (replied, finished):
        assert view["lastResult"]["status"] == status
        assert view["requestState"] == "none" and view.get("pendingAction") is None and view.get("needs") is None
    if error:
        failure = finished["lastResult"]["error"]
        assert failure["code"] == PAYMENT_FAILED and error["message"] in failure["message"], failure
        assert failure["data"] == {"message": error["message"], "code": "backend_down"}
    else:
        assert finished["lastResult"].get("error") is None
    # didCreatePaymentResult came before didFinish, once each.
    types = [t for t in events.types_for(ctx) if t in ("paymentContext.pendingAction", "paymentContext.didFinish")]
    assert types == ["paymentContext.pendingAction", "paymentContext.didFinish"]

    # A completion is called once; unknown actions are gone too.
    assert rpc_error(client, "paymentContext.answer", answer).code == PENDING_ACTION_GONE
    assert rpc_error(client, "paymentContext.answer", {"action": "pact_000000000000000000000000",
                                                       "status": "success"}).code == PENDING_ACTION_GONE

    # The next request starts over with a new pending action.
    second = request_until_pending(client, events, ctx)
    assert second["id"] != pending["id"]
    client.call("paymentContext.answer", {"action": second["id"], "status": "success"})
    assert events.context("paymentContext.didFinish", ctx)["lastResult"]["status"] == "success"


def test_request_payment_needs_a_payment_option(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    loaded = create_loaded(client, events, sid, amount=1099)
    ctx = loaded["id"]
    assert loaded.get("selectedPaymentMethod") is None

    # Nothing selected: the options screen; the customer backs out → userCancellation.
    client.call("paymentContext.requestPayment", {"context": ctx})
    needs = events.context("paymentContext.needsInput", ctx)
    assert needs["needs"] == "paymentOption" and needs["requestState"] == "requestingPayment"
    assert needs.get("pendingAction") is None
    cancelled = client.call("paymentContext.cancel", {"context": ctx})
    finished = events.context("paymentContext.didFinish", ctx)
    for view in (cancelled, finished):
        assert view["lastResult"]["status"] == "userCancellation" and view["lastResult"].get("error") is None
        assert view["requestState"] == "none" and view.get("needs") is None
    assert "paymentContext.pendingAction" not in events.types_for(ctx)

    # Again; this time the customer picks a card and the request goes on to didCreatePaymentResult.
    client.call("paymentContext.requestPayment", {"context": ctx})
    assert events.context("paymentContext.needsInput", ctx)["needs"] == "paymentOption"
    client.call("paymentContext.selectPaymentMethod", {"context": ctx, "paymentMethod": visa["id"]})
    state = events.context("paymentContext.pendingAction", ctx)
    assert state["pendingAction"]["kind"] == "didCreatePaymentResult" and state.get("needs") is None
    assert state["pendingAction"]["payload"]["paymentMethod"]["id"] == visa["id"]
    client.call("paymentContext.answer", {"action": state["pendingAction"]["id"], "status": "success"})
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "success" and finished["lastResult"].get("error") is None

    # A card added while the options screen shows goes on the same way.
    other_session = open_session(client, server.create_customer(email="other@example.com")["id"])
    fresh = create_loaded(client, events, other_session, amount=1099)
    client.call("paymentContext.requestPayment", {"context": fresh["id"]})
    assert events.context("paymentContext.needsInput", fresh["id"])["needs"] == "paymentOption"
    added = client.call("paymentContext.addCard", {"context": fresh["id"], "card": card_input("5555555555554444")})
    state = events.context("paymentContext.pendingAction", fresh["id"])
    assert state["pendingAction"]["payload"]["paymentMethod"]["id"] == added["selectedPaymentMethod"]
    assert state["customerSession"] == other_session
    client.call("paymentContext.answer", {"action": state["pendingAction"]["id"], "status": "userCancellation"})
    assert events.context("paymentContext.didFinish", fresh["id"])["lastResult"]["status"] == "userCancellation"




@pytest.mark.parametrize("trigger", ["selectPaymentMethod", "addCard", "setShippingAddress", "answerValid"])
def test_choosing_without_a_request_does_not_pay(start_stpd, tmp_path, stripe_test_server, trigger):
    """Only requestPayment starts a payment: choosing a card or an address outside one changes
    the selection and nothing else."""
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    preselect = {} if trigger == "selectPaymentMethod" else {"defaultPaymentMethod": visa["id"]}
    ctx = create_loaded(client, events, sid, amount=1000, validatesShipping=trigger == "answerValid", **preselect)["id"]
    if trigger == "selectPaymentMethod":
        reply = client.call("paymentContext.selectPaymentMethod", {"context": ctx, "paymentMethod": visa["id"]})
    elif trigger == "addCard":
        reply = client.call("paymentContext.addCard", {"context": ctx, "card": card_input("5555555555554444")})
    elif trigger == "setShippingAddress":
        reply = client.call("paymentContext.setShippingAddress", {"context": ctx, "address": shipping_address()})
        assert reply["shippingAddress"]["address"]["line1"] == "1 Main St"
    else:
        asked = client.call("paymentContext.setShippingAddress", {"context": ctx, "address": shipping_address()})
        reply = client.call("paymentContext.answer", {"action": asked["pendingAction"]["id"], "status": "valid",
                                                      "shippingMethods": [{"identifier": "ground", "label": "Ground",
                                                                           "amount": 500}]})
        assert reply["selectedShippingMethod"] == "ground"
    got = client.call("paymentContext.get", {"context": ctx})
    for view in (reply, got):
        assert view["requestState"] == "none", view.get("pendingAction") or view.get("needs")
        assert view.get("pendingAction") is None and view.get("needs") is None
    # Nor was there a payment in between (read up to a later change).
    client.call("paymentContext.update", {"context": ctx, "amount": 1001})
    events.context("paymentContext.didChange", ctx, lambda o: o["amount"] == 1001)
    assert events.read_for(ctx, "paymentContext.needsInput") == []
    assert [e["object"]["pendingAction"]["kind"] for e in events.read_for(ctx, "paymentContext.pendingAction")] \
        == (["didUpdateShippingAddress"] if trigger == "answerValid" else [])


# -- 5. load failures ----------------------------------------------------------------------------

NO_SUCH_CUSTOMER = {"error": {"type": "invalid_request_error", "code": "resource_missing", "param": "id",
                              "message": "No such customer (injected)"}}


def test_load_failure_then_retry_loading(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)

    server.add_fault(method="GET", path=f"/v1/customers/{cus}", status=404, body=NO_SUCH_CUSTOMER, times=1000)
    ctx = create(client, sid, amount=1099, defaultPaymentMethod=visa["id"])["id"]
    failed = events.failed_to_load(ctx)
    assert failed["loading"] is False and failed["isReadyForPayment"] is False
    assert failed["loadError"]["code"] == STRIPE_INVALID_REQUEST, failed["loadError"]
    assert failed["loadError"]["data"]["code"] == "resource_missing"
    assert failed["paymentOptions"] == [] and failed.get("selectedPaymentMethod") is None

    # requestPayment after a failed load finishes with the load's error.
    client.call("paymentContext.requestPayment", {"context": ctx})
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "error" and finished["lastResult"]["error"] == failed["loadError"]
    assert finished["requestState"] == "none"

    # Still failing: another didFailToLoad.
    retried = client.call("paymentContext.retryLoading", {"context": ctx})
    assert retried["loading"] is True and retried.get("loadError") is None
    events.failed_to_load(ctx)

    assert http_request("DELETE", f"{server.base_url}/_test/faults").status == 200
    retried = client.call("paymentContext.retryLoading", {"context": ctx})
    assert retried["loading"] is True
    loaded = events.loaded(ctx)
    assert loaded.get("loadError") is None and loaded["selectedPaymentMethod"] == visa["id"]
    assert [o["id"] for o in loaded["paymentOptions"]] == [visa["id"]] and loaded["isReadyForPayment"] is True
    pending = request_until_pending(client, events, ctx)
    client.call("paymentContext.answer", {"action": pending["id"], "status": "success"})
    assert events.context("paymentContext.didFinish", ctx)["lastResult"]["status"] == "success"


def test_load_fails_for_a_customer_that_does_not_exist(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, "cus_doesNotExist0001")
    ctx = create(client, sid, amount=1099)["id"]
    failed = events.failed_to_load(ctx)
    assert failed["loadError"]["code"] == STRIPE_INVALID_REQUEST, failed["loadError"]
    assert failed["loadError"]["data"]["code"] == "resource_missing"
    assert failed["loadError"]["data"]["http_status"] == 404
    # An unknown session cannot carry a context.
    assert rpc_error(client, "paymentContext.create", {"session": "cses_000000000000000000000000"}).code == NOT_FOUND


# -- 6. stpd-managed PaymentIntents --------------------------------------------------------------



def customer_intent(server, customer: str, amount: int = 1099) -> dict:
    """A PaymentIntent for the customer, created by the merchant's server with the secret key."""
    intent = server.api("POST", "/v1/payment_intents", {"amount": amount, "currency": "usd", "customer": customer})
    assert intent["status"] == "requires_payment_method", intent
    return intent


def managed_context(start_stpd, tmp_path, server, number: str):
    cus = server.create_customer(email="jenny@example.com")["id"]
    card = saved_card(server, cus, number)
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus, types=["paymentContext.*", "redirect.*"])
    ctx = create_loaded(client, events, sid, amount=1099, defaultPaymentMethod=card["id"])["id"]
    return client, events, ctx, cus, card


def request_managed_while_loading(client, server, ctx: str, customer: str, managed: dict) -> None:
    """requestPayment with a PaymentIntent, asked while the context (re)loads: the request waits for
    loading (the SDK's promise) and then stpd confirms. The stripe-test-server holds the customer's
    GET for 2 s so that the request certainly arrives while loading."""
    server.add_fault(method="GET", path=f"/v1/customers/{customer}", delayMs=2000, times=1)
    assert client.call("paymentContext.retryLoading", {"context": ctx})["loading"] is True
    waiting = client.call("paymentContext.requestPayment", {"context": ctx, "paymentIntent": managed})
    assert waiting["loading"] is True and waiting["requestState"] == "none", "the request was to arrive while loading"


def test_managed_payment_intent_requested_after_loading(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    client, events, ctx, cus, card = managed_context(start_stpd, tmp_path, server, "4242424242424242")
    intent = customer_intent(server, cus)
    client.call("paymentContext.requestPayment", {"context": ctx, "paymentIntent": {"clientSecret": intent["client_secret"]}})
    event = events.wait_any(ctx, {"paymentContext.didFinish": lambda o: True, "paymentContext.pendingAction": lambda o: True})
    assert event["type"] == "paymentContext.didFinish", f"the app was asked instead: {event['object'].get('pendingAction')}"
    assert event["object"]["lastResult"]["status"] == "success"
    assert server.api("GET", f"/v1/payment_intents/{intent['id']}")["status"] == "succeeded"


@pytest.mark.parametrize("action, result", [("succeed", "success"), ("fail", "error")])
def test_managed_payment_intent_with_3ds_redirect(start_stpd, tmp_path, stripe_test_server, action, result):
    server = stripe_test_server
    client, events, ctx, cus, card = managed_context(start_stpd, tmp_path, server, "4000002760003184")
    intent = customer_intent(server, cus)
    secret = intent["client_secret"]

    request_managed_while_loading(client, server, ctx, cus, {"clientSecret": secret, "returnURL": RETURN_URL})
    needs = events.context("paymentContext.needsInput", ctx)
    assert needs["needs"] == "redirect" and needs["requestState"] == "requestingPayment", needs
    assert needs["loading"] is False and needs["selectedPaymentMethod"] == card["id"]
    rid = needs["redirect"]
    assert rid and needs.get("pendingAction") is None
    # stpd confirmed with the selected card and the return URL.
    confirms = server.requests(path=f"/v1/payment_intents/{intent['id']}/confirm")
    assert len(confirms) == 1, confirms
    form = urllib.parse.parse_qs(confirms[0]["body"])
    assert form["payment_method"] == [card["id"]] and form["return_url"] == [RETURN_URL]

    session = client.call("redirect.get", {"session": rid})
    assert session["status"] == "inProgress" and session["paymentIntentId"] == intent["id"]
    location = bank_page(session["openURL"], action)
    assert location.startswith(RETURN_URL + "&")
    assert dict(query_items(location))["payment_intent"] == intent["id"]
    assert client.call("handle-url", {"url": location}) == {"handled": True, "session": rid}
    events.wait("redirect.outcome", rid)

    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == result
    assert finished["requestState"] == "none" and finished.get("needs") is None and finished.get("redirect") is None
    paid = server.api("GET", f"/v1/payment_intents/{intent['id']}")
    if result == "success":
        assert finished["lastResult"].get("error") is None
        assert paid["status"] == "succeeded" and paid["amount_received"] == 1099
    else:
        failure = finished["lastResult"]["error"]
        assert failure["code"] == PAYMENT_FAILED, failure
        assert failure["data"]["paymentIntentStatus"] == "requires_payment_method"
        assert failure["data"]["lastPaymentError"]["code"] == "payment_intent_authentication_failure"
        assert paid["status"] == "requires_payment_method"
    # The app was never asked: stpd ran the payment itself.
    assert "paymentContext.pendingAction" not in events.types_for(ctx)
    # The client secret is not shown back.
    for event in events.read_for(ctx, "paymentContext.didFinish") + events.read_for(ctx, "paymentContext.needsInput"):
        assert secret not in json.dumps(event)


def test_managed_payment_intent_with_a_loopback_return(start_stpd, tmp_path, stripe_test_server):
    """returnURL "loopback" on a managed PaymentIntent: stpd confirms with its own return URL, and
    the customer's browser coming back there completes the redirect and finishes the context."""
    server = stripe_test_server
    client, events, ctx, cus, card = managed_context(start_stpd, tmp_path, server, "4000002760003184")
    intent = customer_intent(server, cus)
    client.call("paymentContext.requestPayment", {"context": ctx, "paymentIntent": {
        "clientSecret": intent["client_secret"], "returnURL": "loopback"}})
    needs = events.context("paymentContext.needsInput", ctx)
    session = client.call("redirect.get", {"session": needs["redirect"]})
    assert session["returnURL"].startswith("http://127.0.0.1:") and "/return/" in session["returnURL"], session
    back = bank_page(session["openURL"], "succeed")
    assert back.startswith(session["returnURL"] + "?")
    reply = http_request("GET", back)
    assert reply.status == 200 and b"Payment authorised: you can close this window" in reply.body, reply
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "success"
    assert server.api("GET", f"/v1/payment_intents/{intent['id']}")["status"] == "succeeded"


def test_managed_payment_intent_bank_page_closed(start_stpd, tmp_path, stripe_test_server):
    """The 3-D Secure page runs as the SDK's in-app flow: regaining focus completes nothing, and
    the customer closing it (redirect.report closed) re-reads the PaymentIntent, as STPPaymentHandler
    does: still requiring action, it is canceled, which the context finishes as userCancellation."""
    server = stripe_test_server
    client, events, ctx, cus, card = managed_context(start_stpd, tmp_path, server, "4000002760003184")
    intent = customer_intent(server, cus)
    client.call("paymentContext.requestPayment", {"context": ctx, "paymentIntent": {
        "clientSecret": intent["client_secret"], "returnURL": RETURN_URL}})
    rid = events.context("paymentContext.needsInput", ctx)["redirect"]
    assert client.call("app.foreground", {})["completedRedirects"] == []
    closed = client.call("redirect.report", {"session": rid, "outcome": "closed"})
    assert closed["completion"]["trigger"] == "closed" and closed["completion"].get("error") is None
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "userCancellation" and finished["lastResult"].get("error") is None


def test_managed_payment_intent_needing_3ds_without_a_return_url(start_stpd, tmp_path, stripe_test_server):
    """Without a returnURL Stripe answers a card that needs authentication with use_stripe_sdk in its
    three_d_secure_redirect form, a page at stripe_js, which the SDK opens (handleThreeDS2Redirect):
    a redirect session with no return URL, which the customer closing completes."""
    server = stripe_test_server
    client, events, ctx, cus, card = managed_context(start_stpd, tmp_path, server, "4000002760003184")
    intent = customer_intent(server, cus)
    client.call("paymentContext.requestPayment", {"context": ctx, "paymentIntent": {
        "clientSecret": intent["client_secret"]}})
    rid = events.context("paymentContext.needsInput", ctx)["redirect"]
    session = client.call("redirect.get", {"session": rid})
    stripe_js = server.api("GET", f"/v1/payment_intents/{intent['id']}")["next_action"]["use_stripe_sdk"]["stripe_js"]
    assert session["openURL"] == stripe_js and session.get("returnURL") is None, session
    status, _, body = http_get(f"{stripe_js}&action=succeed")
    assert status == 200, body[:300]
    client.call("redirect.report", {"session": rid, "outcome": "closed"})
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "success", finished


def test_managed_payment_intent_without_authentication(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    client, events, ctx, cus, card = managed_context(start_stpd, tmp_path, server, "4242424242424242")
    intent = customer_intent(server, cus, amount=2000)
    since = events.seen[-1]["seq"]
    request_managed_while_loading(client, server, ctx, cus, {"clientSecret": intent["client_secret"]})
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "success" and finished["lastResult"].get("error") is None
    assert [t for t in events.types_since(ctx, since)
            if t in ("paymentContext.needsInput", "paymentContext.pendingAction")] == []
    paid = server.api("GET", f"/v1/payment_intents/{intent['id']}")
    assert paid["status"] == "succeeded" and paid["payment_method"] == card["id"] and paid["amount_received"] == 2000


def test_managed_payment_intent_declined(start_stpd, tmp_path, stripe_test_server):
    """The stripe-test-server declines its decline cards on attach already, so the decline at
    confirm is Stripe's answer injected as a fault (402, card_error)."""
    server = stripe_test_server
    client, events, ctx, cus, card = managed_context(start_stpd, tmp_path, server, "4242424242424242")
    intent = customer_intent(server, cus)
    server.add_fault(method="POST", path=f"/v1/payment_intents/{intent['id']}/confirm", status=402, body={"error": {
        "type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds",
        "message": "Your card has insufficient funds."}})
    request_managed_while_loading(client, server, ctx, cus, {"clientSecret": intent["client_secret"]})
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "error"
    failure = finished["lastResult"]["error"]
    assert failure["code"] == STRIPE_CARD_ERROR, failure
    assert failure["data"]["code"] == "card_declined" and failure["data"]["decline_code"] == "insufficient_funds"
    assert "Your card has insufficient funds." in failure["message"]
    assert finished["requestState"] == "none"
    assert "paymentContext.pendingAction" not in events.types_for(ctx)


# -- 7. localstripe ------------------------------------------------------------------------------

def localstripe_intent(stripe, customer: str, pm: str, amount: int = 1099) -> tuple[int, dict]:
    """What the merchant's server does with the PaymentMethod of didCreatePaymentResult: a
    PaymentIntent confirmed server-side (localstripe's confirm takes no parameters, so it is
    created with payment_method and confirm=true). Returns (HTTP status, body)."""
    reply = stripe.api("POST", "/v1/payment_intents", {"amount": amount, "currency": "usd", "customer": customer,
                                                       "payment_method": pm, "confirm": True}, expect=None)
    return (200 if "error" not in reply else 402), reply


def test_localstripe_card_flows(start_stpd, tmp_path, localstripe_server):
    """Card flows against localstripe (a third-party Stripe fake).

    localstripe's PaymentIntent confirm takes no parameters (payment_method, client_secret and
    return_url are refused) and it never gives a redirect_to_url next action, so a stpd-managed
    PaymentIntent cannot be confirmed there (it finishes with didFinish(error) carrying localstripe's
    refusal: test_localstripe_refuses_a_managed_confirm). The payments here are therefore the SDK's
    own flow: didCreatePaymentResult
    hands the PaymentMethod to the app (the test), which creates and confirms a PaymentIntent with
    the secret key as a merchant's server would, and answers success or error with the outcome.

    Declines: localstripe declines 4000000000000002 only on attach (addCard fails with
    StripeInvalidRequest `card_declined`, its error type being always invalid_request_error); a
    card declined at charge time is 4000000000000341, which attaches fine.
    """
    stripe = localstripe_server
    cus = stripe.api("POST", "/v1/customers", {"email": "jenny@example.com", "name": "Jenny Rosen"})["id"]
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", stripe, cus)
    loaded = create_loaded(client, events, sid, amount=1099)
    ctx = loaded["id"]
    assert loaded["paymentOptions"] == [] and loaded.get("selectedPaymentMethod") is None

    # addCard: created, attached at localstripe, selected.
    added = client.call("paymentContext.addCard", {"context": ctx, "card": card_input("4242424242424242")})
    good = added["selectedPaymentMethod"]
    assert [(o["id"], o["label"]) for o in added["paymentOptions"]] == [(good, "Visa 4242")]
    assert stripe.api("GET", f"/v1/payment_methods/{good}")["customer"] == cus

    # 4000000000000002: declined on attach.
    error = rpc_error(client, "paymentContext.addCard", {"context": ctx, "card": card_input("4000000000000002")})
    assert error.code == STRIPE_INVALID_REQUEST and error.data["code"] == "card_declined", error
    assert client.call("paymentContext.get", {"context": ctx})["selectedPaymentMethod"] == good

    # A payment that succeeds.
    pending = request_until_pending(client, events, ctx)
    pm = pending["payload"]["paymentMethod"]
    assert pm["id"] == good and pm["card"]["last4"] == "4242"
    status, intent = localstripe_intent(stripe, cus, pm["id"])
    assert status == 200 and intent["status"] == "succeeded", intent
    client.call("paymentContext.answer", {"action": pending["id"], "status": "success"})
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "success" and finished["lastResult"].get("error") is None

    # A payment declined at charge time: the app answers error with Stripe's message.
    declining = saved_card(stripe, cus, "4000000000000341")
    retried = client.call("paymentContext.retryLoading", {"context": ctx})
    assert retried["loading"] is True
    reloaded = events.loaded(ctx)
    assert [o["label"] for o in reloaded["paymentOptions"]] == ["Visa 0341", "Visa 4242"]
    assert reloaded["selectedPaymentMethod"] == good  # the last selected card
    client.call("paymentContext.selectPaymentMethod", {"context": ctx, "paymentMethod": declining["id"]})
    pending = request_until_pending(client, events, ctx)
    assert pending["payload"]["paymentMethod"]["id"] == declining["id"]
    status, declined = localstripe_intent(stripe, cus, declining["id"])
    assert status == 402 and declined["error"]["code"] == "card_declined", declined
    client.call("paymentContext.answer", {"action": pending["id"], "status": "error",
                                          "error": {"message": declined["error"]["message"], "code": "card_declined"}})
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "error"
    assert finished["lastResult"]["error"]["data"] == {"message": declined["error"]["message"], "code": "card_declined"}


def test_localstripe_refuses_a_managed_confirm(start_stpd, tmp_path, localstripe_server):
    """localstripe's confirm takes no parameters: a stpd-managed PaymentIntent (confirmed with its
    payment_method; with this secret key, without its client_secret) finishes with didFinish(error),
    localstripe's invalid_request_error (StripeInvalidRequest, 500 "Not implemented")."""
    stripe = localstripe_server
    cus = stripe.api("POST", "/v1/customers", {"email": "jenny@example.com"})["id"]
    card = saved_card(stripe, cus, "4242424242424242")
    _, events, client, sid = connected(start_stpd, tmp_path / "stpd", stripe, cus)
    ctx = create_loaded(client, events, sid, amount=1099, defaultPaymentMethod=card["id"])["id"]
    intent = stripe.api("POST", "/v1/payment_intents", {"amount": 1099, "currency": "usd", "customer": cus})
    client.call("paymentContext.requestPayment", {"context": ctx, "paymentIntent": {"clientSecret": intent["client_secret"]}})
    event = events.wait_any(ctx, {"paymentContext.didFinish": lambda o: True, "paymentContext.pendingAction": lambda o: True})
    assert event["type"] == "paymentContext.didFinish", f"the app was asked instead: {event['object'].get('pendingAction')}"
    failure = event["object"]["lastResult"]["error"]
    assert event["object"]["lastResult"]["status"] == "error"
    assert failure["code"] == STRIPE_INVALID_REQUEST and failure["data"]["message"] == "Not implemented", failure
    assert stripe.api("GET", f"/v1/payment_intents/{intent['id']}")["status"] == "requires_payment_method"


# -- 8. durability and deadlines ----------------------------------------------------------------

def test_pending_action_survives_kill_9(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    ctx = create_loaded(client, events, sid, amount=1099, defaultPaymentMethod=visa["id"])["id"]
    pending = request_until_pending(client, events, ctx)
    before = client.call("paymentContext.get", {"context": ctx})
    events.client.close()
    client.close()

    daemon.kill()  # SIGKILL while the app has not answered
    restarted = stpd_with_secret_key(start_stpd, tmp_path / "stpd", server)
    client = restarted.client()
    after = client.call("paymentContext.get", {"context": ctx})
    assert after["pendingAction"] == pending
    assert after["requestState"] == "requestingPayment" and after["selectedPaymentMethod"] == visa["id"]
    assert after["createdAt"] == before["createdAt"] and after["paymentOptions"] == before["paymentOptions"]
    assert [c["id"] for c in client.call("paymentContext.list")["contexts"]] == [ctx]

    events = ContextEvents(restarted.client())
    replied = client.call("paymentContext.answer", {"action": pending["id"], "status": "success"})
    assert replied["lastResult"]["status"] == "success"
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"] == replied["lastResult"] and finished.get("pendingAction") is None
    assert rpc_error(client, "paymentContext.answer", {"action": pending["id"], "status": "success"}).code \
        == PENDING_ACTION_GONE


def test_pending_actions_time_out(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    loaded = create_loaded(client, events, sid, amount=1099, defaultPaymentMethod=visa["id"], pendingActionTimeout=2,
                           validatesShipping=True)
    ctx = loaded["id"]

    # didCreatePaymentResult unanswered for 2 s: didFinish(error, PendingActionTimedOut).
    pending = request_until_pending(client, events, ctx)
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "error" and finished.get("pendingAction") is None
    failure = finished["lastResult"]["error"]
    assert failure["code"] == PENDING_ACTION_TIMED_OUT, failure
    assert failure["data"] == {"action": pending["id"], "kind": "didCreatePaymentResult"}
    assert rpc_error(client, "paymentContext.answer", {"action": pending["id"], "status": "success"}).code \
        == PENDING_ACTION_GONE

    # didUpdateShippingAddress unanswered: shippingInvalid with the same error.
    asked = client.call("paymentContext.setShippingAddress", {"context": ctx, "address": shipping_address()})
    refused = events.context("paymentContext.shippingInvalid", ctx)
    assert refused["shippingError"]["code"] == PENDING_ACTION_TIMED_OUT
    assert refused["shippingError"]["data"] == {"action": asked["pendingAction"]["id"], "kind": "didUpdateShippingAddress"}
    assert refused.get("shippingAddress") is None and refused.get("pendingAction") is None


def test_a_deadline_passes_across_a_restart(start_stpd, tmp_path, stripe_test_server):
    """A pending action whose deadline passes while stpd is down times out after the restart."""
    server = stripe_test_server
    cus = server.create_customer(email="jenny@example.com")["id"]
    visa = saved_card(server, cus, "4242424242424242")
    daemon, events, client, sid = connected(start_stpd, tmp_path / "stpd", server, cus)
    ctx = create_loaded(client, events, sid, amount=1099, defaultPaymentMethod=visa["id"], pendingActionTimeout=3)["id"]
    pending = request_until_pending(client, events, ctx)
    seen = events.read_for(ctx, "paymentContext.pendingAction")[-1]["seq"]
    daemon.kill()

    restarted = stpd_with_secret_key(start_stpd, tmp_path / "stpd", server)
    events = ContextEvents(restarted.client(), since=seen)  # replays what happened since, if anything
    finished = events.context("paymentContext.didFinish", ctx)
    assert finished["lastResult"]["status"] == "error"
    assert finished["lastResult"]["error"]["code"] == PENDING_ACTION_TIMED_OUT
    assert finished["lastResult"]["error"]["data"]["action"] == pending["id"]
