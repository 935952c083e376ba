"""Stripe stand-ins for the end-to-end tests, standard library only.

- ``StripeTestServer``: the project's own ``stripe-test-server`` executable (from the build
  directory), started on an ephemeral port of 127.0.0.1; it prints
  ``listening on http://127.0.0.1:PORT`` once it accepts connections.
- ``LocalStripe``: the ``localstripe`` package's aiohttp app, served on 127.0.0.1 only. Its own
  CLI binds every interface (``('::', port)``) and pickles its whole store to the fixed path
  ``/tmp/localstripe.pickle``, which concurrent runs would share; the launcher below imports the
  same app (same routes and middlewares), starts from an empty store, keeps its pickle in the
  working directory it is started in, and binds 127.0.0.1.

Both are stopped by their own pid (SIGTERM, then SIGKILL), never by name.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import warnings
from pathlib import Path
from typing import Any

START_TIMEOUT = float(os.environ.get("STPD_TEST_STRIPE_START_TIMEOUT", "30"))
STOP_TIMEOUT = 10.0

TEST_SECRET_KEY = "sk_test_stpdE2eSecretKey0000000001"
TEST_PUBLISHABLE_KEY = "pk_test_stpdE2ePublishableKey000001"
# The Idempotency-Key prefix of calls the tests make themselves (see StripeLike.api).
TEST_CALL_PREFIX = "e2e-test-"


# -- form encoding and HTTP ----------------------------------------------------------------

def form_pairs(params: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Stripe's form encoding: nested dicts as ``a[b][c]``, lists as ``a[0]``, booleans as
    ``true``/``false``; None is left out."""
    pairs: list[tuple[str, str]] = []
    if isinstance(params, dict):
        for key, value in params.items():
            pairs += form_pairs(value, f"{prefix}[{key}]" if prefix else str(key))
    elif isinstance(params, (list, tuple)):
        for index, value in enumerate(params):
            pairs += form_pairs(value, f"{prefix}[{index}]")
    elif params is None:
        pass
    elif isinstance(params, bool):
        pairs.append((prefix, "true" if params else "false"))
    else:
        pairs.append((prefix, str(params)))
    return pairs


class HTTPReply:
    def __init__(self, status: int, headers: dict[str, str], body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"HTTPReply({self.status}, {self.body[:500]!r})"


def http_request(method: str, url: str, *, headers: dict[str, str] | None = None, body: bytes | None = None,
                 timeout: float = 30.0) -> HTTPReply:
    """One request; any status comes back as an HTTPReply (no exception for 4xx/5xx)."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy from the environment
    try:
        with opener.open(request, timeout=timeout) as response:
            return HTTPReply(response.status, dict(response.headers.items()), response.read())
    except urllib.error.HTTPError as error:
        return HTTPReply(error.code, dict(error.headers.items()), error.read())


class StripeLike:
    """Calls against a Stripe-shaped API at ``base_url`` with form-encoded params."""

    base_url: str
    secret_key: str

    def api(self, method: str, path: str, params: dict | None = None, *, key: str | None = None,
            headers: dict[str, str] | None = None, expect: int | None = 200) -> Any:
        """Form-encoded params (query for GET/DELETE, body for POST), Bearer ``key`` (the secret
        key by default). Returns the JSON body; asserts the status unless ``expect`` is None."""
        pairs = form_pairs(params or {})
        url = self.base_url + path
        # Marks the test's own calls in the stripe-test-server's request log (its `idempotency_key`
        # field), so they can be told from stpd's; localstripe ignores the header.
        all_headers = {"Authorization": f"Bearer {key or self.secret_key}",
                       "Idempotency-Key": f"{TEST_CALL_PREFIX}{uuid.uuid4().hex}"}
        all_headers.update(headers or {})
        body = None
        if method.upper() == "POST":
            body = urllib.parse.urlencode(pairs).encode()
            all_headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif pairs:
            url += "?" + urllib.parse.urlencode(pairs)
        reply = http_request(method.upper(), url, headers=all_headers, body=body)
        if expect is not None:
            assert reply.status == expect, f"{method} {path}: expected HTTP {expect}, got {reply!r}"
        try:
            return reply.json()
        except ValueError:
            return reply.body.decode(errors="replace")


def _stop_process(proc: subprocess.Popen, timeout: float = STOP_TIMEOUT) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _read_line(proc: subprocess.Popen, deadline: float, what: str, log: Path) -> str:
    """The next line of the child's stdout, or an error once it exits or the deadline passes."""
    assert proc.stdout is not None
    buffer = b""
    fd = proc.stdout.fileno()
    while b"\n" not in buffer:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{what} printed no line within {START_TIMEOUT} s; log:\n{_tail(log)}")
        readable, _, _ = select.select([fd], [], [], remaining)
        if not readable:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            raise RuntimeError(f"{what} exited ({proc.wait()}) before it was ready; log:\n{_tail(log)}")
        buffer += chunk
    return buffer.split(b"\n", 1)[0].decode(errors="replace").strip()


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return "(no log)"


# -- the project's stripe-test-server ------------------------------------------------------------

class StripeTestServer(StripeLike):
    def __init__(self, proc: subprocess.Popen, base_url: str, secret_key: str, publishable_key: str, log: Path):
        self.proc = proc
        self.base_url = base_url
        self.secret_key = secret_key
        self.publishable_key = publishable_key
        self.log_path = log
        self.cleared: list[dict] = []

    @property
    def port(self) -> int:
        return urllib.parse.urlsplit(self.base_url).port or 0

    # test control (/_test/..., no auth)
    def requests(self, path: str | None = None, method: str | None = None) -> list[dict]:
        """The request log, oldest first (``path`` is a prefix)."""
        query = urllib.parse.urlencode({k: v for k, v in (("path", path), ("method", method)) if v})
        reply = http_request("GET", f"{self.base_url}/_test/requests" + (f"?{query}" if query else ""))
        assert reply.status == 200, reply
        return reply.json()["data"]

    def clear_requests(self) -> None:
        self.cleared += self.requests()  # still checked against Stripe's types (stripe_check.py)
        assert http_request("DELETE", f"{self.base_url}/_test/requests").status == 200

    def every_request(self) -> list[dict]:
        """The whole log since the server started, cleared or not."""
        return self.cleared + self.requests()

    def add_fault(self, **fault: Any) -> None:
        reply = http_request("POST", f"{self.base_url}/_test/faults", body=json.dumps(fault).encode(),
                             headers={"Content-Type": "application/json"})
        assert reply.status == 200, reply

    def control(self, path: str, body: Any = None) -> dict:
        """POST /_test/PATH with a JSON body: the customer's side of a next action
        (``payment_intents/pi_1/succeed``, ``.../next_action``), the server's clock (``clock``)."""
        reply = http_request("POST", f"{self.base_url}/_test/{path}", body=json.dumps(body or {}).encode(),
                             headers={"Content-Type": "application/json"})
        assert reply.status == 200, reply
        return reply.json()

    def advance_clock(self, seconds: int) -> None:
        """Moves the server's clock on: what is due by then (a BLIK approval, a voucher's expiry)
        happens when the intent is next read."""
        self.control("clock", {"advance": seconds})

    # conveniences
    def create_customer(self, **params: Any) -> dict:
        return self.api("POST", "/v1/customers", params)

    def create_card_payment_method(self, number: str = "4242424242424242", *, key: str | None = None) -> dict:
        """A card PaymentMethod created with the publishable key, as a client app would."""
        year = time.gmtime().tm_year + 3
        return self.api("POST", "/v1/payment_methods",
                        {"type": "card", "card": {"number": number, "exp_month": 12, "exp_year": year, "cvc": "123"}},
                        key=key or self.publishable_key)

    def stop(self) -> None:
        _stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start_stripe_test_server(binary: Path, directory: Path, *, secret_key: str = TEST_SECRET_KEY,
                             publishable_key: str = TEST_PUBLISHABLE_KEY) -> StripeTestServer:
    """Starts BINARY (stripe-test-server) on 127.0.0.1, port 0, and waits for its
    ``listening on ...`` line. Its stderr goes to DIRECTORY/stripe-test-server.log."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if not Path(binary).is_file():
        raise FileNotFoundError(f"no stripe-test-server binary at {binary}: run `swift build` first")
    log = directory / "stripe-test-server.log"
    with open(log, "ab") as log_file:
        proc = subprocess.Popen(
            [str(binary), "--port", "0", "--host", "127.0.0.1", "--secret-key", secret_key,
             "--publishable-key", publishable_key],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log_file, start_new_session=True)
    try:
        line = _read_line(proc, time.monotonic() + START_TIMEOUT, "stripe-test-server", log)
        prefix = "listening on "
        if not line.startswith(prefix):
            raise RuntimeError(f"stripe-test-server printed {line!r}, expected {prefix}http://127.0.0.1:PORT")
        base_url = line[len(prefix):].rstrip("/")
    except BaseException:
        _stop_process(proc)
        raise
    return StripeTestServer(proc, base_url, secret_key, publishable_key, log)


# -- localstripe ---------------------------------------------------------------------------------

# Runs in the child, in the working directory it is given. argv[1] is the port (0: any free one);
# prints the bound port, then serves until SIGTERM/SIGINT.
_LOCALSTRIPE_LAUNCHER = r"""
import os, pickle, socket, sys
from aiohttp import web
from localstripe import resources, server

_pickle_path = os.path.join(os.getcwd(), "localstripe.pickle")

def _dump_to_disk(self):
    with open(_pickle_path, "wb") as f:
        pickle.dump(dict(self), f, protocol=pickle.HIGHEST_PROTOCOL)

# Keep the store's pickle in the working directory instead of the fixed /tmp/localstripe.pickle,
# and never load an earlier one: every run starts empty.
resources.Store.dump_to_disk = _dump_to_disk
resources.Store.try_load_from_disk = lambda self: None

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", int(sys.argv[1])))
print(sock.getsockname()[1], flush=True)
web.run_app(server.app, sock=sock, print=None, handle_signals=True)
"""


def localstripe_available() -> str | None:
    """None when localstripe can be imported, else why not."""
    try:
        with warnings.catch_warnings():
            # localstripe registers plain (non-async) handlers, which aiohttp deprecates.
            warnings.simplefilter("ignore", DeprecationWarning)
            import localstripe.server  # noqa: F401
    except Exception as error:  # ImportError, or a dependency that fails to load
        return f"localstripe cannot be imported ({type(error).__name__}: {error}); " \
               f"install requirements-test.txt into the venv (scripts/bootstrap test)"
    return None


class LocalStripe(StripeLike):
    def __init__(self, proc: subprocess.Popen, port: int, directory: Path, log: Path, secret_key: str):
        self.proc = proc
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.directory = directory
        self.log_path = log
        self.secret_key = secret_key

    def flush(self) -> None:
        assert http_request("DELETE", f"{self.base_url}/_config/data").status == 200

    def stop(self) -> None:
        _stop_process(self.proc)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start_localstripe(directory: Path, *, port: int = 0, secret_key: str = TEST_SECRET_KEY,
                      python: str = sys.executable) -> LocalStripe:
    """Starts localstripe's app on 127.0.0.1 with DIRECTORY as its working directory (its pickle
    and log go there) and waits, up to START_TIMEOUT, until it answers HTTP on its port."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "localstripe.log"
    with open(log, "ab") as log_file:
        proc = subprocess.Popen([python, "-c", _LOCALSTRIPE_LAUNCHER, str(port)], cwd=directory,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log_file,
                                start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        bound = int(_read_line(proc, deadline, "localstripe", log))
        # Ready once it answers HTTP (any status: an unauthenticated call gets 401).
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"localstripe exited ({proc.returncode}); log:\n{_tail(log)}")
            try:
                reply = http_request("GET", f"http://127.0.0.1:{bound}/v1/customers", timeout=2)
                if reply.status in (200, 401):
                    break
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"localstripe did not answer on 127.0.0.1:{bound} within {START_TIMEOUT} s; "
                                   f"log:\n{_tail(log)}")
            time.sleep(0.05)
    except BaseException:
        _stop_process(proc)
        raise
    return LocalStripe(proc, bound, directory, log, secret_key)
