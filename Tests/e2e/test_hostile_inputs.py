"""Issue 32.6, the low items of the third hostile pass, each repro refused end to end:

- a filter of 1,000 `kind.*` types made `events.wait` answer -32603 quoting the SQL: a filter is
  bounded (types, object ids), and a -32603 never carries its detail, which the log has once;
- a parameter pattern took one trailing line terminator (`pm_card_visa\\n`, a client secret,
  `SM11AA\\n`): every pattern matches the whole string;
- a `raw` payment method of type card skipped the card checks: it gets CardInvalid (6001) before
  any request to Stripe, like the typed `card`;
- three microdeposit amounts were blamed on `descriptorCode`: `maxItems` is enforced, on `amounts`;
- `--reserved-connections 3000` was silently cut to half the connections: it is refused at start.
"""

from __future__ import annotations

import time

import pytest

from codes import CARD_INVALID, INVALID_PARAMS
from flows import rpc_error, stpd_for

LAST_YEAR = time.gmtime().tm_year - 1


@pytest.fixture(scope="module")
def world(module_start_stpd, module_stripe_test_server, tmp_path_factory):
    server = module_stripe_test_server
    daemon = stpd_for(module_start_stpd, tmp_path_factory.mktemp("hostile") / "stpd", server)
    with daemon.client() as client:
        yield server, daemon, client


def test_a_filter_is_bounded_and_an_internal_error_quotes_nothing(world):
    _, daemon, client = world
    for method, extra in (("events.wait", {"since": 0, "timeout": 0}), ("events.subscribe", {})):
        types = [f"kind{n}.*" for n in range(1000)]
        error = rpc_error(client, method, {**extra, "filter": {"types": types}})
        assert error.code == INVALID_PARAMS, error
        assert error.data == {"parameter": "filter.types", "maxItems": 100}, error.data
        error = rpc_error(client, method, {**extra, "filter": {"objects": [f"pi_{n}" for n in range(1001)]}})
        assert error.code == INVALID_PARAMS and error.data["parameter"] == "filter.objects", error
    # Within the bound, a filter of many prefixes is answered.
    page = client.call("events.wait", {"since": 0, "timeout": 0,
                                       "filter": {"types": [f"kind{n}.*" for n in range(100)]}})
    assert page["events"] == []
    log = daemon.log()
    assert "failed:" not in log and "SELECT" not in log, log[-3000:]


@pytest.mark.parametrize("terminator", ["\n", "\r\n", "\u2028"])
def test_a_pattern_takes_no_trailing_line_terminator(world, terminator):
    server, _, client = world
    pi = server.api("POST", "/v1/payment_intents", {"amount": 1099, "currency": "eur", "payment_method_types": ["card"]})
    error = rpc_error(client, "paymentIntent.confirm", {"clientSecret": pi["client_secret"],
                                                        "paymentMethod": {"id": "pm_card_visa" + terminator}})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "paymentMethod.id", error
    error = rpc_error(client, "paymentIntent.retrieve", {"clientSecret": pi["client_secret"] + terminator})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "clientSecret", error
    error = rpc_error(client, "setupIntent.verifyMicrodeposits",
                      {"clientSecret": "seti_1_secret_2", "descriptorCode": "SM11AA" + terminator})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "descriptorCode", error
    assert server.requests(path=f"/v1/payment_intents/{pi['id']}/confirm") == []


def test_a_raw_card_is_checked_like_a_typed_one(world):
    server, _, client = world
    pi = server.api("POST", "/v1/payment_intents", {"amount": 1099, "currency": "eur", "payment_method_types": ["card"]})
    raw = {"type": "card", "card": {"number": "4242424242424241", "exp_month": 12, "exp_year": LAST_YEAR + 3,
                                    "cvc": "123"}}
    error = rpc_error(client, "paymentIntent.confirm", {"clientSecret": pi["client_secret"],
                                                        "paymentMethod": {"raw": raw}})
    assert error.code == CARD_INVALID, error
    assert error.data["parameter"] == "paymentMethod.raw.card.number", error.data
    expired = {**raw, "card": {**raw["card"], "number": "4242424242424242", "exp_year": str(LAST_YEAR)}}
    error = rpc_error(client, "paymentIntent.confirm", {"clientSecret": pi["client_secret"],
                                                        "paymentMethod": {"raw": expired}})
    assert error.code == CARD_INVALID and error.data["parameter"] == "paymentMethod.raw.card.exp_year", error
    error = rpc_error(client, "paymentIntent.confirm", {"clientSecret": pi["client_secret"],
                                                        "paymentMethod": {"raw": {"type": "card"}}})
    assert error.code == CARD_INVALID and error.data["parameter"] == "paymentMethod.raw.card.number", error
    assert server.requests(path=f"/v1/payment_intents/{pi['id']}/confirm") == []


def test_three_microdeposit_amounts_are_blamed_on_amounts(world):
    _, _, client = world
    for amounts in ([32, 45, 10], [32]):
        error = rpc_error(client, "paymentIntent.verifyMicrodeposits",
                          {"clientSecret": "pi_1_secret_2", "amounts": amounts})
        assert error.code == INVALID_PARAMS and error.data["parameter"] == "amounts", error


def test_reserved_connections_over_half_are_refused_at_start(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path, "--reserved-connections", "3000", wait_ready=False)
    assert daemon.wait_exit() != 0
    log = daemon.log()
    assert "STPD_RESERVED_CONNECTIONS=3000 (from --reserved-connections) is not valid" in log, log
