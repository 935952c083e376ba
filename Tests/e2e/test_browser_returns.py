"""Every redirect path in a real browser: headless Chromium is the customer on stripe-test-server's
bank pages, pressing their buttons, and comes back to the app each of the three ways stpd offers
(docs/desktop.md, "the way back"):

- `loopback`: returnURL "loopback"; the app (a kiosk) shows the page in its own browser, and the
  bank's 302 brings Chromium to stpd's listener on 127.0.0.1, whose page says how it went;
- `scheme`: an app URL scheme registered by contrib/desktop/install-url-handler in a private XDG
  directory; the app opens the page in the desktop's browser; the real xdg-open, reading that
  directory, runs `stpctl handle-url` (headless Chromium launches no external handler: the test
  hands xdg-open the URL Chromium was sent to, as a desktop browser would);
- `daemon`: stpd opens the page itself (`opener: "daemon"`, STPD_URL_OPENER=xdg-open, `$BROWSER`
  a wrapper that opens a tab in this Chromium), and the customer comes back to the loopback.

For a card PaymentIntent with 3-D Secure, a SetupIntent, a Bancontact Source and an Alipay
PaymentIntent, each way back is tried with the customer authorising, failing, and closing the
page (the app then reports `closed`, or calls `app.foreground` when the page was in the desktop's
browser). Each test checks what the app sees (events, the final `redirect.get`, the intent or
Source) and what the customer sees (the page after the return).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from browser import browser  # noqa: F401 (the fixture)
from conftest import REPO_ROOT, clean_environment
from flows import Events, stpd_for

APP = "Browser Test Shop"
AUTHORISED = f"authorised: you can close this window and return to {APP}."
FLOWS = ["card3ds", "setupIntent", "bancontactSource", "alipay"]
OUTCOMES = ["authorise", "fail", "close"]
WAYS = ["loopback", "scheme", "daemon"]
_orders = itertools.count(1)


@pytest.fixture(scope="module")
def world(module_start_stpd, module_stripe_test_server, browser, tmp_path_factory):  # noqa: F811
    """One stpd, one stripe-test-server, one browser and one private desktop (XDG directories
    with the app's URL scheme registered) for the module."""
    home = tmp_path_factory.mktemp("desktop")
    # Letters only: xdg-open takes a scheme with a digit in it for a file name.
    scheme = "stpdbrowser" + "".join(chr(ord("a") + int(d)) for d in str(os.getpid()))
    xdg = {"XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_DATA_DIRS": str(home / "data"), "HOME": str(home)}
    (home / "data").mkdir()
    (home / "config").mkdir()
    opener = browser.opener_script(home)
    server = module_stripe_test_server
    daemon = stpd_for(module_start_stpd, tmp_path_factory.mktemp("stpd"), server,
                      "--merchant-name", APP, "--url-opener", "xdg-open",
                      env={**xdg, "BROWSER": str(opener), "DISPLAY": None, "WAYLAND_DISPLAY": None,
                           "STPD_REDIRECT_POLL_TIMEOUT": "2"})
    bin_dir = Path(daemon.command[0]).parent
    desktop = clean_environment(**xdg, PATH=f"{bin_dir}:{os.environ.get('PATH', '')}",
                                STPD_SOCKET=str(daemon.socket_path),
                                # xdg-open looks up x-scheme-handler entries only on a display.
                                DISPLAY=":stpd-browser-test")
    installed = subprocess.run(
        ["/bin/sh", str(REPO_ROOT / "contrib" / "desktop" / "install-url-handler"), "--stpctl", str(bin_dir / "stpctl"),
         "--socket", str(daemon.socket_path), scheme],
        env=desktop, capture_output=True, text=True, timeout=30)
    assert installed.returncode == 0, installed.stderr
    with daemon.client() as client:
        yield SimpleNamespace(server=server, daemon=daemon, client=client, scheme=scheme, desktop=desktop,
                              browser=browser)


@pytest.fixture
def events(world):
    with world.daemon.client() as client:
        yield Events(client, ["redirect.*", "paymentIntent.*", "setupIntent.*", "source.*"])
    # A test that failed half-way leaves no tab for the next one to mistake for its own.
    for tab in set(world.browser.tabs) - {world.browser.home}:
        world.browser.driver.switch_to.window(tab)
        world.browser.driver.close()
    world.browser.driver.switch_to.window(world.browser.home)


# -- the app's side ------------------------------------------------------------------------------

def return_url(world, way: str) -> str:
    return f"{world.scheme}://stripe-redirect?order={next(_orders)}" if way == "scheme" else "loopback"


def start_options(way: str) -> dict:
    # A kiosk shows the page in its own browser (inApp); a desktop app hands it to the desktop's
    # browser (browser mode: coming back to the app completes it); or stpd opens it.
    return {"loopback": {"mode": "inApp"}, "scheme": {"mode": "browser"},
            "daemon": {"mode": "automatic", "opener": "daemon"}}[way]


def begin(world, flow: str, way: str) -> SimpleNamespace:
    """What the app does up to the customer's page: the merchant's server makes the object, the
    app confirms it (or creates the Source) through stpd and starts the redirect session."""
    server, client = world.server, world.client
    url = return_url(world, way)
    start = start_options(way)
    if flow == "bancontactSource":
        created = client.call("source.create", {"params": {"bancontact": {
            "amount": 1099, "name": "Jo Doe", "returnURL": url}}})
        source = created["source"]
        session = client.call("redirect.create", {"source": {"id": source["id"]}})
        session = client.call("redirect.start", {"session": session["id"], **start})
        return SimpleNamespace(kind="source", id=source["id"], session=session)
    if flow == "setupIntent":
        intent = server.api("POST", "/v1/setup_intents", {"payment_method_types": ["card"]})
        kind, method = "setupIntent", {"id": "pm_card_authenticationRequired"}
    elif flow == "card3ds":
        intent = server.api("POST", "/v1/payment_intents",
                            {"amount": 1099, "currency": "eur", "payment_method_types": ["card"]})
        kind, method = "paymentIntent", {"id": "pm_card_authenticationRequired"}
    else:
        intent = server.api("POST", "/v1/payment_intents",
                            {"amount": 1099, "currency": "cny", "payment_method_types": ["alipay"]})
        kind, method = "paymentIntent", {"alipay": {}}
    answer = client.call(f"{kind}.confirm", {"clientSecret": intent["client_secret"], "paymentMethod": method,
                                             "returnURL": url, "start": start})
    assert answer["result"] == "pending", answer
    return SimpleNamespace(kind=kind, id=intent["id"], secret=intent["client_secret"], session=answer["redirect"])


def check_return_url(session: dict, way: str, world) -> None:
    if way == "scheme":
        assert session["returnURL"].startswith(f"{world.scheme}://stripe-redirect?order=")
    else:
        # Every view of the session shows the loopback URL stpd issued (plus a Source's merchant name).
        assert session["returnURL"].startswith("http://127.0.0.1:"), session
        assert "/return/" in session["returnURL"]
        status = world.client.call("daemon.status", {})["loopback"]
        assert status["listening"] and status["port"] == int(session["returnURL"].split(":")[2].split("/")[0])
        assert "/return/" not in str(status)


# -- the customer's side ---------------------------------------------------------------------

def show_page(world, began: SimpleNamespace, way: str) -> None:
    browser = world.browser
    if way == "daemon":
        # stpd already ran xdg-open -> $BROWSER when the session started: the tab is there.
        browser.wait_new_tab({browser.home})
    else:
        browser.open(began.session["openURL"])
    browser.wait(lambda: browser.driver.find_element("id", "authorise").is_displayed(), what="the bank's buttons")


def come_back(world, began: SimpleNamespace, way: str, outcome: str) -> str | None:
    """The customer acts on the bank page; returns the page text they see after coming back."""
    browser = world.browser
    if outcome == "close":
        browser.close_tab()
        if way == "loopback":
            # The kiosk saw its browser's page close.
            world.client.call("redirect.report", {"session": began.session["id"], "outcome": "closed"})
        else:
            # The customer closed the desktop's browser and went back to the app.
            world.client.call("app.foreground", {})
        return None
    browser.press("authorise" if outcome == "authorise" else "fail")
    if way == "scheme":
        # The desktop browser hands the app's URL to xdg-open, which runs the registered handler.
        url = browser.sent_to(began.session["returnURL"].split("&redirect_merchant_name")[0])
        opened = subprocess.run(["xdg-open", url], env=world.desktop, capture_output=True, text=True, timeout=30)
        assert opened.returncode == 0, opened.stderr
        text = browser.text()
        browser.close_tab()
        return text
    text = browser.wait_text("close this window")
    assert browser.url.startswith("http://127.0.0.1:") and "/return/" in browser.url
    browser.close_tab()
    return text


# -- the test --------------------------------------------------------------------------------

@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.parametrize("flow", FLOWS)
def test_customer_comes_back(world, events, flow, outcome, way):
    began = begin(world, flow, way)
    session_id = began.session["id"]
    check_return_url(began.session, way, world)
    show_page(world, began, way)
    page = come_back(world, began, way, outcome)

    # A Source's page closed in a kiosk completes with RedirectCancelled and no follow-up.
    cancelled = flow == "bancontactSource" and outcome == "close" and way == "loopback"
    settled = events.wait("redirect.completed" if cancelled else "redirect.outcome", session_id)["object"]
    session = world.client.call("redirect.get", {"session": session_id})
    assert session["status"] == "completed" and session["outcome"] == settled["outcome"], (session, settled)
    assert "redirect.completed" in events.types_for(session_id)
    check_return_url(session, way, world)
    trigger = {"authorise": "url", "fail": "url"}.get(outcome, "closed" if way == "loopback" else "foreground")
    assert session["completion"]["trigger"] == trigger, session

    thing = "Payment method" if flow == "setupIntent" else "Payment"
    if began.kind == "source":
        check_source(world, began, session, outcome, way)
    else:
        check_intent(world, began, session, outcome)
    if outcome == "close":
        assert page is None and world.browser.tabs == [world.browser.home]
    elif way == "scheme":
        # The desktop's browser stays on the bank page; the app shows what follows.
        assert "Authorise test payment" in page, page
    elif outcome == "authorise":
        assert f"{thing} {AUTHORISED}" in page, page
    else:
        assert f"{thing} failed" in page and f"return to {APP}" in page, page


def check_intent(world, began, session: dict, outcome: str) -> None:
    expected = {"authorise": "succeeded", "fail": "failed", "close": "canceled"}[outcome]
    assert session["outcome"]["intentResult"] == expected, session
    intent = world.client.call(f"{began.kind}.retrieve", {"clientSecret": began.secret})[began.kind]
    status = {"authorise": "succeeded", "fail": "requires_payment_method", "close": "requires_action"}[outcome]
    assert intent["status"] == status, intent
    if outcome == "fail":
        assert session["outcome"]["error"] is not None, session


def check_source(world, began, session: dict, outcome: str, way: str) -> None:
    source = world.client.call("source.get", {"id": began.id})
    if outcome == "authorise":
        assert session["outcome"]["result"] == "chargeable" and source["status"] == "chargeable", session
    elif outcome == "fail":
        assert session["outcome"]["result"] == "failed" and source["status"] == "failed", session
    elif way == "loopback":
        # The SDK's RedirectCancelled (com.stripe.lib 80): the page closed before the return URL.
        assert session["completion"]["error"]["data"]["sdkCode"] == 80, session
    else:
        # Back in the app without paying: the follow-up poll finds the Source still pending.
        assert session["outcome"]["result"] == "pending", session


def test_loopback_return_with_no_other_call(world, bin_dir, tmp_path):
    """Issue 28's done-when: `stpctl payment-intent confirm SECRET --id pm_card_authenticationRequired
    --return-url loopback`, then the session's page opened in Chromium and authorised there, with
    no other call: the session completes, the intent succeeds, the page says so."""
    intent = world.server.api("POST", "/v1/payment_intents",
                              {"amount": 1099, "currency": "eur", "payment_method_types": ["card"]})
    confirm = subprocess.run(
        [str(bin_dir / "stpctl"), "--socket", str(world.daemon.socket_path), "--json", "--show-secrets", "payment-intent", "confirm",
         intent["client_secret"], "--id", "pm_card_authenticationRequired", "--return-url", "loopback"],
        capture_output=True, text=True, timeout=60, env=clean_environment())
    assert confirm.returncode == 0, confirm.stderr
    answer = json.loads(confirm.stdout)
    session = answer["redirect"]
    assert session["status"] == "notStarted" and session["returnURL"].startswith("http://127.0.0.1:")
    world.browser.open(session["redirectURL"])
    world.browser.press("authorise")
    text = world.browser.wait_text("you can close this window")
    assert f"Payment {AUTHORISED}" in text, text
    world.browser.close_tab()
    done = world.client.call("redirect.get", {"session": session["id"]})
    assert done["status"] == "completed" and done["outcome"]["intentResult"] == "succeeded", done
    paid = world.client.call("paymentIntent.retrieve", {"clientSecret": intent["client_secret"]})
    assert paid["paymentIntent"]["status"] == "succeeded"


def test_reload_and_unknown_token_change_nothing(world):
    """The same return URL again (a reload) says it was used and shows the outcome; an unknown
    token says so; neither changes anything."""
    began = begin(world, "card3ds", "loopback")
    world.browser.open(began.session["openURL"])
    world.browser.press("authorise")
    world.browser.wait_text("you can close this window")
    back = world.browser.url
    before = world.client.call("redirect.get", {"session": began.session["id"]})
    world.browser.driver.refresh()
    text = world.browser.wait_text("used before")
    assert f"nothing was changed. Payment {AUTHORISED}" in text, text
    assert world.client.call("redirect.get", {"session": began.session["id"]})["updatedAt"] == before["updatedAt"]
    token = back.split("/return/")[1].split("?")[0]
    world.browser.driver.get(back.replace(token, token[::-1]))
    text = world.browser.wait_text("not known")
    assert "Nothing was changed" in text, text
    world.browser.close_tab()


def test_the_bank_pages_cancel_button_comes_back_unpaid(world, events):
    """The customer presses the bank page's own "Cancel and return": Stripe sends them back with
    the intent still requiring action, which the re-read reports canceled, and the page says so."""
    began = begin(world, "card3ds", "loopback")
    world.browser.open(began.session["openURL"])
    world.browser.press("cancel")
    text = world.browser.wait_text("close this window")
    assert f"Payment not completed: it was not authorised; you can close this window and return to {APP}." in text
    world.browser.close_tab()
    outcome = events.wait("redirect.outcome", began.session["id"])["object"]["outcome"]
    assert outcome["intentResult"] == "canceled" and outcome["result"] == "requires_action", outcome
