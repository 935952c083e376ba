"""After the customer acts: STPPaymentHandler's outcome per entry point (IntentRules.outcomeTable,
docs/next-actions.md), end to end through the Python client against the stripe-test-server:

- a PaymentIntent confirmed on the merchant's server answers 3-D Secure with use_stripe_sdk's
  three_d_secure_redirect, a page at stripe_js that handleNextAction opens as a redirect session;
  the native use_stripe_sdk forms fail, saying what the app can do instead;
- requires_confirmation after the action (manual confirmation) is a success for handleNextAction
  only, and handing one over before the server confirmed it is a failure;
- a SetupIntent in processing is a failure, even for a delayed-notification method;
- a scoped client secret (pi_..._scoped_secret_...) is taken, and its request reaches Stripe.
One daemon and one stand-in serve the module; each test makes its own intents.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from codes import NEXT_ACTION_UNSUPPORTED, PAYMENT_FAILED
from flows import INVALID_PARAMS, STRIPE_INVALID_REQUEST, Events, bank_page, http_get, rpc_error, stpd_for

RETURN_URL = "myshop://pay?order=8"
JO = {"name": "Jo Doe", "email": "jo@example.test"}


@pytest.fixture(scope="module")
def world(module_start_stpd, module_stripe_test_server, tmp_path_factory):
    server = module_stripe_test_server
    daemon = stpd_for(module_start_stpd, tmp_path_factory.mktemp("stpd"), server)
    return SimpleNamespace(server=server, daemon=daemon, client=daemon.client())


@pytest.fixture
def events(world):
    with world.daemon.client() as client:
        yield Events(client, ["paymentIntent.*", "setupIntent.*", "redirect.*"])


def server_confirmed(server, **extra) -> dict:
    """A PaymentIntent the merchant's server confirmed with a card that needs 3-D Secure."""
    return server.api("POST", "/v1/payment_intents", {
        "amount": 1500, "currency": "eur", "payment_method_types": ["card"],
        "payment_method": "pm_card_threeDSecureRequired", "confirm": "true", **extra})


def test_a_server_confirmed_intents_three_d_secure_page_opens_as_a_redirect(world, events):
    """Confirmed without return_url and without use_stripe_sdk (a subscription's first payment),
    Stripe answers use_stripe_sdk of type three_d_secure_redirect: the SDK opens stripe_js
    (handleThreeDS2Redirect) and re-reads the intent when the customer is back."""
    intent = server_confirmed(world.server)
    action = intent["next_action"]
    assert (action["type"], action["use_stripe_sdk"]["type"]) == ("use_stripe_sdk", "three_d_secure_redirect")
    answer = world.client.call("paymentIntent.handleNextAction", {
        "clientSecret": intent["client_secret"], "returnURL": RETURN_URL, "start": {"mode": "inApp"}})
    assert answer["result"] == "pending" and answer["nextAction"]["kind"] == "redirect", answer
    session = answer["redirect"]
    assert session["openURL"] == action["use_stripe_sdk"]["stripe_js"] and session["returnURL"] == RETURN_URL
    status, _, body = http_get(f"{session['openURL']}&action=succeed")
    assert status == 200, body[:300]
    # The page has nowhere to send the customer back to: closing it completes the session.
    world.client.call("redirect.report", {"session": session["id"], "outcome": "closed"})
    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    assert (outcome["result"], outcome["intentResult"]) == ("succeeded", "succeeded"), outcome


@pytest.mark.parametrize("sdk_type, instead", [
    ("stripe_3ds2_fingerprint", "confirm the intent on your server with return_url"),
    ("intent_confirmation_challenge", "confirm the intent on your server"),
])
def test_the_native_use_stripe_sdk_forms_say_what_to_do_instead(world, sdk_type, instead):
    intent = server_confirmed(world.server)
    world.server.control(f"payment_intents/{intent['id']}/next_action",
                         {"type": "use_stripe_sdk", "use_stripe_sdk": {"type": sdk_type}})
    answer = world.client.call("paymentIntent.handleNextAction", {"clientSecret": intent["client_secret"]})
    error = answer["error"]
    assert answer["result"] == "failed" and answer["nextAction"]["kind"] == "stripeSDK"
    assert error["code"] == NEXT_ACTION_UNSUPPORTED and error["data"]["type"] == "use_stripe_sdk", error
    assert sdk_type in error["message"] and instead in error["message"], error["message"]


def test_requires_confirmation_after_the_action_is_success_for_handle_next_action(world, events):
    """Manual confirmation: the server confirms, the app handles 3-D Secure, the intent waits in
    requires_confirmation for the server's second confirmation. handleNextAction's completion
    counts that as success (includeRequiresConfirmation); handing over an intent the server has
    not confirmed yet is a failure ("Confirm the PaymentIntent on the backend")."""
    intent = server_confirmed(world.server, confirmation_method="manual", return_url=RETURN_URL)
    answer = world.client.call("paymentIntent.handleNextAction", {
        "clientSecret": intent["client_secret"], "returnURL": RETURN_URL, "start": {"mode": "inApp"}})
    session = answer["redirect"]
    world.client.call("handle-url", {"url": bank_page(session["openURL"], "succeed")})
    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    assert (outcome["result"], outcome["intentResult"]) == ("requires_confirmation", "succeeded"), outcome

    again = world.client.call("paymentIntent.handleNextAction", {"clientSecret": intent["client_secret"]})
    assert again["result"] == "failed" and again["error"]["code"] == PAYMENT_FAILED
    assert again["error"]["data"]["reason"] == "intentStatus"
    assert again["error"]["data"]["paymentIntentStatus"] == "requires_confirmation"
    # The server's second confirmation charges it without asking the customer again.
    assert world.server.api("POST", f"/v1/payment_intents/{intent['id']}/confirm")["status"] == "succeeded"


def test_a_setup_intent_in_processing_is_a_failure(world):
    """SetupIntents have no processing success (isProcessingSuccess is false), not even for the
    delayed-notification methods, whose PaymentIntents succeed in processing."""
    setup = world.server.api("POST", "/v1/setup_intents", {"payment_method_types": ["sepa_debit"]})
    confirmed = world.client.call("setupIntent.confirm", {
        "clientSecret": setup["client_secret"],
        "paymentMethod": {"sepaDebit": {"iban": "DE89370400440532013000"}, "billingDetails": JO}})
    assert confirmed["result"] == "succeeded", confirmed
    world.server.control(f"setup_intents/{setup['id']}/process")
    answer = world.client.call("setupIntent.handleNextAction", {"clientSecret": setup["client_secret"]})
    assert (answer["setupIntent"]["status"], answer["result"]) == ("processing", "failed"), answer
    assert answer["error"]["code"] == PAYMENT_FAILED and answer["error"]["data"]["reason"] == "intentStatus"


def test_a_scoped_client_secret_is_taken(world):
    """The SDK takes scoped secrets (pi_..._scoped_secret_...): stpd's pattern does too, and the
    request goes to Stripe, whose answer (here: no such PaymentIntent) comes back."""
    error = rpc_error(world.client, "paymentIntent.retrieve", {"clientSecret": "pi_3Abc_scoped_secret_Xyz"})
    assert error.code == STRIPE_INVALID_REQUEST, error
    assert world.server.requests(path="/v1/payment_intents/pi_3Abc")
    malformed = rpc_error(world.client, "paymentIntent.retrieve", {"clientSecret": "pi_3Abc_scoped_Xyz"})
    assert malformed.code == INVALID_PARAMS


@pytest.mark.parametrize("member, currency, billing", [
    ("cashapp", "usd", None),
    ("klarna", "eur", {"email": "jo@example.test", "address": {"country": "DE"}}),
])
def test_cash_app_and_klarna_are_reread_through_refresh(world, events, member, currency, billing):
    """Back from their own app, the intent is not updated at once (the stand-in holds the result
    for a few seconds, or until a refresh): the follow-up re-reads it through POST .../refresh, as
    the SDK does (supportsRefreshing), and reports the payment Stripe is about to mark paid."""
    intent = world.server.api("POST", "/v1/payment_intents",
                              {"amount": 1500, "currency": currency, "payment_method_types": [member]})
    method = {member: {}, **({"billingDetails": billing} if billing else {})}
    answer = world.client.call("paymentIntent.confirm", {"clientSecret": intent["client_secret"],
                                                         "paymentMethod": method, "returnURL": RETURN_URL,
                                                         "start": {"mode": "inApp"}})
    session = answer["redirect"]
    world.client.call("handle-url", {"url": bank_page(session["openURL"], "succeed")})
    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    assert (outcome["result"], outcome["intentResult"]) == ("succeeded", "succeeded"), outcome
    refreshes = world.server.requests(path=f"/v1/payment_intents/{intent['id']}/refresh")
    assert refreshes and refreshes[0]["method"] == "POST", refreshes


SHIPPING = {"name": "Jo Doe", "phone": "+15555550100",
            "address": {"line1": "1 Main St", "city": "San Francisco", "state": "CA", "postalCode": "94107",
                        "country": "US"}}


def test_a_confirmation_says_what_the_sdks_says(world):
    """payment_method_options (typed for card and US bank accounts, any type's under raw) and a
    PaymentIntent's shipping (Affirm needs it) reach Stripe as the SDK sends them; the stripe==16.1.0
    types judge every field at the session's end. A SetupIntent takes no shipping."""
    intent = world.server.api("POST", "/v1/payment_intents",
                              {"amount": 5000, "currency": "usd", "payment_method_types": ["affirm"]})
    answer = world.client.call("paymentIntent.confirm", {
        "clientSecret": intent["client_secret"], "paymentMethod": {"affirm": {}}, "returnURL": RETURN_URL,
        "shipping": SHIPPING, "paymentMethodOptions": {"raw": {"affirm": {"preferred_locale": "en-US"}}}})
    assert answer["result"] == "pending", answer
    form = world.server.requests(path=f"/v1/payment_intents/{intent['id']}/confirm")[-1]["form"]
    assert form["shipping"]["name"] == "Jo Doe" and form["shipping"]["address"]["postal_code"] == "94107", form
    assert form["payment_method_options"] == {"affirm": {"preferred_locale": "en-US"}}, form

    card = world.server.api("POST", "/v1/payment_intents",
                            {"amount": 5000, "currency": "eur", "payment_method_types": ["card"]})
    answer = world.client.call("paymentIntent.confirm", {
        "clientSecret": card["client_secret"], "paymentMethod": {"id": "pm_card_visa"},
        "paymentMethodOptions": {"card": {"network": "visa", "requestThreeDSecure": "automatic"}}})
    assert answer["result"] == "succeeded", answer
    form = world.server.requests(path=f"/v1/payment_intents/{card['id']}/confirm")[-1]["form"]
    assert form["payment_method_options"] == {"card": {"network": "visa", "request_three_d_secure": "automatic"}}

    setup = world.server.api("POST", "/v1/setup_intents", {"payment_method_types": ["card"]})
    error = rpc_error(world.client, "setupIntent.confirm", {"clientSecret": setup["client_secret"],
                                                            "paymentMethod": {"id": "pm_card_visa"},
                                                            "shipping": SHIPPING})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "shipping", error


def test_a_raw_type_gets_the_mandate_the_sdk_sends(world):
    """Bancontact given as raw still carries the online mandate on a SetupIntent, as the SDK's
    STPSetupIntentConfirmParams sends it for the type."""
    setup = world.server.api("POST", "/v1/setup_intents", {"payment_method_types": ["bancontact"]})
    world.client.call("setupIntent.confirm", {
        "clientSecret": setup["client_secret"], "returnURL": RETURN_URL,
        "paymentMethod": {"raw": {"type": "bancontact", "billing_details": {"name": "Jo Doe"}}}})
    form = world.server.requests(path=f"/v1/setup_intents/{setup['id']}/confirm")[-1]["form"]
    assert form["mandate_data"]["customer_acceptance"]["type"] == "online", form


def test_a_voucher_opens_its_page_and_ends_when_closed(world, events):
    """As the SDK's VoucherDisplayHandler: the hosted voucher opens (here in the app's browser; with
    start {opener: daemon} stpd opens it), and closing it re-reads the intent: a voucher still to pay
    is the SDK's success state."""
    intent = world.server.api("POST", "/v1/payment_intents",
                              {"amount": 25000, "currency": "mxn", "payment_method_types": ["oxxo"]})
    answer = world.client.call("paymentIntent.confirm", {
        "clientSecret": intent["client_secret"], "start": {"mode": "inApp"},
        "paymentMethod": {"oxxo": {}, "billingDetails": JO}})
    assert answer["result"] == "pending" and answer["nextAction"]["kind"] == "display", answer
    session = answer["redirect"]
    assert session["openURL"] == answer["nextAction"]["details"]["hosted_voucher_url"], session
    world.client.call("redirect.report", {"session": session["id"], "outcome": "closed"})
    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    assert (outcome["result"], outcome["intentResult"]) == ("requires_action", "succeeded"), outcome
