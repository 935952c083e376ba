"""Every next action STPPaymentHandler handles, every payment-method type and STPPaymentHandler's
status rules, end to end: the real stpd binary (publishable key only) against the project's
stripe-test-server, which starts each next action as Stripe's test mode does and whose control
endpoints (/_test/...) and clock play the customer's side. One daemon and one stand-in serve the
module; each test makes its own intents. Nothing sleeps: every wait is on a reply or an event.

What each kind of next action ends with (docs/next-actions.md):
- redirect kinds: result pending, a redirect session; the return URL (or app.foreground)
  completes it, the follow-up re-reads the intent, redirect.outcome and <kind>.finished say how;
- display kinds (vouchers, microdeposits, bank transfers): result succeeded with the details; a
  voucher opens its page by default (a redirect session, pending until closed), as the SDK does;
- kinds that await the customer elsewhere (QR codes, BLIK, UPI, card await-notification):
  result pending and a poll, which <kind>.finished ends;
- use_stripe_sdk: its three_d_secure_redirect form is a redirect kind (a page at stripe_js); the
  native forms fail, NextActionUnsupported; a type stpd cannot carry: failed,
  NextActionUnsupported naming it.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from codes import NEXT_ACTION_UNSUPPORTED, PAYMENT_FAILED, RETURN_URL_REQUIRED
from flows import INVALID_PARAMS, STRIPE_INVALID_REQUEST, Events, bank_page, rpc_error, stpd_for

RETURN_URL = "myshop://pay?order=7"
YEAR = time.gmtime().tm_year + 3
JO = {"name": "Jo Doe", "email": "jo@example.test"}


@pytest.fixture(scope="module")
def world(module_start_stpd, module_stripe_test_server, tmp_path_factory):
    server = module_stripe_test_server
    daemon = stpd_for(module_start_stpd, tmp_path_factory.mktemp("stpd"), server)
    return SimpleNamespace(server=server, daemon=daemon, client=daemon.client())


@pytest.fixture
def events(world):
    """A connection of the test's own, subscribed to the intents' and redirects' events."""
    with world.daemon.client() as client:
        yield Events(client, ["paymentIntent.*", "setupIntent.*", "redirect.*"])


def payment_intent(server, *types: str, amount: int = 2000, currency: str = "eur") -> dict:
    """As the merchant's server makes one, with the secret key."""
    return server.api("POST", "/v1/payment_intents",
                      {"amount": amount, "currency": currency, "payment_method_types": list(types)})


def setup_intent(server, *types: str) -> dict:
    return server.api("POST", "/v1/setup_intents", {"payment_method_types": list(types)})


def card(number: str = "4242424242424242") -> dict:
    return {"card": {"number": number, "expMonth": 12, "expYear": YEAR, "cvc": "123"}}


def confirm(world, intent: dict, method: dict, kind: str = "paymentIntent", **extra) -> dict:
    return world.client.call(f"{kind}.confirm", {"clientSecret": intent["client_secret"], "paymentMethod": method,
                                                 **extra})


def finished(events: Events, intent_id: str) -> dict:
    """The intent's record as its poll's end announced it (read already, or still to come)."""
    kind = "setupIntent" if intent_id.startswith("seti_") else "paymentIntent"
    seen = events.read_for(intent_id, f"{kind}.finished")
    return (seen[-1] if seen else events.wait(f"{kind}.finished", intent_id))["object"]


# -- Every payment-method type confirms, and each next action is carried by its kind ------------

GB = {"line1": "1 High St", "city": "London", "postalCode": "EC1A 1BB", "country": "GB"}
BR = {"line1": "Rua 1", "city": "Rio de Janeiro", "state": "RJ", "postalCode": "20000-000", "country": "BR"}
REDIRECT = ("redirect_to_url", "redirect", "pending")

# member of paymentMethod, its arguments, billingDetails, Stripe's type, then the next action
# (None: none), its kind, and STPPaymentHandler's result.
TYPES = [
    ("card", card()["card"], None, "card", None, None, "succeeded"),
    ("usBankAccount", {"routingNumber": "110000000", "accountNumber": "000123456789",
                       "accountHolderType": "individual"}, {"name": "Jo Doe"}, "us_bank_account",
     "verify_with_microdeposits", "display", "succeeded"),
    # Bank debits are processing for days: success, as they are delayed-notification methods.
    ("sepaDebit", {"iban": "DE89370400440532013000"}, JO, "sepa_debit", None, None, "succeeded"),
    ("bacsDebit", {"sortCode": "108800", "accountNumber": "00012345"}, {**JO, "address": GB}, "bacs_debit",
     None, None, "succeeded"),
    ("auBecsDebit", {"bsbNumber": "000000", "accountNumber": "000123456"}, JO, "au_becs_debit", None, None,
     "succeeded"),
    ("ideal", {"bank": "ing"}, None, "ideal", *REDIRECT),
    ("bancontact", {}, {"name": "Jo Doe"}, "bancontact", *REDIRECT),
    ("eps", {}, {"name": "Jo Doe"}, "eps", *REDIRECT),
    ("p24", {}, {"email": "jo@example.test"}, "p24", *REDIRECT),
    ("fpx", {"bank": "maybank2u"}, None, "fpx", *REDIRECT),
    ("paypal", {}, None, "paypal", *REDIRECT),
    ("klarna", {}, {"email": "jo@example.test", "address": {"country": "DE"}}, "klarna", *REDIRECT),
    ("affirm", {}, None, "affirm", *REDIRECT),
    ("afterpayClearpay", {}, {**JO, "address": GB}, "afterpay_clearpay", *REDIRECT),
    ("zip", {}, None, "zip", *REDIRECT),
    ("revolutPay", {}, None, "revolut_pay", *REDIRECT),
    ("amazonPay", {}, None, "amazon_pay", *REDIRECT),
    ("twint", {}, None, "twint", *REDIRECT),
    ("mobilepay", {}, None, "mobilepay", *REDIRECT),
    ("grabpay", {}, None, "grabpay", *REDIRECT),
    ("alma", {}, None, "alma", *REDIRECT),
    ("billie", {}, None, "billie", *REDIRECT),
    ("sunbit", {}, None, "sunbit", *REDIRECT),
    ("crypto", {}, None, "crypto", *REDIRECT),
    ("payByBank", {}, None, "pay_by_bank", *REDIRECT),
    ("krCard", {}, None, "kr_card", *REDIRECT),
    ("naverPay", {}, None, "naver_pay", *REDIRECT),
    ("payco", {}, None, "payco", *REDIRECT),
    # Discontinued by Stripe, kept as the SDK has them.
    ("sofort", {"country": "DE"}, None, "sofort", *REDIRECT),
    ("giropay", {}, {"name": "Jo Doe"}, "giropay", *REDIRECT),
    ("alipay", {}, None, "alipay", "alipay_handle_redirect", "redirect", "pending"),
    ("cashapp", {}, None, "cashapp", "cashapp_handle_redirect_or_display_qr_code", "redirect", "pending"),
    ("swish", {}, None, "swish", "swish_handle_redirect_or_display_qr_code", "redirect", "pending"),
    # A voucher opens its page by default, as the SDK's VoucherDisplayHandler: pending until closed.
    ("oxxo", {}, JO, "oxxo", "oxxo_display_details", "display", "pending"),
    ("boleto", {"taxId": "000.000.000-00"}, {**JO, "address": BR}, "boleto", "boleto_display_details", "display",
     "pending"),
    ("konbini", {}, JO, "konbini", "konbini_display_details", "display", "pending"),
    ("multibanco", {}, {"email": "jo@example.test"}, "multibanco", "multibanco_display_details", "display",
     "pending"),
    ("raw", {"type": "customer_balance"}, None, "customer_balance", "display_bank_transfer_instructions", "display",
     "succeeded"),
    ("pix", {}, None, "pix", "pix_display_qr_code", "awaitCustomer", "pending"),
    ("promptpay", {}, {"email": "jo@example.test"}, "promptpay", "promptpay_display_qr_code", "awaitCustomer",
     "pending"),
    ("paynow", {}, None, "paynow", "paynow_display_qr_code", "awaitCustomer", "pending"),
    ("wechatPay", {}, None, "wechat_pay", "wechat_pay_display_qr_code", "awaitCustomer", "pending"),
    ("blik", {"code": "123456"}, None, "blik", "blik_authorize", "awaitCustomer", "pending"),
    ("raw", {"type": "upi"}, None, "upi", "upi_handle_redirect_or_display_qr_code", "awaitCustomer", "pending"),
]


def test_the_table_covers_every_type_of_the_contract(contract):
    """A type added to paymentIntent.confirm must be confirmed here too."""
    (method,) = [m for m in contract["methods"] if m["name"] == "paymentIntent.confirm"]
    (param,) = [p for p in method["params"] if p["name"] == "paymentMethod"]
    members = set(param["schema"]["properties"]) - {"id", "billingDetails", "metadata"}
    assert members == {member for member, *_ in TYPES}


@pytest.mark.parametrize("member, arguments, billing, stripe_type, action, kind, result", TYPES,
                         ids=[f"{t[0]}-{t[3]}" for t in TYPES])
def test_every_type_confirms_and_its_next_action_is_carried_by_its_kind(
        world, member, arguments, billing, stripe_type, action, kind, result):
    intent = payment_intent(world.server, stripe_type)
    method = {member: arguments, **({"billingDetails": billing} if billing else {})}
    answer = confirm(world, intent, method, returnURL=RETURN_URL)
    assert answer["result"] == result, answer
    assert answer["paymentIntent"]["id"] == intent["id"] and "client_secret" not in answer["paymentIntent"]
    (call,) = world.server.requests(path=f"/v1/payment_intents/{intent['id']}/confirm")
    assert call["form"]["payment_method_data"]["type"] == stripe_type
    if action is None:
        assert answer["nextAction"] is None and answer.get("redirect") is None and answer.get("poll") is None
        return
    next_action = answer["nextAction"]
    assert (next_action["type"], next_action["kind"]) == (action, kind)
    # The details are Stripe's hash for the type, as sent.
    assert next_action["details"] == answer["paymentIntent"]["next_action"][action]
    if kind == "redirect":
        session = answer["redirect"]
        assert next_action["session"] == session["id"] and session["status"] == "notStarted"
        assert session["paymentIntentId"] == intent["id"] and session["returnURL"].startswith("myshop://pay")
    elif kind == "display" and result == "pending":
        session = answer["redirect"]
        assert session["redirectURL"] == next_action["details"]["hosted_voucher_url"] and session.get("returnURL") is None
    elif kind == "awaitCustomer":
        poll = answer["poll"]
        assert (poll["status"], poll["purpose"], poll["nextActionType"]) == ("polling", "awaitCustomer", action)
        stopped = world.client.call("paymentIntent.stopPolling", {"id": intent["id"]})
        assert stopped["poll"]["status"] == "stopped"
    else:
        assert answer.get("redirect") is None and answer.get("poll") is None


# -- Redirect kinds -------------------------------------------------------------------------------

def test_three_d_secure_opens_stripe_js_without_a_return_url_and_redirects_with_one(world, events):
    """Without a returnURL Stripe answers a card needing authentication with use_stripe_sdk in its
    three_d_secure_redirect form: a page at stripe_js, which the SDK opens, so a session with no
    return URL that the customer closing completes. With one, Stripe redirects, and the redirect
    ends the confirmation (redirect.outcome, paymentIntent.finished)."""
    intent = payment_intent(world.server, "card")
    answer = confirm(world, intent, card("4000002500003155"), start={"mode": "inApp"})
    action = answer["nextAction"]
    assert answer["result"] == "pending" and (action["type"], action["kind"]) == ("use_stripe_sdk", "redirect")
    session = answer["redirect"]
    assert session["openURL"] == action["details"]["stripe_js"] and session.get("returnURL") is None
    world.server.control(f"payment_intents/{intent['id']}/succeed")
    world.client.call("redirect.report", {"session": session["id"], "outcome": "closed"})
    assert events.wait("redirect.outcome", session["id"])["object"]["outcome"]["intentResult"] == "succeeded"

    intent = payment_intent(world.server, "card")
    answer = confirm(world, intent, card("4000002500003155"), returnURL=RETURN_URL, start={"mode": "inApp"})
    assert answer["result"] == "pending" and answer["nextAction"]["type"] == "redirect_to_url"
    session = answer["redirect"]
    location = bank_page(session["openURL"], "succeed")
    assert world.client.call("handle-url", {"url": location}) == {"handled": True, "session": session["id"]}
    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    assert (outcome["result"], outcome["intentResult"]) == ("succeeded", "succeeded")
    done = finished(events, intent["id"])
    assert done["poll"]["purpose"] == "followUp" and done["poll"]["redirect"] == session["id"]
    assert (done["status"], done["poll"]["result"]) == ("succeeded", "succeeded")
    assert done["intent"]["amount_received"] == 2000 and "client_secret" not in done["intent"]
    assert events.types_for(intent["id"]) == ["paymentIntent.pollStarted", "paymentIntent.finished"]


def test_alipay_redirect(world, events):
    intent = payment_intent(world.server, "alipay")
    answer = confirm(world, intent, {"alipay": {}}, returnURL=RETURN_URL, start={"mode": "inApp"})
    session = answer["redirect"]
    assert session["redirectURL"] == answer["nextAction"]["details"]["url"]
    world.client.call("handle-url", {"url": bank_page(session["openURL"], "fail")})
    outcome = events.wait("redirect.outcome", session["id"])["object"]["outcome"]
    assert outcome["intentResult"] == "failed" and outcome["error"]["code"] == PAYMENT_FAILED
    assert finished(events, intent["id"])["poll"]["error"]["code"] == PAYMENT_FAILED


@pytest.mark.parametrize("member", ["cashapp", "swish"])
def test_cash_app_and_swish_return_to_the_confirmations_return_url(world, events, member):
    """Their mobile_auth_url sends the customer back to the return URL the confirmation gave;
    handling one without it is the SDK's missingReturnURL."""
    intent = payment_intent(world.server, member)
    answer = confirm(world, intent, {member: {}}, returnURL=RETURN_URL, start={"mode": "inApp"})
    session = answer["redirect"]
    assert session["redirectURL"] == answer["nextAction"]["details"]["mobile_auth_url"]
    assert session["returnURL"] == RETURN_URL

    handled = world.client.call("paymentIntent.handleNextAction", {"clientSecret": intent["client_secret"]})
    assert handled["result"] == "failed" and handled["error"]["code"] == RETURN_URL_REQUIRED

    location = bank_page(session["openURL"], "succeed")
    assert location.startswith(RETURN_URL + "&")
    world.client.call("handle-url", {"url": location})
    assert events.wait("redirect.outcome", session["id"])["object"]["outcome"]["intentResult"] == "succeeded"


def test_wechat_pay_ios_opens_the_app_and_completes_in_the_foreground(world, events):
    """The iOS action has no return URL: the session opens WeChat and completes when the app comes
    back to the foreground, as the SDK's does."""
    intent = payment_intent(world.server, "wechat_pay")
    world.server.api("POST", f"/v1/payment_intents/{intent['id']}/confirm",
                     {"payment_method_data": {"type": "wechat_pay"},
                      "payment_method_options": {"wechat_pay": {"client": "ios"}}})
    answer = world.client.call("paymentIntent.handleNextAction", {
        "clientSecret": intent["client_secret"], "start": {"mode": "automatic"}})
    session = answer["redirect"]
    assert session["openURL"] == answer["nextAction"]["details"]["native_url"] and session.get("returnURL") is None
    world.server.control(f"payment_intents/{intent['id']}/succeed")
    assert session["id"] in world.client.call("app.foreground", {})["completedRedirects"]
    assert finished(events, intent["id"])["poll"]["result"] == "succeeded"


# -- Types stpd cannot carry ----------------------------------------------------------------------

@pytest.mark.parametrize("action", [
    {"type": "wechat_pay_redirect_to_android_app", "wechat_pay_redirect_to_android_app": {"app_id": "wx"}},
    {"type": "some_future_action", "some_future_action": {"url": "https://x.test"}},
])
def test_a_type_stpd_cannot_carry_is_an_error_naming_it(world, action):
    intent = payment_intent(world.server, "card")
    world.server.control(f"payment_intents/{intent['id']}/next_action", action)
    retrieved = world.client.call("paymentIntent.retrieve", {"clientSecret": intent["client_secret"]})
    assert retrieved["nextAction"]["type"] == action["type"] and retrieved["nextAction"]["kind"] == "unsupported"
    answer = world.client.call("paymentIntent.handleNextAction", {"clientSecret": intent["client_secret"],
                                                                   "returnURL": RETURN_URL})
    assert answer["result"] == "failed"
    assert answer["error"]["code"] == NEXT_ACTION_UNSUPPORTED and answer["error"]["data"]["type"] == action["type"]
    assert action["type"] in answer["error"]["message"]


# -- Display kinds --------------------------------------------------------------------------------

def test_a_voucher_the_app_shows_is_the_sdks_success_and_is_paid_later(world):
    """voucher: display, for an app that shows the voucher itself: succeeded at once."""
    intent = payment_intent(world.server, "konbini", currency="jpy")
    answer = confirm(world, intent, {"konbini": {}, "billingDetails": JO}, voucher="display")
    assert answer["result"] == "succeeded" and answer["paymentIntent"]["status"] == "requires_action"
    details = answer["nextAction"]["details"]
    assert details["hosted_voucher_url"] and details["stores"]["lawson"]["payment_code"]
    # The customer pays at the store three minutes later (Stripe's test mode).
    world.server.advance_clock(180)
    retrieved = world.client.call("paymentIntent.retrieve", {"clientSecret": intent["client_secret"]})
    assert retrieved["paymentIntent"]["status"] == "succeeded" and retrieved["nextAction"] is None


def test_microdeposits_verify(world):
    """verify_with_microdeposits is the SDK's success at once; verifyMicrodeposits with Stripe's test
    amounts then leaves the PaymentIntent processing, which is success for a bank debit."""
    bank = {"usBankAccount": {"routingNumber": "110000000", "accountNumber": "000123456789",
                              "accountHolderType": "individual"}, "billingDetails": {"name": "Jo Doe"}}
    intent = payment_intent(world.server, "us_bank_account", currency="usd")
    answer = confirm(world, intent, bank)
    assert (answer["result"], answer["nextAction"]["type"]) == ("succeeded", "verify_with_microdeposits")
    error = rpc_error(world.client, "paymentIntent.verifyMicrodeposits", {"clientSecret": intent["client_secret"]})
    assert error.code == INVALID_PARAMS, error
    error = rpc_error(world.client, "paymentIntent.verifyMicrodeposits",
                      {"clientSecret": intent["client_secret"], "amounts": [10, 20]})
    assert error.code == STRIPE_INVALID_REQUEST and "attempts remaining" in error.data["message"], error
    verified = world.client.call("paymentIntent.verifyMicrodeposits",
                                 {"clientSecret": intent["client_secret"], "amounts": [32, 45]})
    assert verified["result"] == "succeeded" and verified["paymentIntent"]["status"] in ("processing", "succeeded")
    (call,) = world.server.requests(path=f"/v1/payment_intents/{intent['id']}/verify_microdeposits",
                                    method="POST")[-1:]
    assert call["form"]["amounts"] == ["32", "45"]

    setup = setup_intent(world.server, "us_bank_account")
    assert confirm(world, setup, bank, kind="setupIntent")["nextAction"]["type"] == "verify_with_microdeposits"
    verified = world.client.call("setupIntent.verifyMicrodeposits",
                                 {"clientSecret": setup["client_secret"], "descriptorCode": "SM11AA"})
    assert verified["result"] == "succeeded" and verified["setupIntent"]["status"] == "succeeded"


# -- Kinds that await the customer elsewhere ----------------------------------------------------

def test_a_qr_code_is_polled_until_the_customer_pays(world, events):
    intent = payment_intent(world.server, "paynow", currency="sgd")
    answer = confirm(world, intent, {"paynow": {}})
    assert answer["result"] == "pending" and answer["nextAction"]["details"]["image_url_png"]
    started = events.wait("paymentIntent.pollStarted", intent["id"])["object"]
    assert started["poll"]["deadline"] == answer["poll"]["deadline"]  # PayNow: an hour (the SDK's)
    assert world.client.call("paymentIntent.get", {"id": intent["id"]})["poll"]["status"] == "polling"
    world.server.control(f"payment_intents/{intent['id']}/succeed")
    done = finished(events, intent["id"])
    assert (done["status"], done["poll"]["result"], done.get("nextAction")) == ("succeeded", "succeeded", None)
    listed = world.client.call("paymentIntent.list", {"status": "finished"})["intents"]
    assert intent["id"] in [i["id"] for i in listed]


def test_blik_is_approved_in_the_banking_app(world, events):
    intent = payment_intent(world.server, "blik", currency="pln")
    assert confirm(world, intent, {"blik": {"code": "123456"}})["poll"]["nextActionType"] == "blik_authorize"
    world.server.advance_clock(10)  # the stand-in's customer approves after 10 s
    assert finished(events, intent["id"])["poll"]["result"] == "succeeded"


def test_blik_not_approved_is_a_failure_carrying_the_last_payment_error(world, events):
    """requires_payment_method after the action: STPPaymentHandler's failure, with Stripe's error."""
    intent = payment_intent(world.server, "blik", currency="pln")
    confirm(world, intent, {"blik": {"code": "654321"}})
    world.server.advance_clock(60)  # BLIK allows 60 s
    done = finished(events, intent["id"])
    error = done["poll"]["error"]
    assert done["poll"]["result"] == "failed" and error["code"] == PAYMENT_FAILED
    assert error["data"]["paymentIntentStatus"] == "requires_payment_method"
    assert error["data"]["lastPaymentError"]["code"] == "payment_intent_payment_attempt_expired"


@pytest.mark.parametrize("action", [
    {"type": "card_await_notification",
     "card_await_notification": {"charge_attempt_at": 1_900_000_000, "customer_approval_required": True}},
    {"type": "klarna_display_qr_code", "klarna_display_qr_code": {"data": "x", "image_url_png": "https://q.test/k.png",
                                                                   "image_url_svg": "https://q.test/k.svg"}},
])
def test_other_kinds_that_await_the_customer(world, events, action):
    """Unknown to the SDK, awaited the same way (a PaymentIntent and a SetupIntent)."""
    for intent, kind in [(payment_intent(world.server, "card"), "paymentIntent"),
                         (setup_intent(world.server, "card"), "setupIntent")]:
        collection = "setup_intents" if kind == "setupIntent" else "payment_intents"
        world.server.control(f"{collection}/{intent['id']}/next_action", action)
        answer = world.client.call(f"{kind}.handleNextAction", {"clientSecret": intent["client_secret"]})
        assert answer["result"] == "pending" and answer["nextAction"]["kind"] == "awaitCustomer"
        world.server.control(f"{collection}/{intent['id']}/succeed")
        assert finished(events, intent["id"])["poll"]["result"] == "succeeded"


def test_a_poll_ends_at_its_deadline(world, events):
    """Until the code expires when the SDK sets no deadline: an expired Pix code's poll makes its
    one last read and ends canceled, as PaymentSheet's polling screen ends."""
    intent = payment_intent(world.server, "pix", currency="brl")
    world.server.control(f"payment_intents/{intent['id']}/next_action", {
        "type": "pix_display_qr_code", "pix_display_qr_code": {"data": "x", "expires_at": 1_600_000_000}})
    answer = world.client.call("paymentIntent.handleNextAction", {"clientSecret": intent["client_secret"]})
    assert answer["poll"]["deadline"].startswith("2020-09-13")
    done = finished(events, intent["id"])
    assert (done["status"], done["poll"]["result"], done["poll"].get("error")) == ("requires_action", "canceled", None)


def test_a_stopped_poll_never_reports(world, events):
    intent = payment_intent(world.server, "promptpay", currency="thb")
    confirm(world, intent, {"promptpay": {}, "billingDetails": {"email": "jo@example.test"}})
    stopped = world.client.call("paymentIntent.stopPolling", {"id": intent["id"]})
    assert stopped["poll"]["status"] == "stopped"
    events.wait("paymentIntent.pollStopped", intent["id"])
    world.server.control(f"payment_intents/{intent['id']}/succeed")
    # Another intent's end, read after: this one's never came.
    marker = payment_intent(world.server, "paynow", currency="sgd")
    confirm(world, marker, {"paynow": {}})
    world.server.control(f"payment_intents/{marker['id']}/succeed")
    finished(events, marker["id"])
    assert events.read_for(intent["id"], "paymentIntent.finished") == []
    assert world.client.call("paymentIntent.get", {"id": intent["id"]})["poll"]["status"] == "stopped"


# -- STPPaymentHandler's status rules -------------------------------------------------------------

def test_processing_is_success_only_for_the_delayed_notification_methods(world):
    sepa = payment_intent(world.server, "sepa_debit")
    answer = confirm(world, sepa, {"sepaDebit": {"iban": "DE89370400440532013000"}, "billingDetails": JO})
    assert (answer["paymentIntent"]["status"], answer["result"]) == ("processing", "succeeded")

    paid_by_card = payment_intent(world.server, "card")
    world.server.api("POST", f"/v1/payment_intents/{paid_by_card['id']}/confirm", {"payment_method": "pm_card_visa"})
    world.server.control(f"payment_intents/{paid_by_card['id']}/process")
    answer = world.client.call("paymentIntent.handleNextAction", {"clientSecret": paid_by_card["client_secret"]})
    assert (answer["paymentIntent"]["status"], answer["result"]) == ("processing", "failed")
    assert answer["error"]["code"] == PAYMENT_FAILED and answer["error"]["data"]["reason"] == "intentStatus"


def test_canceled_is_reported_as_canceled(world, events):
    intent = payment_intent(world.server, "paynow", currency="sgd")
    confirm(world, intent, {"paynow": {}})
    world.server.api("POST", f"/v1/payment_intents/{intent['id']}/cancel")
    done = finished(events, intent["id"])
    assert (done["status"], done["poll"]["result"], done["poll"].get("error")) == ("canceled", "canceled", None)
    answer = world.client.call("paymentIntent.handleNextAction", {"clientSecret": intent["client_secret"]})
    assert answer["result"] == "canceled" and answer.get("error") is None


def test_a_closed_bank_page_is_re_read_before_reporting_cancellation(world, events):
    intent = payment_intent(world.server, "ideal")
    answer = confirm(world, intent, {"ideal": {}}, returnURL=RETURN_URL, start={"mode": "inApp"})
    world.client.call("redirect.report", {"session": answer["redirect"]["id"], "outcome": "closed"})
    done = finished(events, intent["id"])
    assert (done["status"], done["poll"]["result"]) == ("requires_action", "canceled")


def test_a_setup_intent_confirms_with_a_redirect_too(world, events):
    setup = setup_intent(world.server, "card")
    answer = confirm(world, setup, card("4000002760003184"), kind="setupIntent", returnURL=RETURN_URL,
                     start={"mode": "browser"})
    assert answer["result"] == "pending" and answer["setupIntent"]["id"] == setup["id"]
    world.server.control(f"setup_intents/{setup['id']}/succeed")
    assert answer["redirect"]["id"] in world.client.call("app.foreground", {})["completedRedirects"]
    done = finished(events, setup["id"])
    assert done["object"] == "setup_intent_record" and done["poll"]["result"] == "succeeded"


# -- Durable: a poll survives a restart ---------------------------------------------------------

def test_a_poll_survives_a_restart_and_keeps_its_deadline(start_stpd, tmp_path, stripe_test_server):
    server = stripe_test_server
    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    with daemon.client() as client:
        intent = payment_intent(server, "blik", currency="pln")
        poll = client.call("paymentIntent.confirm", {"clientSecret": intent["client_secret"],
                                                     "paymentMethod": {"blik": {"code": "123456"}}})["poll"]
    assert daemon.terminate() == 0

    daemon = stpd_for(start_stpd, tmp_path / "stpd", server)
    with daemon.client() as client:
        events = Events(client, ["paymentIntent.*"], since=0)
        server.advance_clock(10)
        done = finished(events, intent["id"])
        assert (done["poll"]["id"], done["poll"]["deadline"]) == (poll["id"], poll["deadline"])
        assert done["poll"]["result"] == "succeeded"
