"""`stpctl customer ...` end to end: the real stpctl against a live stpd.

App sessions (`--app --no-prefetch`) need neither Stripe nor a merchant backend: open, list,
show, close, show again (closed), and error replies for unknown and malformed session ids
(status 1: stpctl leaves checking the id to the daemon). Backend sessions opened with
--no-prefetch check where the Authorization value comes from (file, environment, flag) without
any request reaching the backend: the reply shows it only as [REDACTED]. A pty checks the
human table.
"""

from __future__ import annotations

from codes import INVALID_PARAMS, NOT_FOUND
import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from conftest import clean_environment

EXIT_TIMEOUT = 30.0
SECRET = "Bearer s3cretT0ken"


@pytest.fixture(scope="session")
def stpctl_bin(bin_dir: Path) -> Path:
    path = bin_dir / "stpctl"
    if not path.is_file():
        pytest.fail(f"no stpctl binary in {bin_dir}: run `swift build` first")
    return path


@pytest.fixture
def stpctl(stpctl_bin: Path, start_stpd, tmp_path: Path):
    """stpctl(*args, env=None) -> CompletedProcess, against one daemon started for the test."""
    daemon = start_stpd(tmp_path / "stpd")

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(stpctl_bin), "--socket", str(daemon.socket_path), *args],
                              env=clean_environment(**(env or {})), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=EXIT_TIMEOUT)

    run.daemon = daemon
    return run


def ok_json(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout  # piped: one compact line
    return json.loads(lines[0])


def error_reply(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    return json.loads(done.stderr)  # piped: the JSON-RPC error object


def run_on_terminal(argv: list[str]) -> tuple[int, str]:
    """Runs ARGV with stdout on a pty (stderr piped); returns its status and what it printed."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=clean_environment())
    finally:
        os.close(slave)
    output = b""
    deadline = time.monotonic() + EXIT_TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            output += chunk
        status = proc.wait(EXIT_TIMEOUT)
    finally:
        os.close(master)
        proc.stderr.close()
    return status, output.decode().replace("\r\n", "\n")


def test_app_session_lifecycle(stpctl):
    opened = ok_json(stpctl("--json", "customer", "open", "--app", "--no-prefetch", "--timeout-seconds", "5"))
    sid = opened["id"]
    assert sid.startswith("cses_")
    assert opened["status"] == "open"
    assert opened["adapter"] == {"kind": "app", "timeout": 5}

    listed = ok_json(stpctl("customer", "list"))
    assert [s["id"] for s in listed["sessions"]] == [sid]

    shown = ok_json(stpctl("customer", "show", sid))
    assert (shown["id"], shown["status"], shown["object"]) == (sid, "open", "customer_session")

    closed = ok_json(stpctl("customer", "close", sid))
    assert (closed["id"], closed["status"]) == (sid, "closed")

    assert ok_json(stpctl("customer", "show", sid))["status"] == "closed"
    assert ok_json(stpctl("customer", "list"))["sessions"][0]["status"] == "closed"


def test_unknown_and_malformed_session_ids_exit_1(stpctl):
    assert error_reply(stpctl("customer", "show", "cses_doesNotExist"))["code"] == NOT_FOUND
    assert error_reply(stpctl("customer", "close", "cses_doesNotExist"))["code"] == NOT_FOUND
    # Not even the form of a session id: stpctl sends it anyway and the daemon refuses it.
    assert error_reply(stpctl("customer", "show", "not-a-session"))["code"] == INVALID_PARAMS
    assert error_reply(stpctl("customer", "payment-methods", "cses_doesNotExist"))["code"] == NOT_FOUND


def test_usage_errors_exit_2_without_a_call(stpctl):
    for args in (["customer", "open"], ["customer", "open", "--app", "--stripe-app-keys"],
                 ["customer", "open", "--app", "--authorization", SECRET]):
        done = stpctl(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert "Usage: stpctl customer open" in done.stderr
    assert ok_json(stpctl("customer", "list")) == {"sessions": [], "hasMore": False}


@pytest.mark.parametrize("how", ["file", "environment", "flag"])
def test_backend_authorization_is_sent_and_shown_redacted(stpctl, tmp_path, how):
    args = ["customer", "open", "--backend", "http://127.0.0.1:1/api", "--no-prefetch"]
    env = {}
    if how == "file":
        token = tmp_path / "token"
        token.write_text(SECRET + "\n")
        token.chmod(0o600)
        args += ["--authorization-file", str(token)]
        env["STPD_AUTHORIZATION"] = "Bearer fromTheEnvironment"  # the file wins
    elif how == "environment":
        env["STPD_AUTHORIZATION"] = SECRET
    else:
        args += ["--authorization", SECRET]
    done = stpctl(*args, env=env)
    opened = ok_json(done)
    assert opened["adapter"] == {"kind": "backend", "url": "http://127.0.0.1:1/api", "authorization": "[REDACTED]"}
    assert "s3cret" not in done.stdout and "fromTheEnvironment" not in done.stdout


def test_human_output_on_a_terminal(stpctl, stpctl_bin):
    sid = ok_json(stpctl("customer", "open", "--app", "--no-prefetch"))["id"]
    socket_args = [str(stpctl_bin), "--socket", str(stpctl.daemon.socket_path)]

    status, text = run_on_terminal(socket_args + ["customer", "list"])
    assert status == 0, text
    header, row = text.rstrip("\n").split("\n")
    assert header.split() == ["ID", "STATUS", "ADAPTER", "CUSTOMER", "LAST", "SELECTED", "UPDATED"]
    assert row.split()[:5] == [sid, "open", "app", "-", "-"]
    assert header.index("STATUS") == row.index("open")  # aligned

    status, text = run_on_terminal(socket_args + ["customer", "show", sid])
    assert status == 0, text
    assert f"session:          {sid}\n" in text
    assert "status:           open\n" in text
    assert "adapter:          app\n" in text


def test_select_remembers_and_forgets_the_payment_method(stpctl_bin, start_stpd, tmp_path, stripe_test_server):
    # stpd beside a server: its own secret key for one customer, no ephemeral keys.
    customer = stripe_test_server.create_customer()["id"]
    daemon = start_stpd(tmp_path / "stpd", env={"STPD_STRIPE_KEY": stripe_test_server.secret_key,
                                                 "STPD_STRIPE_API_BASE": stripe_test_server.base_url})

    def run(*args: str) -> dict:
        return ok_json(subprocess.run([str(stpctl_bin), "--socket", str(daemon.socket_path), *args],
                                      env=clean_environment(), stdin=subprocess.DEVNULL, capture_output=True,
                                      text=True, timeout=EXIT_TIMEOUT))

    session = run("customer", "open", "--stripe-server-customer", customer, "--no-prefetch")["id"]
    selected = run("customer", "select", session, "pm_card_visa")
    assert selected["lastSelectedPaymentMethod"] == "pm_card_visa"
    assert selected["customerId"] == customer
    forgotten = run("customer", "select", session, "--none")
    assert "lastSelectedPaymentMethod" not in forgotten or forgotten["lastSelectedPaymentMethod"] is None
