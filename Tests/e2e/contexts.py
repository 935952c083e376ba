"""Helpers for the payment-context end-to-end tests (test_payment_contexts.py).

- ``stpd_with_secret_key``: stpd whose Stripe key is the stand-in's SECRET key, so that a
  ``keyProvider: server`` customer session works (the daemon's own key used for one customer),
  with ``--stripe-api-base`` pointing at the stand-in;
- ``saved_card`` / ``open_session``: a customer's saved card (created and attached with the
  secret key, as the merchant's server would) and a server-key customer session over it;
- ``ContextEvents``: ``flows.Events`` subscribed to ``paymentContext.*`` (and ``customer.*``),
  with waits for the events of one context.

Every wait is on a reply or an event; nothing sleeps.
"""

from __future__ import annotations

from codes import (INVALID_PARAMS, INVALID_STATE, NOT_FOUND, PAYMENT_FAILED, PENDING_ACTION_GONE,
                   PENDING_ACTION_TIMED_OUT, STRIPE_CARD_ERROR, STRIPE_INVALID_REQUEST)  # noqa: F401 (re-exported)
import time
from pathlib import Path
from typing import Any, Callable

from flows import Events
from rpc import Client


EXP_YEAR = time.gmtime().tm_year + 3


def stpd_with_secret_key(start_stpd, directory: Path, server, *args: str, env: dict | None = None):
    return start_stpd(directory, "--stripe-api-base", server.base_url, *args,
                      env={"STPD_STRIPE_KEY": server.secret_key, **(env or {})})


def connected(start_stpd, directory: Path, server, customer: str, *args: str, types: list[str] | None = None):
    """What most tests start from: stpd on the server's secret key, a ContextEvents subscription,
    a client, and a server-key customer session for `customer`; returns (daemon, events, client, session)."""
    daemon = stpd_with_secret_key(start_stpd, directory, server, *args)
    events = ContextEvents(daemon.client(), types) if types else ContextEvents(daemon.client())
    client = daemon.client()
    return daemon, events, client, open_session(client, customer)


def card_input(number: str, cvc: str = "123") -> dict:
    """paymentContext.addCard's `card`."""
    # The default requiredBillingAddressFields (postalCode) needs a postal code, as the SDK's form.
    return {"number": number, "expMonth": 12, "expYear": EXP_YEAR, "cvc": cvc, "zip": "10115"}


def saved_card(server, customer: str, number: str, cvc: str = "123") -> dict:
    """A card PaymentMethod created and attached to CUSTOMER with the secret key (localstripe
    accepts only secret keys and exactly number, exp_month, exp_year, cvc)."""
    pm = server.api("POST", "/v1/payment_methods", {
        "type": "card", "card": {"number": number, "exp_month": 12, "exp_year": EXP_YEAR, "cvc": cvc}})
    return server.api("POST", f"/v1/payment_methods/{pm['id']}/attach", {"customer": customer})


def open_session(client: Client, customer: str, prefetch: bool = False) -> str:
    """A customer session whose adapter is Stripe with the daemon's own (secret) key."""
    opened = client.call("customer.open", {
        "adapter": {"kind": "stripe", "keyProvider": {"kind": "server", "customer": customer}},
        "prefetch": prefetch})
    assert opened["status"] == "open", opened
    return opened["id"]


def shipping_address(name: str = "Jenny Rosen", line1: str = "1 Main St", city: str = "Springfield",
                     state: str = "CA", postal_code: str = "94105", country: str = "US",
                     phone: str | None = "+1 555 555 0100", email: str | None = "jenny@example.com") -> dict:
    """paymentContext.setShippingAddress's `address` (ShippingAddressParams)."""
    address: dict[str, Any] = {"name": name, "address": {
        "line1": line1, "city": city, "state": state, "postalCode": postal_code, "country": country}}
    if phone is not None:
        address["phone"] = phone
    if email is not None:
        address["email"] = email
    return address


class ContextEvents(Events):
    """Events of payment contexts (and customer sessions) on their own connection."""

    def __init__(self, client: Client, types: list[str] | None = None, since: int | None = None):
        super().__init__(client, types or ["paymentContext.*", "customer.*"], since)

    def loaded(self, context: str, timeout: float = 30.0) -> dict:
        """The context's state once loading ended well (didChange with loading false); fails on
        didFailToLoad."""
        event = self.wait_any(context, {"paymentContext.didChange": lambda o: not o["loading"],
                                        "paymentContext.didFailToLoad": lambda o: True}, timeout)
        assert event["type"] == "paymentContext.didChange", f"loading failed: {event['object'].get('loadError')}"
        return event["object"]

    def failed_to_load(self, context: str, timeout: float = 30.0) -> dict:
        event = self.wait_any(context, {"paymentContext.didChange": lambda o: not o["loading"],
                                        "paymentContext.didFailToLoad": lambda o: True}, timeout)
        assert event["type"] == "paymentContext.didFailToLoad", f"loading did not fail: {event['object']}"
        return event["object"]

    def wait_any(self, object_id: str, wanted: dict[str, Callable[[dict], bool]], timeout: float = 30.0) -> dict:
        """The first event for OBJECT_ID whose type is a key of WANTED and whose object passes
        that key's test."""
        return self.wait_where(lambda e: e["objectId"] == object_id and e["type"] in wanted
                               and wanted[e["type"]](e["object"]), timeout, f"one of {sorted(wanted)}", object_id)

    def wait_where(self, test: Callable[[dict], bool], timeout: float, what: str, object_id: str | None) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {what} event for {object_id} within {timeout} s; read: "
                                     f"{[(e['type'], e['objectId']) for e in self.seen[-20:]]}")
            try:
                event = self.next(remaining)
            except TimeoutError:
                continue
            if test(event):
                return event

    def context(self, type: str, context: str, where: Callable[[dict], bool] | None = None,
                timeout: float = 30.0) -> dict:
        """The object of the next TYPE event for CONTEXT (passing WHERE, given its object)."""
        return self.wait(type, context, (lambda e: where(e["object"])) if where else None, timeout)["object"]

    def seen_or_wait(self, type: str, object_id: str, timeout: float = 30.0,
                     where: Callable[[dict], bool] | None = None) -> dict:
        """The first TYPE event for OBJECT_ID (that WHERE holds for) read so far, else the next one."""
        for event in self.seen:
            if event["type"] == type and event["objectId"] == object_id and (where is None or where(event)):
                return event
        return self.wait(type, object_id, where=where, timeout=timeout)

    def types_since(self, context: str, seq: int) -> list[str]:
        return [e["type"] for e in self.seen if e["objectId"] == context and e["seq"] > seq]
