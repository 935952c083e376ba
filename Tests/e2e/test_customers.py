"""Customer sessions end to end: the real stpd binary, its socket, and the project's
stripe-test-server (Tests/e2e/stripe_servers.py), with one tiny merchant backend per test
(Python http.server on 127.0.0.1:0 in a thread).

- stripe adapter + backend key provider: stpd holds only the publishable key; the merchant
  backend mints ephemeral keys with the secret key; prefetch, the 60 s cache, attach/detach,
  shipping, selection, clearCache, close, a declined attach, redaction of the Authorization
  value, and another uid that cannot see the session;
- backend adapter: the merchant backend serves MerchantBackend's routes from a dict;
- app adapter: the test answers appRequest.pending events with appRequest.answer;
- durability: kill -9 and a restart on the same state directory.

Waits are on events (events.subscribe) and replies, never on sleeps. Every reply and
notification is checked against the contract by the conftest's checker.
"""

from __future__ import annotations

from codes import (APP_ANSWER_INVALID, APP_REQUEST_FAILED, APP_REQUEST_TIMED_OUT, BACKEND_ERROR,
                   INVALID_PARAMS, INVALID_STATE, NOT_FOUND, STRIPE_CARD_ERROR)
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import pytest

from rpc import Client, RpcError
from flows import run_as
from stripe_servers import TEST_CALL_PREFIX, StripeTestServer, http_request


READ_TIMEOUT = 30.0
KEY_AUTHORIZATION = "Bearer t0ken"
BACKEND_TOKEN = "backendT0kenXYZ"
BACKEND_AUTHORIZATION = f"Bearer {BACKEND_TOKEN}"
SDK_API_VERSION = "2020-08-27"


# -- clients that keep every line they read ------------------------------------------------------

class RecordingClient(Client):
    """A Client that also keeps every raw line it reads in ``transcript`` (shared)."""

    def __init__(self, path: str, transcript: list[bytes], **kwargs: Any):
        self.transcript = transcript
        super().__init__(path, **kwargs)

    def read_line(self, timeout: float | None = None) -> bytes | None:
        line = super().read_line(timeout)
        if line is not None:
            self.transcript.append(line)
        return line


def connect(daemon, transcript: list[bytes]) -> RecordingClient:
    return RecordingClient(str(daemon.socket_path), transcript, checker=daemon.checker)


def rpc_error(client: Client, method: str, params: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        client.call(method, params)
    return caught.value


class Events:
    """A connection subscribed to some event types; ``wait`` reads up to a matching event."""

    def __init__(self, client: Client, types: list[str], since: int | None = None):
        self.client = client
        params: dict[str, Any] = {"filter": {"types": types}}
        if since is not None:
            params["since"] = since
        self.subscription = client.call("events.subscribe", params)["subscription"]
        self.seen: list[dict] = []

    def wait(self, type: str, object_id: str | None = None, where: Callable[[dict], bool] | None = None,
             timeout: float = READ_TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            message = self.client.next_notification(max(0.0, deadline - time.monotonic()))
            assert message["method"] == "event", message
            event = message["params"]
            assert event["subscription"] == self.subscription, message
            self.seen.append(event)
            if event["type"] == type and (object_id is None or event["objectId"] == object_id) \
                    and (where is None or where(event)):
                return event
            if event["type"] == "customer.failed" and event["objectId"] == object_id and type != "customer.failed":
                raise AssertionError(f"waiting for {type}, got customer.failed: {event['object'].get('lastError')}")


# -- a tiny merchant backend -------------------------------------------------------------------

def card_payment_method(pm_id: str, last4: str = "4242", wallet: str | None = None) -> dict:
    return {
        "id": pm_id, "object": "payment_method", "type": "card", "created": 1700000000, "livemode": False,
        "customer": None, "billing_details": {"address": None, "email": None, "name": None, "phone": None},
        "card": {"brand": "visa", "country": "US", "exp_month": 12, "exp_year": 2040, "funding": "credit",
                 "last4": last4, "wallet": {"type": wallet} if wallet else None},
        "metadata": {},
    }


class MerchantBackend:
    """The merchant's server as a test needs it:

    - ``POST /ephemeral_keys`` (BackendKeyProvider): POSTs to the Stripe stand-in's
      /v1/ephemeral_keys with the secret key, ``customer`` and ``Stripe-Version: <api_version>``,
      and returns its answer unmodified;
    - MerchantBackend's routes under ``/api`` (see Sources/StpdBackends/MerchantBackend.swift),
      backed by ``customer`` and ``attached`` (PaymentMethods by id);
    - ``faults[(method, path)] = (status, headers, body)``: the next such request gets that answer.
    Every request is kept in ``requests`` as {method, path, headers, body}."""

    def __init__(self, stripe: StripeTestServer | None = None, customer_id: str = "cus_backend0001"):
        self.stripe = stripe
        self.customer_id = customer_id
        self.customer: dict = {"id": customer_id, "object": "customer", "email": "jenny@example.com",
                               "shipping": None, "sources": {"object": "list", "data": []}}
        self.attached: dict[str, dict] = {}
        self.declining: dict[str, dict] = {}  # pm id -> Stripe error body relayed with 402
        self.faults: dict[tuple[str, str], tuple[int, dict[str, str], bytes]] = {}
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = backend.handle(self.command, self.path, dict(self.headers.items()), body)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="merchant-backend", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> "MerchantBackend":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def seen(self, method: str | None = None, path: str | None = None) -> list[dict]:
        with self.lock:
            return [r for r in self.requests
                    if (method is None or r["method"] == method) and (path is None or r["path"] == path)]

    @staticmethod
    def _json(status: int, value: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(value).encode()

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.requests.append({"method": method, "path": path, "headers": headers, "body": body})
            fault = self.faults.pop((method, path), None)
        if fault:
            return fault
        if (method, path) == ("POST", "/ephemeral_keys"):
            assert self.stripe is not None
            form = urllib.parse.parse_qs(body.decode())
            version = form.get("api_version", [""])[0]
            reply = http_request(
                "POST", f"{self.stripe.base_url}/v1/ephemeral_keys",
                body=urllib.parse.urlencode({"customer": self.customer_id}).encode(),
                headers={"Authorization": f"Bearer {self.stripe.secret_key}", "Stripe-Version": version,
                         "Content-Type": "application/x-www-form-urlencoded"})
            return reply.status, {"Content-Type": "application/json"}, reply.body
        with self.lock:
            if (method, path) == ("GET", "/api/customer"):
                return self._json(200, self.customer)
            if (method, path) == ("GET", "/api/customer/payment_methods"):
                return self._json(200, {"object": "list", "data": list(self.attached.values()), "has_more": False})
            if (method, path) == ("POST", "/api/customer/shipping"):
                self.customer["shipping"] = json.loads(body)
                return self._json(200, self.customer)
            parts = path.split("/")
            if method == "POST" and len(parts) == 6 and parts[1:4] == ["api", "customer", "payment_methods"]:
                pm_id, action = parts[4], parts[5]
                if action == "attach":
                    if pm_id in self.declining:
                        return self._json(402, self.declining[pm_id], {"Request-Id": "req_relayed0001"})
                    pm = card_payment_method(pm_id)
                    pm["customer"] = self.customer_id
                    self.attached[pm_id] = pm
                    return self._json(200, pm)
                if action == "detach" and pm_id in self.attached:
                    pm = self.attached.pop(pm_id)
                    pm["customer"] = None
                    return self._json(200, pm)
                return self._json(404, {"error": {"type": "invalid_request_error", "code": "resource_missing",
                                                  "message": f"No such PaymentMethod: '{pm_id}'"}})
        return 404, {"Content-Type": "text/plain"}, b"not found"


@pytest.fixture
def merchant_backends():
    started: list[MerchantBackend] = []

    def make(**kwargs: Any) -> MerchantBackend:
        backend = MerchantBackend(**kwargs).start()
        started.append(backend)
        return backend

    yield make
    for backend in started:
        backend.stop()


def stripe_env(server: StripeTestServer, key: str | None = None) -> dict[str, str]:
    return {"STPD_STRIPE_KEY": key or server.publishable_key, "STPD_STRIPE_API_BASE": server.base_url}


def stripe_adapter(backend: MerchantBackend) -> dict:
    return {"kind": "stripe", "keyProvider": {"kind": "backend", "url": f"{backend.url}/ephemeral_keys",
                                              "authorization": KEY_AUTHORIZATION}}


STRIPE_CUSTOMER_CALLS = ("/v1/customers/", "/v1/payment_methods")


def stpd_customer_calls(server: StripeTestServer) -> list[dict]:
    """The test server's log entries of the customer calls stpd makes (not the test's own)."""
    return [r for r in server.requests()
            if r["path"].startswith(STRIPE_CUSTOMER_CALLS) and not (r["idempotency_key"] or "").startswith(TEST_CALL_PREFIX)]


# -- 1. stripe adapter with a backend key provider -------------------------------------------

def test_stripe_adapter_with_backend_key_provider(start_stpd, tmp_path, stripe_test_server, merchant_backends):
    server = stripe_test_server
    customer = server.create_customer(email="jenny@example.com")
    cus = customer["id"]
    backend = merchant_backends(stripe=server, customer_id=cus)
    daemon = start_stpd(tmp_path / "stpd", env=stripe_env(server))  # the PUBLISHABLE key only
    transcript: list[bytes] = []
    events = Events(connect(daemon, transcript), ["customer.*"])
    client = connect(daemon, transcript)

    opened = client.call("customer.open", {"adapter": stripe_adapter(backend)})
    sid = opened["id"]
    assert sid.startswith("cses_") and opened["status"] == "open"
    assert opened["adapter"]["keyProvider"] == {"kind": "backend", "url": f"{backend.url}/ephemeral_keys",
                                                "authorization": "[REDACTED]"}
    events.wait("customer.opened", sid)

    # Prefetch: the customer and its payment methods are fetched without being asked.
    loaded = events.wait("customer.loaded", sid)
    assert loaded["object"]["customerId"] == cus
    assert loaded["object"]["customerFetchedAt"] and loaded["object"]["paymentMethodsFetchedAt"]

    # The key came from the merchant backend, asked as BackendKeyProvider documents.
    key_requests = backend.seen("POST", "/ephemeral_keys")
    assert len(key_requests) == 1, key_requests
    key_request = key_requests[0]
    assert key_request["headers"].get("Authorization") == KEY_AUTHORIZATION
    assert key_request["headers"].get("Content-Type", "").startswith("application/x-www-form-urlencoded")
    assert urllib.parse.parse_qs(key_request["body"].decode()) == {"api_version": [SDK_API_VERSION]}
    minted = server.requests(path="/v1/ephemeral_keys")
    assert [(r["auth"], r["stripe_version"]) for r in minted] == [("secret", SDK_API_VERSION)]

    # Customer calls go to Stripe with the customer's ephemeral key, never the publishable key.
    calls = stpd_customer_calls(server)
    assert {(r["method"], r["path"]) for r in calls} >= {("GET", f"/v1/customers/{cus}"), ("GET", "/v1/payment_methods")}
    assert [r for r in calls if r["auth"] != "ephemeral"] == []

    # The 60 s cache: after clearCache, two quick retrieves make one GET.
    cleared = client.call("customer.clearCache", {"session": sid})
    assert cleared.get("customerFetchedAt") is None and cleared.get("paymentMethodsFetchedAt") is None
    events.wait("customer.cacheCleared", sid)
    server.clear_requests()
    first = client.call("customer.retrieve", {"session": sid})["customer"]
    second = client.call("customer.retrieve", {"session": sid})["customer"]
    assert first["id"] == second["id"] == cus and first["email"] == "jenny@example.com"
    gets = server.requests(path=f"/v1/customers/{cus}", method="GET")
    assert len(gets) == 1, gets
    assert gets[0]["auth"] == "ephemeral"
    assert client.call("customer.get", {"session": sid})["customerFetchedAt"]

    # Payment methods: none yet; attach one made with the publishable key, as an app would.
    assert client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"] == []
    pm = server.create_card_payment_method("4242424242424242")
    attached = client.call("customer.attachPaymentMethod", {"session": sid, "paymentMethod": pm["id"]})
    assert attached.get("paymentMethodsFetchedAt") is None  # attaching clears the payment-method cache
    events.wait("customer.paymentMethodAttached", sid)
    methods = client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"]
    assert [(m["id"], m["card"]["last4"]) for m in methods] == [(pm["id"], "4242")]
    assert server.api("GET", f"/v1/payment_methods/{pm['id']}")["customer"] == cus

    # Selection is remembered, and stays so when that payment method is detached, as
    # STPCustomerContext leaves it (a context loading later finds it among no options).
    selected = client.call("customer.selectPaymentMethod", {"session": sid, "paymentMethod": pm["id"]})
    assert selected["lastSelectedPaymentMethod"] == pm["id"]
    events.wait("customer.paymentMethodSelected", sid)
    detached = client.call("customer.detachPaymentMethod", {"session": sid, "paymentMethod": pm["id"]})
    assert detached["lastSelectedPaymentMethod"] == pm["id"]
    events.wait("customer.paymentMethodDetached", sid)
    assert client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"] == []
    assert server.api("GET", f"/v1/payment_methods/{pm['id']}")["customer"] is None

    # Shipping.
    shipping = {"name": "Jenny Rosen", "phone": "+15555550100",
                "address": {"line1": "1 Main St", "city": "Springfield", "postalCode": "12345", "country": "US"}}
    client.call("customer.updateShipping", {"session": sid, "shipping": shipping})
    events.wait("customer.shippingUpdated", sid)
    stored = server.api("GET", f"/v1/customers/{cus}")["shipping"]
    assert stored["name"] == "Jenny Rosen" and stored["phone"] == "+15555550100"
    assert stored["address"]["line1"] == "1 Main St" and stored["address"]["postal_code"] == "12345"
    retrieved = client.call("customer.retrieve", {"session": sid})["customer"]
    assert retrieved["shipping"]["address"]["city"] == "Springfield"
    # Stripe requires a recipient (shipping[name]): refused before any request, naming it.
    for nameless in ({"address": shipping["address"]}, {**shipping, "name": ""}):
        error = rpc_error(client, "customer.updateShipping", {"session": sid, "shipping": nameless})
        assert error.code == INVALID_PARAMS and error.data["parameter"] == "shipping.name", error
    assert len(server.requests(path=f"/v1/customers/{cus}", method="POST")) == 1

    # A declined card on attach: StripeCardError with Stripe's decline code.
    declined = server.create_card_payment_method("4000000000000002")
    error = rpc_error(client, "customer.attachPaymentMethod", {"session": sid, "paymentMethod": declined["id"]})
    assert error.code == STRIPE_CARD_ERROR, error
    assert error.data["type"] == "card_error" and error.data["code"] == "card_declined"
    assert error.data["decline_code"] == "generic_decline" and error.data["http_status"] == 402
    assert error.data["request_id"], error.data
    failed = events.wait("customer.failed", sid)
    assert failed["object"]["lastError"]["operation"] == "attachPaymentMethod"
    assert client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"] == []

    # Every Stripe customer call (retrieve, list, attach, detach, update) used the ephemeral key,
    # and one key served the whole session.
    calls = stpd_customer_calls(server)
    assert {r["method"] for r in calls} == {"GET", "POST"}
    assert [r for r in calls if r["auth"] != "ephemeral"] == []
    assert len(backend.seen("POST", "/ephemeral_keys")) == 1

    # Close: the session stays readable; everything else is InvalidState.
    closed = client.call("customer.close", {"session": sid})
    assert closed["status"] == "closed"
    events.wait("customer.closed", sid)
    for method, params in [("customer.retrieve", {}), ("customer.listPaymentMethods", {}),
                           ("customer.attachPaymentMethod", {"paymentMethod": pm["id"]}),
                           ("customer.detachPaymentMethod", {"paymentMethod": pm["id"]}),
                           ("customer.updateShipping", {"shipping": shipping}),
                           ("customer.selectPaymentMethod", {"paymentMethod": None}),
                           ("customer.clearCache", {})]:
        error = rpc_error(client, method, {"session": sid, **params})
        assert error.code == INVALID_STATE, (method, error)
    assert client.call("customer.get", {"session": sid})["status"] == "closed"
    assert client.call("customer.close", {"session": sid})["status"] == "closed"  # closing twice is fine
    assert sid in [s["id"] for s in client.call("customer.list")["sessions"]]

    # The Authorization value never comes back: not in a reply, an event, or the log.
    lines = b"\n".join(transcript).decode()
    assert "t0ken" not in lines
    assert '"authorization":"[REDACTED]"' in lines.replace(" ", "")
    replayed = client.call("events.wait", {"since": 0, "filter": {"objects": [sid]}, "limit": 1000})["events"]
    assert replayed and "t0ken" not in json.dumps(replayed)
    assert "t0ken" not in daemon.log()


def test_stripe_session_is_invisible_to_another_uid(start_stpd, tmp_path, stripe_test_server, merchant_backends):
    if os.geteuid() != 0:
        pytest.skip("needs root to run a client as another uid (setuid)")
    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    if python is None:
        pytest.skip("no system python3 that another uid can run")
    other_uid = 65534  # nobody
    server = stripe_test_server
    cus = server.create_customer()["id"]
    backend = merchant_backends(stripe=server, customer_id=cus)
    # The other uid must reach the socket: a world-traversable directory and a 0666 socket
    # (the test's tmp_path is root-only).
    socket_dir = Path(tempfile.mkdtemp(prefix="stpd-uid-"))
    try:
        socket_dir.chmod(0o755)
        socket_path = socket_dir / "stpd.sock"
        daemon = start_stpd(tmp_path / "stpd", "--socket", str(socket_path), "--socket-mode", "0666",
                            env=stripe_env(server))
        client = daemon.client()
        events = Events(daemon.client(), ["customer.*"])
        sid = client.call("customer.open", {"adapter": stripe_adapter(backend)})["id"]
        events.wait("customer.loaded", sid)

        calls = [
            ["customer.get", {"session": sid}],
            ["customer.retrieve", {"session": sid}],
            ["customer.attachPaymentMethod", {"session": sid, "paymentMethod": "pm_card_visa"}],
            ["customer.close", {"session": sid}],
            ["customer.list", {}],
            ["events.wait", {"since": 0, "filter": {"types": ["customer.*"]}, "timeout": 0}],
            ["customer.open", {"adapter": {"kind": "app"}, "prefetch": False}],
        ]
        replies = run_as(python, other_uid, socket_path, calls)
        for reply, (method, _) in zip(replies[:4], calls[:4]):
            assert reply.get("error", {}).get("code") == NOT_FOUND, (method, reply)
            assert "t0ken" not in json.dumps(reply)
        assert replies[4]["result"]["sessions"] == [], replies[4]
        assert replies[5]["result"]["events"] == [], replies[5]
        theirs = replies[6]["result"]["id"]

        # Nothing the other uid did touched the session; root sees everyone's sessions.
        assert client.call("customer.get", {"session": sid})["status"] == "open"
        assert {sid, theirs} <= {s["id"] for s in client.call("customer.list")["sessions"]}
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)


# -- 2. backend adapter ------------------------------------------------------------------------

def test_backend_adapter(start_stpd, tmp_path, merchant_backends):
    backend = merchant_backends(customer_id="cus_backendAdapter1")
    backend.attached["pm_saved"] = card_payment_method("pm_saved", "4242")
    backend.attached["pm_applepay"] = card_payment_method("pm_applepay", "1111", wallet="apple_pay")
    # No Stripe key at all: a backend session never calls Stripe itself.
    daemon = start_stpd(tmp_path / "stpd")
    transcript: list[bytes] = []
    events = Events(connect(daemon, transcript), ["customer.*"])
    client = connect(daemon, transcript)
    adapter = {"kind": "backend", "url": f"{backend.url}/api/", "authorization": BACKEND_AUTHORIZATION, "timeout": 10}

    opened = client.call("customer.open", {"adapter": adapter})
    sid = opened["id"]
    assert opened["adapter"]["authorization"] == "[REDACTED]"
    assert opened["adapter"]["url"] == f"{backend.url}/api/"
    assert events.wait("customer.loaded", sid)["object"]["customerId"] == "cus_backendAdapter1"

    customer = client.call("customer.retrieve", {"session": sid})["customer"]
    assert customer["id"] == "cus_backendAdapter1" and customer["email"] == "jenny@example.com"

    # Apple Pay cards are hidden unless the adapter asks for them.
    listed = client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"]
    assert [m["id"] for m in listed] == ["pm_saved"]
    with_apple_pay = client.call("customer.open", {"adapter": {**adapter, "includeApplePayPaymentMethods": True},
                                                   "prefetch": False})["id"]
    listed = client.call("customer.listPaymentMethods", {"session": with_apple_pay})["paymentMethods"]
    assert sorted(m["id"] for m in listed) == ["pm_applepay", "pm_saved"]

    client.call("customer.attachPaymentMethod", {"session": sid, "paymentMethod": "pm_new"})
    events.wait("customer.paymentMethodAttached", sid)
    assert "pm_new" in [m["id"] for m in client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"]]
    client.call("customer.detachPaymentMethod", {"session": sid, "paymentMethod": "pm_saved"})
    events.wait("customer.paymentMethodDetached", sid)
    assert [m["id"] for m in client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"]] == ["pm_new"]

    client.call("customer.updateShipping", {"session": sid, "shipping": {
        "name": "Jenny Rosen", "address": {"line1": "1 Main St", "postalCode": "12345", "country": "US"}}})
    events.wait("customer.shippingUpdated", sid)
    assert backend.customer["shipping"] == {"name": "Jenny Rosen",
                                            "address": {"line1": "1 Main St", "postal_code": "12345", "country": "US"}}

    # The routes and headers MerchantBackend documents.
    routes = [(r["method"], r["path"]) for r in backend.seen()]
    assert ("POST", "/api/customer/payment_methods/pm_new/attach") in routes
    assert ("POST", "/api/customer/payment_methods/pm_saved/detach") in routes
    assert ("POST", "/api/customer/shipping") in routes
    for request in backend.seen():
        assert request["headers"].get("Authorization") == BACKEND_AUTHORIZATION, request
        assert request["headers"].get("User-Agent") == "stpd"
        if request["method"] == "POST":
            assert request["headers"].get("Content-Type", "").startswith("application/json")
            assert isinstance(json.loads(request["body"]), dict)

    # A 500 that is not Stripe-shaped: BackendError with the status and a masked excerpt.
    leaky = (f"<html>Internal Server Error: token {BACKEND_TOKEN} and key sk_live_abcdefghijklmnop1234 "
             f"for card 4242424242424242</html>").encode()
    backend.faults[("GET", "/api/customer")] = (500, {"Content-Type": "text/html"}, leaky)
    error = rpc_error(client, "customer.retrieve", {"session": sid})
    assert error.code == BACKEND_ERROR, error
    assert error.data["status"] == 500 and error.data["route"] == "/customer"
    excerpt = error.data["body"]
    assert "Internal Server Error" in excerpt and "[REDACTED]" in excerpt, excerpt
    for secret in (BACKEND_TOKEN, "sk_live_abcdefghijklmnop1234", "4242424242424242"):
        assert secret not in excerpt and secret not in error.message, (secret, error)
    assert events.wait("customer.failed", sid)["object"]["lastError"]["operation"] == "retrieveCustomer"

    # A Stripe card error the backend relays (402 and Stripe's body): StripeCardError.
    backend.declining["pm_insufficient"] = {"error": {
        "type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds",
        "message": "Your card has insufficient funds."}}
    error = rpc_error(client, "customer.attachPaymentMethod", {"session": sid, "paymentMethod": "pm_insufficient"})
    assert error.code == STRIPE_CARD_ERROR, error
    assert error.data["decline_code"] == "insufficient_funds" and error.data["code"] == "card_declined"
    assert error.data["http_status"] == 402 and error.data["request_id"] == "req_relayed0001"

    # The backend's Authorization value never comes back.
    lines = b"\n".join(transcript).decode()
    assert BACKEND_TOKEN not in lines
    assert BACKEND_TOKEN not in daemon.log()


# -- 3. app adapter ------------------------------------------------------------------------------

APP_CUSTOMER = {"id": "cus_appAdapter0001", "object": "customer", "email": "app@example.com", "shipping": None}


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def next_pending(client: Client, subscription: str, timeout: float = READ_TIMEOUT) -> dict:
    """The next appRequest.pending event on ``client`` (other events are skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        message = client.next_notification(max(0.0, deadline - time.monotonic()))
        params = message["params"]
        assert message["method"] == "event" and params["subscription"] == subscription, message
        if params["type"] == "appRequest.pending":
            return params


def next_app_event(client: Client, subscription: str, type: str, request_id: str,
                   timeout: float = READ_TIMEOUT) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        params = client.next_notification(max(0.0, deadline - time.monotonic()))["params"]
        assert params["subscription"] == subscription
        if params["type"] == type and params["objectId"] == request_id:
            return params


def ask(client: Client, subscription: str, method: str, params: dict, operation: str, session: str) -> tuple[Any, dict]:
    """Sends METHOD without waiting, and returns (its request id, the pending app request it caused)."""
    request_id = client.request(method, params)
    pending = next_pending(client, subscription)
    request = pending["object"]
    assert pending["objectId"] == request["id"] and request["id"].startswith("areq_")
    assert (request["operation"], request["session"], request["state"]) == (operation, session, "pending"), request
    assert request["deadline"]
    return request_id, request


def test_app_adapter(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path / "stpd")
    client = daemon.client()
    subscription = client.call("events.subscribe", {"filter": {"types": ["appRequest.*"]}})["subscription"]
    sid = client.call("customer.open", {"adapter": {"kind": "app", "timeout": 5}, "prefetch": False})["id"]

    # retrieve
    rid, request = ask(client, subscription, "customer.retrieve", {"session": sid}, "retrieveCustomer", sid)
    assert request["params"] == {}
    assert client.call("appRequest.answer", {"request": request["id"], "result": APP_CUSTOMER}) == {"answered": True}
    # Stripe objects come back without their null members, as the SDK's allResponseFields
    # (stp_dictionaryByRemovingNulls).
    assert client.result(client.wait_reply(rid))["customer"] == without_nulls(APP_CUSTOMER)
    # A request answers once.
    error = rpc_error(client, "appRequest.answer", {"request": request["id"], "result": APP_CUSTOMER})
    assert error.code == INVALID_STATE and error.data["state"] == "answered", error
    # appRequest.get shows it as its last event did (never the result: it may be a key's secret).
    shown = client.call("appRequest.get", {"request": request["id"]})
    assert {k: v for k, v in request.items() if k != "state"} == {k: v for k, v in shown.items() if k != "state"}
    assert shown["state"] == "answered" and "result" not in shown
    assert rpc_error(client, "appRequest.get", {"request": "areq_00000000000000000000000000000000"}).code == NOT_FOUND
    assert client.call("customer.get", {"session": sid})["customerId"] == APP_CUSTOMER["id"]

    # list (Apple Pay hidden), as a list object
    rid, request = ask(client, subscription, "customer.listPaymentMethods", {"session": sid}, "listPaymentMethods", sid)
    client.call("appRequest.answer", {"request": request["id"], "result": {"object": "list", "data": [
        card_payment_method("pm_app1"), card_payment_method("pm_appApplePay", "1111", wallet="apple_pay")]}})
    assert [m["id"] for m in client.result(client.wait_reply(rid))["paymentMethods"]] == ["pm_app1"]

    # attach, answered with null
    rid, request = ask(client, subscription, "customer.attachPaymentMethod",
                       {"session": sid, "paymentMethod": "pm_app2"}, "attachPaymentMethod", sid)
    assert request["params"] == {"paymentMethod": "pm_app2"}
    client.call("appRequest.answer", {"request": request["id"], "result": None})
    assert client.result(client.wait_reply(rid))["id"] == sid

    # list again, as a bare array
    rid, request = ask(client, subscription, "customer.listPaymentMethods", {"session": sid}, "listPaymentMethods", sid)
    client.call("appRequest.answer", {"request": request["id"],
                                      "result": [card_payment_method("pm_app1"), card_payment_method("pm_app2", "4444")]})
    assert [m["id"] for m in client.result(client.wait_reply(rid))["paymentMethods"]] == ["pm_app1", "pm_app2"]

    # shipping: the app gets Stripe's parameter names
    rid, request = ask(client, subscription, "customer.updateShipping",
                       {"session": sid, "shipping": {"name": "Jenny Rosen", "address": {"line1": "1 Main St", "postalCode": "12345"}}},
                       "updateShipping", sid)
    assert request["params"] == {"shipping": {"name": "Jenny Rosen", "address": {"line1": "1 Main St", "postal_code": "12345"}}}
    client.call("appRequest.answer", {"request": request["id"], "result": {"ok": True}})
    client.result(client.wait_reply(rid))

    # An error answer: AppRequestFailed with the app's message and code.
    rid, request = ask(client, subscription, "customer.detachPaymentMethod",
                       {"session": sid, "paymentMethod": "pm_app1"}, "detachPaymentMethod", sid)
    assert request["params"] == {"paymentMethod": "pm_app1"}
    client.call("appRequest.answer", {"request": request["id"], "error": {"message": "our backend said no", "code": "nope"}})
    with pytest.raises(RpcError) as caught:
        client.result(client.wait_reply(rid))
    assert caught.value.code == APP_REQUEST_FAILED, caught.value
    assert caught.value.data["operation"] == "detachPaymentMethod"
    assert caught.value.data["message"] == "our backend said no" and caught.value.data["code"] == "nope"

    # An answer that is not a customer: AppAnswerInvalid.
    rid, request = ask(client, subscription, "customer.retrieve", {"session": sid}, "retrieveCustomer", sid)
    client.call("appRequest.answer", {"request": request["id"], "result": "not a customer"})
    with pytest.raises(RpcError) as caught:
        client.result(client.wait_reply(rid))
    assert caught.value.code == APP_ANSWER_INVALID, caught.value

    # Nobody answers within the session's timeout (1 s): AppRequestTimedOut and appRequest.timedOut.
    quick = client.call("customer.open", {"adapter": {"kind": "app", "timeout": 1}, "prefetch": False})["id"]
    rid, request = ask(client, subscription, "customer.retrieve", {"session": quick}, "retrieveCustomer", quick)
    with pytest.raises(RpcError) as caught:
        client.result(client.wait_reply(rid, timeout=15))
    assert caught.value.code == APP_REQUEST_TIMED_OUT, caught.value
    assert caught.value.data["operation"] == "retrieveCustomer" and caught.value.data["timeoutSeconds"] == 1
    timed_out = next_app_event(client, subscription, "appRequest.timedOut", request["id"])
    assert timed_out["object"]["state"] == "timedOut"
    error = rpc_error(client, "appRequest.answer", {"request": request["id"], "result": APP_CUSTOMER})
    assert error.code == INVALID_STATE and error.data["state"] == "timedOut", error

    error = rpc_error(client, "appRequest.answer", {"request": "areq_00000000000000000000000000000000", "result": None})
    assert error.code == NOT_FOUND, error


def test_app_adapter_prefetch_does_not_hold_open(start_stpd, tmp_path):
    """open answers at once; the prefetch's two app requests follow, and answering them loads the session."""
    daemon = start_stpd(tmp_path / "stpd")
    client = daemon.client()
    subscription = client.call("events.subscribe", {"filter": {"types": ["appRequest.*", "customer.*"]}})["subscription"]
    sid = client.call("customer.open", {"adapter": {"kind": "app", "timeout": 5}})["id"]
    answers = {"retrieveCustomer": APP_CUSTOMER, "listPaymentMethods": [card_payment_method("pm_pre")]}
    seen = set()
    while len(seen) < 2:
        request = next_pending(client, subscription)["object"]
        assert request["session"] == sid and request["operation"] not in seen
        seen.add(request["operation"])
        client.call("appRequest.answer", {"request": request["id"], "result": answers[request["operation"]]})
    deadline = time.monotonic() + READ_TIMEOUT
    while True:
        event = client.next_notification(max(0.0, deadline - time.monotonic()))["params"]
        assert event["type"] != "customer.failed", event
        if event["type"] == "customer.loaded" and event["objectId"] == sid:
            assert event["object"]["customerId"] == APP_CUSTOMER["id"]
            break


# -- 4. durability -------------------------------------------------------------------------------

def test_stripe_session_survives_kill_9(start_stpd, tmp_path, stripe_test_server, merchant_backends):
    server = stripe_test_server
    cus = server.create_customer(email="durable@example.com")["id"]
    backend = merchant_backends(stripe=server, customer_id=cus)
    env = stripe_env(server)
    daemon = start_stpd(tmp_path / "stpd", env=env)
    events = Events(daemon.client(), ["customer.*"])
    sid = daemon.client().call("customer.open", {"adapter": stripe_adapter(backend)})["id"]
    events.wait("customer.loaded", sid)
    before = daemon.client().call("customer.get", {"session": sid})
    events.client.close()

    daemon.kill()  # SIGKILL
    keys_before = len(backend.seen("POST", "/ephemeral_keys"))
    restarted = start_stpd(tmp_path / "stpd", env=env)
    client = restarted.client()
    after = client.call("customer.get", {"session": sid})
    assert after["status"] == "open" and after["customerId"] == cus
    assert after["adapter"] == before["adapter"] and after["adapter"]["keyProvider"]["authorization"] == "[REDACTED]"
    assert after["createdAt"] == before["createdAt"]

    # The backend is rebuilt from the stored adapter, credentials included.
    customer = client.call("customer.retrieve", {"session": sid})["customer"]
    assert customer["id"] == cus and customer["email"] == "durable@example.com"
    new_keys = backend.seen("POST", "/ephemeral_keys")[keys_before:]
    assert len(new_keys) == 1 and new_keys[0]["headers"].get("Authorization") == KEY_AUTHORIZATION
    pm = server.create_card_payment_method()
    client.call("customer.attachPaymentMethod", {"session": sid, "paymentMethod": pm["id"]})
    assert [m["id"] for m in client.call("customer.listPaymentMethods", {"session": sid})["paymentMethods"]] == [pm["id"]]


@pytest.mark.parametrize("adapter, parameter", [
    ({"kind": "stripe", "keyProvider": {"kind": "backend", "url": "http://127.0.0.1:1/k", "authorization": "Bearer a\r\nb"}},
     "adapter.keyProvider.authorization"),
    ({"kind": "backend", "url": "http://127.0.0.1:1/api", "authorization": "Bearer a\nb"}, "adapter.authorization"),
    ({"kind": "backend", "url": "http://shop.example.com/api"}, "adapter.url"),
    ({"kind": "stripe", "keyProvider": {"kind": "server"}}, "adapter.keyProvider.customer"),
])
def test_a_bad_adapter_member_is_named(start_stpd, tmp_path, stripe_test_server, adapter, parameter):
    daemon = start_stpd(tmp_path, env=stripe_env(stripe_test_server))
    error = rpc_error(daemon.client(), "customer.open", {"adapter": adapter, "prefetch": False})
    assert error.code == -32602
    assert error.data["parameter"] == parameter
    assert "a\r\nb" not in error.message and "a\nb" not in error.message


@pytest.mark.parametrize("adapter, parameter", [
    ({"kind": "app", "keyProvider": {"kind": "app"}}, "adapter.keyProvider"),
    ({"kind": "app", "url": "http://127.0.0.1:1/api"}, "adapter.url"),
    ({"kind": "stripe", "keyProvider": {"kind": "app", "customer": "cus_1"}}, "adapter.keyProvider.customer"),
])
def test_members_of_another_adapter_kind_are_refused(start_stpd, tmp_path, adapter, parameter):
    daemon = start_stpd(tmp_path)
    error = rpc_error(daemon.client(), "customer.open", {"adapter": adapter, "prefetch": False})
    assert error.code == -32602
    assert error.data["parameter"] == parameter
