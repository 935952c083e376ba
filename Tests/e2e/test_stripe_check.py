"""The request check itself (stripe_check.py), on requests written here: what Stripe's types
refuse is caught and named, what the allow-list covers passes, and only stpd's requests count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stripe_check import RequestCheck, StripeTypes
from stripe_servers import TEST_CALL_PREFIX

CONFIRM = "/v1/payment_intents/pi_1/confirm"


@pytest.fixture(scope="module")
def types() -> StripeTypes:
    return StripeTypes()


def problems(types: StripeTypes, method: str, path: str, form: dict, auth: str = "publishable") -> list[str]:
    return types.problems({"method": method, "path": path, "form": form, "auth": auth})


def test_the_endpoints_stpd_calls_are_found(types):
    for method, path, template in [
        ("POST", "/v1/sources", "/v1/sources"),
        ("GET", "/v1/sources/src_1", "/v1/sources/{source}"),
        ("GET", "/v1/payment_intents/pi_1", "/v1/payment_intents/{intent}"),
        ("POST", CONFIRM, "/v1/payment_intents/{intent}/confirm"),
        ("POST", "/v1/setup_intents/seti_1/confirm", "/v1/setup_intents/{intent}/confirm"),
        ("POST", "/v1/payment_methods", "/v1/payment_methods"),
        ("GET", "/v1/payment_methods", "/v1/payment_methods"),
        ("POST", "/v1/payment_methods/pm_1/attach", "/v1/payment_methods/{payment_method}/attach"),
        ("POST", "/v1/customers/cus_1", "/v1/customers/{customer}"),
        # A literal segment wins over a placeholder.
        ("GET", "/v1/payment_intents/search", "/v1/payment_intents/search"),
    ]:
        found = types.endpoint(method, path)
        assert found is not None and found[0] == template, (method, path, found)
    assert problems(types, "POST", "/v1/no_such_thing", {}) == ["no such endpoint in Stripe's API"]
    assert problems(types, "PUT", "/v1/customers/cus_1", {}) == ["no such endpoint in Stripe's API"]


def test_a_good_request_passes(types):
    assert problems(types, "GET", "/v1/payment_intents/pi_1", {"client_secret": "pi_1_secret_x",
                                                                "expand": ["payment_method"]}) == []
    assert problems(types, "POST", "/v1/payment_methods", {
        "type": "card", "card": {"number": "4242424242424242", "exp_month": "12", "exp_year": "2031", "cvc": "123"},
        "billing_details": {"name": "Jo", "address": {"postal_code": "10115"}}}) == []
    assert problems(types, "POST", "/v1/customers/cus_1", {"shipping": ""}) == []  # emptied

def test_the_sdks_own_endpoints_are_known(types):
    """The refresh endpoints the SDK calls for Cash App and Klarna, and its card metadata lookup,
    which the package omits."""
    for collection, intent in [("payment_intents", "pi_1"), ("setup_intents", "seti_1")]:
        path = f"/v1/{collection}/{intent}/refresh"
        assert problems(types, "POST", path, {"client_secret": f"{intent}_secret_x", "expand": ["payment_method"]}) == []
        assert problems(types, "POST", path, {"amount": "1"}) == ["amount: unknown field"]
    # The card metadata lookup for UnionPay's variable-length prefixes.
    metadata = "/edge-internal/card-metadata"
    assert problems(types, "GET", metadata, {"key": "pk_test_x", "bin_prefix": "620550"}) == []
    assert problems(types, "GET", metadata, {"bin_prefix": "620550"}) == ["key: required, missing"]


def test_known_bad_requests_are_caught_and_named(types):
    assert problems(types, "POST", CONFIRM, {"payment_method": "pm_1", "colour": "red"}) == ["colour: unknown field"]
    assert problems(types, "POST", "/v1/customers/cus_1", {"shipping": {"address": {"line1": "1 Main St"}}}) \
        == ["shipping[name]: required, missing"]
    assert problems(types, "POST", CONFIRM, {"setup_future_usage": "sometimes"}) \
        == ["setup_future_usage: 'sometimes' is not one of ['', 'off_session', 'on_session']"]
    assert problems(types, "POST", "/v1/customers/cus_1", {"balance": "ten", "preferred_locales": ["en", {"x": "y"}]}) \
        == ["balance: 'ten' is not int", "preferred_locales[1]: {'x': 'y'} is not str"]
    # Nested hashes, recursively.
    nested = problems(types, "POST", CONFIRM, {
        "payment_method_data": {"type": "ideal", "ideal": {"bank": "ing", "branch": "x"}},
        "payment_method_options": {"card": {"request_three_d_secure": "always"}}})
    assert nested == ["payment_method_data[ideal][branch]: unknown field",
                      "payment_method_options[card][request_three_d_secure]: "
                      "'always' is not one of ['any', 'automatic', 'challenge']"], nested


def test_the_allow_list_covers_what_the_sdk_sends_with_a_publishable_key(types):
    sdk = {"client_secret": "pi_1_secret_x", "return_url": "myshop://done",
           "payment_method_data": {"type": "card", "card": {"number": "4242424242424242", "exp_month": "12",
                                                            "exp_year": "2031"},
                                   "payment_user_agent": "stpd/0.1.0"},
           "mandate_data": {"customer_acceptance": {"type": "online", "online": {"infer_from_client": "true"}}}}
    assert problems(types, "POST", CONFIRM, sdk) == []
    assert problems(types, "POST", "/v1/setup_intents/seti_1/confirm", {**sdk, "client_secret": "seti_1_secret_x"}) == []
    # With a secret key, none of it is allowed.
    assert problems(types, "POST", CONFIRM, sdk, auth="secret") == [
        "client_secret: unknown field", "payment_method_data[card]: unknown field",
        "payment_method_data[payment_user_agent]: unknown field",
        "payment_method_data[type]: 'card' is not one of " + repr(_pm_types(types)),
        "mandate_data[customer_acceptance][online][infer_from_client]: unknown field"]
    # The card's type is allowed, not any type.
    assert problems(types, "POST", CONFIRM, {"payment_method_data": {"type": "cheque"}}) \
        == ["payment_method_data[type]: 'cheque' is not one of " + repr(_pm_types(types))]
    # A Source's type hash, and only the one its type names.
    assert problems(types, "POST", "/v1/sources", {"type": "sofort", "sofort": {"country": "DE"}, "amount": "1099",
                                                   "currency": "eur", "redirect": {"return_url": "myshop://s"},
                                                   "payment_user_agent": "stpd/0.1.0"}) == []
    assert problems(types, "POST", "/v1/payment_methods", {"type": "card", "payment_user_agent": "stpd/0.1.0"}) == []
    assert problems(types, "POST", "/v1/payment_methods", {"type": "card", "payment_user_agent": "stpd/0.1.0"},
                    auth="secret") == ["payment_user_agent: unknown field"]
    assert problems(types, "POST", "/v1/sources", {"type": "sofort", "ideal": {"bank": "ing"}}) \
        == ["ideal: unknown field"]


def test_only_stpds_requests_are_collected_and_each_finding_names_its_request(types):
    check = RequestCheck()
    bad = {"method": "POST", "path": CONFIRM, "form": {"client_secret": "x"}, "auth": "secret",
           "idempotency_key": "stpd-1"}
    own = {**bad, "idempotency_key": f"{TEST_CALL_PREFIX}1"}
    browser = {"method": "GET", "path": "/favicon.ico", "form": {}, "auth": "none"}
    check.collect("test_x.py::test_y", [bad, own, browser])
    assert check.findings(types) == [f"POST {CONFIRM} (secret key, test_x.py::test_y): client_secret: unknown field"]
    assert RequestCheck().findings() == []


def _pm_types(types: StripeTypes) -> list[str]:
    """payment_method_data[type]'s values, as the types list them."""
    import typing
    params = types.endpoint("POST", CONFIRM)[1][0]
    data = typing.get_args(types.hints(params)["payment_method_data"])[0]
    union = typing.get_args(types.hints(data)["type"])
    return list(typing.get_args(union[0]))


NESTED = '''
from conftest import _stripe_requests

def test_a_request_stripe_refuses():
    _stripe_requests.collect("nested::bad", [{"method": "POST", "path": "/v1/payment_intents/pi_1/confirm",
                                             "form": {"colour": "red"}, "auth": "secret", "idempotency_key": "k1"}])

def test_a_good_request():
    _stripe_requests.collect("nested::good", [{"method": "GET", "path": "/v1/payment_intents/pi_1", "form": {},
                                              "auth": "secret", "idempotency_key": "k2"}])
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_refused_request_fails_the_run_with_or_without_xdist(tmp_path, workers):
    """The check runs at the session's end: in each xdist worker, whose findings the controller
    collects, so a refused request fails the run however many workers ran the tests."""
    (tmp_path / "test_nested.py").write_text(NESTED)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                                    os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                           *workers, "test_nested.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout
    assert "POST /v1/payment_intents/pi_1/confirm (secret key, nested::bad): colour: unknown field" in done.stdout
    assert "nested::good" not in done.stdout, done.stdout
