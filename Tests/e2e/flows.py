"""Helpers for the Source / redirect / PaymentIntent end-to-end tests (test_sources.py).

- ``Events``: a connection subscribed to some event types; ``wait`` reads up to a matching
  event and keeps every event it read (``seen``), so a test can check order and absence;
- ``bank_page``: the customer at the bank: GETs a redirect URL of the stripe-test-server with
  ``action=...`` and returns the 302's Location (the return URL Stripe sends the customer to),
  without following it (it is the app's URL scheme);
- ``stpd_for``: starts stpd against a stripe-test-server with only its publishable key.

Every wait is on a reply or an event; nothing sleeps.
"""

from __future__ import annotations

from codes import DISABLED, INVALID_PARAMS, NOT_FOUND, REDIRECT_UNAVAILABLE, STRIPE_INVALID_REQUEST  # noqa: F401 (re-exported)
import http.client
import json
import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Any, Callable

import pytest

from rpc import Client, RpcError
from stripe_servers import StripeTestServer

READ_TIMEOUT = 30.0



def rpc_error(client: Client, method: str, params: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        client.call(method, params)
    return caught.value


class Events:
    """A connection subscribed to ``types`` (``kind.*`` allowed). ``wait`` returns the first event
    read from now on that matches; everything read is kept in ``seen``, in order (events carry
    a global, gap-free ``seq``)."""

    def __init__(self, client: Client, types: list[str], since: int | None = None):
        self.client = client
        params: dict[str, Any] = {"filter": {"types": types}}
        if since is not None:
            params["since"] = since
        reply = client.call("events.subscribe", params)
        self.subscription = reply["subscription"]
        self.latest_seq = reply["latestSeq"]
        self.seen: list[dict] = []

    def next(self, timeout: float = READ_TIMEOUT) -> dict:
        message = self.client.next_notification(timeout)
        assert message["method"] == "event", message
        event = message["params"]
        assert event["subscription"] == self.subscription, message
        if self.seen:
            assert event["seq"] > self.seen[-1]["seq"], (self.seen[-1], event)
        self.seen.append(event)
        return event

    def wait(self, type: str, object_id: str | None = None, where: Callable[[dict], bool] | None = None,
             timeout: float = READ_TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {type} event for {object_id} within {timeout} s; read: "
                                     f"{[(e['type'], e['objectId']) for e in self.seen[-20:]]}")
            try:
                event = self.next(remaining)
            except TimeoutError:
                continue
            if event["type"] == type and (object_id is None or event["objectId"] == object_id) \
                    and (where is None or where(event)):
                return event

    def types_for(self, object_id: str) -> list[str]:
        """The types of the events read so far for one object, in order."""
        return [e["type"] for e in self.seen if e["objectId"] == object_id]

    def read_for(self, object_id: str, type: str) -> list[dict]:
        return [e for e in self.seen if e["objectId"] == object_id and e["type"] == type]


# -- the customer at the bank ---------------------------------------------------------------

def http_get(url: str, timeout: float = 30.0) -> tuple[int, dict[str, str], bytes]:
    """One GET on 127.0.0.1, redirects NOT followed (a Location is the app's URL scheme)."""
    parts = urllib.parse.urlsplit(url)
    assert parts.scheme == "http" and parts.hostname == "127.0.0.1", url
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def bank_page(url: str, action: str) -> str:
    """The customer picks ACTION on the page at URL (authorize|fail|cancel for a Source,
    succeed|fail for a PaymentIntent); returns the Location the page redirects to."""
    separator = "&" if "?" in url else "?"
    status, headers, body = http_get(f"{url}{separator}action={action}")
    assert status == 302, (status, body[:500])
    return headers["location"]


def query_items(url: str) -> list[tuple[str, str]]:
    return urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query, keep_blank_values=True)


# -- stpd against the stripe-test-server --------------------------------------------------------

def stripe_env(server: StripeTestServer) -> dict[str, str]:
    """The publishable key only: everything here is what an app may do."""
    return {"STPD_STRIPE_KEY": server.publishable_key}


def stpd_for(start_stpd, directory: Path, server: StripeTestServer, *args: str, env: dict | None = None):
    return start_stpd(directory, "--stripe-api-base", server.base_url, *args,
                      env={**stripe_env(server), **(env or {})})


def sofort(return_url: str, amount: int = 1099, country: str = "DE", **extra: Any) -> dict:
    return {"sofort": {"amount": amount, "returnURL": return_url, "country": country, **extra}}


def create_source(client: Client, params: dict, merchant_name: str | None = None) -> tuple[dict, str]:
    call: dict[str, Any] = {"params": params}
    if merchant_name is not None:
        call["merchantName"] = merchant_name
    created = client.call("source.create", call)
    return created["source"], created["clientSecret"]


def drive_source(server: StripeTestServer, source_id: str, action: str) -> dict:
    """POST /_test/sources/{id}/{authorize|fail|cancel|expire|consume}: the Source changes at
    Stripe (as a webhook-worthy event would), without the customer visiting the page."""
    from stripe_servers import http_request

    reply = http_request("POST", f"{server.base_url}/_test/sources/{source_id}/{action}")
    assert reply.status == 200, reply
    return reply.json()


def stpd_source_gets(server: StripeTestServer, source_id: str) -> list[dict]:
    """The test server's log of GET /v1/sources/{id} (only stpd retrieves Sources here)."""
    return [r for r in server.requests(path=f"/v1/sources/{source_id}", method="GET")]


# -- another uid --------------------------------------------------------------------------------

_OTHER_UID_CLIENT = r"""
import json, socket, sys
path, calls = sys.argv[1], json.loads(sys.argv[2])
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(30)
sock.connect(path)
reader = sock.makefile("rb")
replies = []
for number, (method, params) in enumerate(calls, 1):
    sock.sendall(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}).encode() + b"\n")
    while True:
        message = json.loads(reader.readline())
        if message.get("id") == number:
            replies.append(message)
            break
print(json.dumps(replies))
"""


def run_as(python: str, uid: int, socket_path: Path, calls: list) -> list[dict]:
    """Sends CALLS ([method, params] pairs) one by one from a client running as UID; their replies."""
    done = subprocess.run([python, "-I", "-c", _OTHER_UID_CLIENT, str(socket_path), json.dumps(calls)],
                          user=uid, group=uid, extra_groups=[], cwd="/", capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, f"client as uid {uid} failed ({done.returncode}): {done.stderr}"
    return json.loads(done.stdout)
