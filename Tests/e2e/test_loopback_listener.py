"""The loopback return's listener under bad input, over raw sockets (no browser): it answers only
`GET /return/TOKEN…`, bounds header bytes, time and connections as the Unix socket does, listens
only while a loopback session waits (plus STPD_LOOPBACK_GRACE), and a restarted stpd listens again
on the port its waiting sessions' return URLs name. A returnURL that is neither "loopback" nor an
absolute URL is refused with -32602.
"""

from __future__ import annotations

import http.client
import os
import select
import socket
import time
import urllib.parse

import pytest

from codes import INVALID_PARAMS
from fleet import database_url, needs_cluster, pair  # noqa: F401 (a fixture)
from flows import bank_page, rpc_error, stpd_for, stripe_env

HEAD_TIMEOUT = 2  # STPD_FRAME_TIMEOUT: the request head's time
MAX_CONNECTIONS = 4
LIMITS = {"STPD_LOOPBACK_GRACE": "1", "STPD_FRAME_TIMEOUT": str(HEAD_TIMEOUT),
          "STPD_LOOPBACK_MAX_CONNECTIONS": str(MAX_CONNECTIONS)}


@pytest.fixture
def daemon(start_stpd, stripe_test_server, tmp_path):
    return stpd_for(start_stpd, tmp_path / "stpd", stripe_test_server, "--merchant-name", "Listener Shop",
                    env=LIMITS)


def card_intent(server) -> dict:
    return server.api("POST", "/v1/payment_intents",
                      {"amount": 500, "currency": "eur", "payment_method_types": ["card"]})


def loopback_session(client, server) -> tuple[dict, dict]:
    intent = card_intent(server)
    answer = client.call("paymentIntent.confirm", {"clientSecret": intent["client_secret"],
                                                   "paymentMethod": {"id": "pm_card_authenticationRequired"},
                                                   "returnURL": "loopback"})
    return intent, answer["redirect"]


def port_of(url: str) -> int:
    return urllib.parse.urlsplit(url).port


def get(port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET",
        body: bytes | None = None) -> tuple[int, dict[str, str], str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        connection.close()


def closed_by_peer(sock: socket.socket, timeout: float) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def loopback_status(client) -> tuple[bool, int | None, int]:
    status = client.call("daemon.status", {})["loopback"]
    return status["listening"], status.get("port"), status["waiting"]


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def test_listens_only_while_a_session_waits(daemon, stripe_test_server):
    client = daemon.client()
    assert loopback_status(client) == (False, None, 0)
    _, session = loopback_session(client, stripe_test_server)
    port = port_of(session["returnURL"])
    assert loopback_status(client) == (True, port, 1)
    assert listening(port)
    # The app abandons it before starting it: nothing waits any more, and after the grace the port closes.
    assert client.call("redirect.cancel", {"session": session["id"]})["status"] == "cancelled"
    deadline = time.monotonic() + 15
    while listening(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not listening(port)
    assert loopback_status(client) == (False, None, 0)


def test_answers_only_get_of_a_return_token(daemon, stripe_test_server):
    client = daemon.client()
    _, session = loopback_session(client, stripe_test_server)
    url = urllib.parse.urlsplit(session["returnURL"])
    token = url.path.split("/return/")[1]
    wrong = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    for method, path, body in [("GET", "/", None), ("GET", "/favicon.ico", None), ("GET", "/return/", None),
                               ("GET", "/return/short", None), ("GET", f"/return/{token}/more", None),
                               ("POST", url.path, b"x=1"), ("PUT", url.path, None), ("HEAD", url.path, None),
                               ("GET", url.path, b"body")]:
        status, _, text = get(url.port, path, method=method, body=body)
        assert status == 404, (method, path, status)
        assert token not in text
    # A token of the right form that no session has: the page says so.
    status, headers, text = get(url.port, f"/return/{wrong}")
    assert status == 404 and "not known" in text and "Nothing was changed" in text, text
    assert headers["cache-control"] == "no-store"
    got = client.call("redirect.get", {"session": session["id"]})
    assert got["status"] == "notStarted" and got.get("completion") is None, got


def test_a_return_completes_once_with_a_strict_page(daemon, stripe_test_server):
    client = daemon.client()
    intent, session = loopback_session(client, stripe_test_server)
    back = bank_page(session["redirectURL"], "succeed")
    url = urllib.parse.urlsplit(back)
    status, headers, text = get(url.port, f"{url.path}?{url.query}")
    assert status == 200, text
    assert "Payment authorised: you can close this window and return to Listener Shop." in text, text
    assert headers["content-type"] == "text/html; charset=utf-8" and headers["cache-control"] == "no-store"
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script" not in csp and "unsafe" not in csp, csp
    assert headers["referrer-policy"] == "no-referrer" and headers["x-content-type-options"] == "nosniff"
    assert "<script" not in text and url.path.split("/")[-1] not in text and "secret" not in text
    done = client.call("redirect.get", {"session": session["id"]})
    assert done["completion"]["trigger"] == "url" and done["outcome"]["intentResult"] == "succeeded", done
    # The same link again: said so, nothing changed.
    status, _, again = get(url.port, f"{url.path}?{url.query}")
    assert status == 200 and "used before; nothing was changed" in again, again
    assert client.call("redirect.get", {"session": session["id"]})["updatedAt"] == done["updatedAt"]
    # The token is never logged in full.
    assert url.path.split("/")[-1] not in daemon.log()


def test_oversized_heads_are_refused(daemon, stripe_test_server):
    client = daemon.client()
    _, session = loopback_session(client, stripe_test_server)
    url = urllib.parse.urlsplit(session["returnURL"])
    for headers in [{"X-Big": "a" * 10_000}, {f"X-H{i}": "v" for i in range(100)}]:
        status, _, _ = get(url.port, url.path, headers=headers)
        assert status == 400
    status, _, _ = get(url.port, url.path + "?" + "q" * 10_000)
    assert status == 400
    assert client.call("redirect.get", {"session": session["id"]})["status"] == "notStarted"


def test_slow_clients_and_many_connections_are_cut_off(daemon, stripe_test_server):
    client = daemon.client()
    _, session = loopback_session(client, stripe_test_server)
    url = urllib.parse.urlsplit(session["returnURL"])
    # A head trickling in a byte at a time is closed once the head's time is up.
    slow = socket.create_connection(("127.0.0.1", url.port))
    started = time.monotonic()
    request = f"GET {url.path} HTTP/1.1\r\nHost: x\r\n".encode()
    closed = False
    for byte in request:
        try:
            slow.send(bytes([byte]))
        except OSError:
            closed = True
            break
        if closed_by_peer(slow, 0.2):
            closed = True
            break
    assert closed or closed_by_peer(slow, HEAD_TIMEOUT + 5)
    assert time.monotonic() - started < HEAD_TIMEOUT + 5
    slow.close()
    # MAX_CONNECTIONS idle connections hold every slot: one more is closed unanswered.
    idle = [socket.create_connection(("127.0.0.1", url.port)) for _ in range(MAX_CONNECTIONS)]
    time.sleep(0.3)
    extra = socket.create_connection(("127.0.0.1", url.port))
    assert closed_by_peer(extra, 5)
    extra.close()
    # Idle ones are closed at the head's deadline, and the listener serves again.
    assert all(closed_by_peer(sock, HEAD_TIMEOUT + 5) for sock in idle)
    for sock in idle:
        sock.close()
    time.sleep(0.3)
    status, _, _ = get(url.port, "/")
    assert status == 404
    assert client.call("redirect.get", {"session": session["id"]})["status"] == "notStarted"


def test_a_restarted_stpd_listens_again_on_the_recorded_port(start_stpd, stripe_test_server, tmp_path):
    directory = tmp_path / "stpd"
    daemon = stpd_for(start_stpd, directory, stripe_test_server, env=LIMITS)
    client = daemon.client()
    intent, session = loopback_session(client, stripe_test_server)
    client.close()
    daemon.kill()
    back = bank_page(session["redirectURL"], "succeed")
    daemon = stpd_for(start_stpd, directory, stripe_test_server, env=LIMITS)
    client = daemon.client()
    # It listens again as it starts serving (the listener's service reads the waiting sessions).
    deadline = time.monotonic() + 15
    while loopback_status(client) != (True, port_of(session["returnURL"]), 1) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert loopback_status(client) == (True, port_of(session["returnURL"]), 1)
    url = urllib.parse.urlsplit(back)
    code, _, text = get(url.port, f"{url.path}?{url.query}")
    assert code == 200 and "Payment authorised" in text, text
    assert client.call("redirect.get", {"session": session["id"]})["outcome"]["intentResult"] == "succeeded"


@pytest.mark.parametrize("bad", ["not a url", "relative/path", "Loopback", "//host/x", ""])
def test_return_urls_that_are_neither_loopback_nor_absolute_are_refused(daemon, stripe_test_server, bad):
    client = daemon.client()
    intent = card_intent(stripe_test_server)
    error = rpc_error(client, "paymentIntent.confirm", {"clientSecret": intent["client_secret"],
                                                        "paymentMethod": {"id": "pm_card_visa"}, "returnURL": bad})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "returnURL", error


def test_no_idle_exit_while_a_loopback_session_waits(start_stpd, stripe_test_server, tmp_path):
    """A socket-activated stpd with a loopback session waiting stays up past its idle timeout (the
    customer's browser will come back to it, not to the socket); once nothing waits, the grace
    passes and it exits on idle."""
    path = tmp_path / "stpd.sock"
    daemon = start_stpd(tmp_path, "--stripe-api-base", stripe_test_server.base_url, "--idle-timeout", "1",
                        env={**stripe_env(stripe_test_server), **LIMITS}, activate=[(path, "stpd")])
    with daemon.client() as client:
        _, session = loopback_session(client, stripe_test_server)
    pidfd = os.pidfd_open(daemon.pid)
    try:
        exited, _, _ = select.select([pidfd], [], [], 4.0)
    finally:
        os.close(pidfd)
    assert not exited, f"stpd exited on idle with a loopback session waiting\n{daemon.log()}"
    assert listening(port_of(session["returnURL"]))
    with daemon.client() as client:
        client.call("redirect.cancel", {"session": session["id"]})
    daemon.wait_notify("STOPPING=1", timeout=30)
    assert daemon.wait_exit() == 0


def test_other_calls_taking_a_return_url_refuse_what_is_not_one(daemon, stripe_test_server):
    client = daemon.client()
    error = rpc_error(client, "source.create", {"params": {"bancontact": {
        "amount": 100, "name": "Jo", "returnURL": "back-to-app"}}})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "params.returnURL", error
    intent = card_intent(stripe_test_server)
    error = rpc_error(client, "paymentIntent.handleNextAction",
                      {"clientSecret": intent["client_secret"], "returnURL": "nope"})
    assert error.code == INVALID_PARAMS and error.data["parameter"] == "returnURL", error


def test_handle_url_with_a_loopback_url_completes_it_for_its_owner(daemon, stripe_test_server):
    """The owner may deliver the loopback URL itself (a browser that cannot reach 127.0.0.1 of
    stpd's machine); the page then says it was used."""
    client = daemon.client()
    _, session = loopback_session(client, stripe_test_server)
    back = bank_page(session["redirectURL"], "succeed")
    assert client.call("handle-url", {"url": back}) == {"handled": True, "session": session["id"]}
    assert client.call("handle-url", {"url": back})["handled"] is False
    url = urllib.parse.urlsplit(back)
    status, _, text = get(url.port, f"{url.path}?{url.query}")
    assert status == 200 and "used before" in text, text


@needs_cluster
def test_each_instance_of_a_fleet_listens_for_the_loopback_sessions_it_created(start_stpd, tmp_path,
                                                                               stripe_test_server, database_url):
    """The return URL names 127.0.0.1:PORT of the instance that issued it: that one listens and
    counts it as waiting, the other does not; any instance sees the outcome."""
    a, b = pair(start_stpd, tmp_path, stripe_test_server, database_url, env=LIMITS)
    with a.client() as on_a, b.client() as on_b:
        _, session = loopback_session(on_a, stripe_test_server)
        assert loopback_status(on_a) == (True, port_of(session["returnURL"]), 1)
        assert loopback_status(on_b) == (False, None, 0)
        back = urllib.parse.urlsplit(bank_page(session["redirectURL"], "succeed"))
        status, _, text = get(back.port, f"{back.path}?{back.query}")
        assert status == 200 and "Payment authorised" in text, text
        done = on_b.call("redirect.get", {"session": session["id"]})
        assert done["outcome"]["intentResult"] == "succeeded", done
