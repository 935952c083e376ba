"""`stpctl source ...` and `stpctl redirect ...` end to end: the real stpctl against stpd and the
project's stripe-test-server. Typed constructors and --raw; the wait commands' exit statuses (0
finished, 1 ended with an error / stopped / cancelled, 4 at --timeout); the progress line on a pty.
The redirect flow through `handle-url` is in test_desktop.py.
"""

from __future__ import annotations

from codes import STRIPE_INVALID_REQUEST
import json
import subprocess
import time
from pathlib import Path

import pytest

from conftest import clean_environment
from flows import stpd_for
from test_stpctl_customer import EXIT_TIMEOUT, run_on_terminal

SOFORT = ["source", "create", "sofort", "--amount", "1099", "--country", "DE", "--return-url", "myshop://back"]


@pytest.fixture
def stpctl(bin_dir: Path, start_stpd, tmp_path: Path, stripe_test_server):
    """stpctl(*args, input=None) -> CompletedProcess (stdout piped), against stpd and the test server."""
    daemon = stpd_for(start_stpd, tmp_path / "stpd", stripe_test_server)
    argv = [str(bin_dir / "stpctl"), "--socket", str(daemon.socket_path)]

    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*argv, *args], env=clean_environment(), input=input, capture_output=True, text=True,
                              timeout=EXIT_TIMEOUT, stdin=None if input is not None else subprocess.DEVNULL)

    run.argv = argv
    run.server = stripe_test_server
    return run


def ok(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0 and done.stderr == "", (done.returncode, done.stdout, done.stderr)
    return json.loads(done.stdout)


def test_typed_and_raw_constructors(stpctl):
    created = ok(stpctl(*SOFORT, "--merchant-name", "Shop"))
    source = created["source"]
    assert (source["type"], source["amount"], source["currency"]) == ("sofort", 1099, "eur")
    assert source["redirect"]["returnURL"] == "myshop://back?redirect_merchant_name=Shop"
    assert created["clientSecret"] == "[REDACTED]"  # stpctl output never shows it unless asked
    shown = ok(stpctl(*SOFORT, "--show-secrets"))
    assert shown["clientSecret"].startswith("src_client_secret_")

    # stpd refuses an expired card (STPCardValidator), so the year moves with the clock.
    card = ok(stpctl("source", "create", "card", "--number", "4242424242424242", "--exp-month", "12",
                     "--exp-year", str(time.gmtime().tm_year + 3), "--cvc", "123"))["source"]
    assert (card["type"], card["flow"], card["status"]) == ("card", "none", "chargeable")
    secure = ok(stpctl("source", "create", "three-d-secure", "--amount", "500", "--currency", "eur",
                       "--return-url", "myshop://3ds", "--card", card["id"]))["source"]
    assert (secure["type"], secure["flow"]) == ("three_d_secure", "redirect")

    raw = {"type": "sofort", "amount": 700, "currency": "eur", "redirect": {"return_url": "myshop://raw"},
           "sofort": {"country": "AT"}}
    from_stdin = ok(stpctl("source", "create", "--raw", "-", input=json.dumps(raw)))["source"]
    assert (from_stdin["type"], from_stdin["amount"]) == ("sofort", 700)
    assert [s["id"] for s in ok(stpctl("source", "list"))["sources"]] == [
        source["id"], shown["source"]["id"], card["id"], secure["id"], from_stdin["id"]]

    # A TYPE and --raw together, or neither: usage errors, nothing created.
    assert stpctl("source", "create", "card", "--raw", "{}", "--number", "4242424242424242", "--exp-month", "1",
                  "--exp-year", "2030").returncode == 2
    assert stpctl("source", "create").returncode == 2
    assert len(ok(stpctl("source", "list"))["sources"]) == 5


def test_client_secrets_in_urls_are_redacted_unless_asked(stpctl):
    """Issue 24.6: `source create`, `source list` and `redirect list/show` printed client_secret=...
    inside redirect URLs; now only the object id is left, unless --show-secrets."""
    created = ok(stpctl(*SOFORT, "--show-secrets"))
    url = created["source"]["redirect"]["url"]
    assert "client_secret=src_client_secret_" in url and "[REDACTED]" not in url
    session = ok(stpctl("redirect", "create", "--source", created["source"]["id"]))
    for args in [SOFORT, ["source", "list"], ["source", "show", created["source"]["id"]], ["redirect", "list"],
                 ["redirect", "show", session["id"]]]:
        done = stpctl(*args)
        assert done.returncode == 0, done
        assert "client_secret=src_client_secret_[REDACTED]" in done.stdout, (args, done.stdout)
        assert "src_client_secret_" not in done.stdout.replace("src_client_secret_[REDACTED]", ""), done.stdout
    assert url in stpctl("source", "list", "--show-secrets").stdout


def test_poll_wait_finishes_at_its_timeout(stpctl):
    sid = ok(stpctl(*SOFORT))["source"]["id"]
    done = ok(stpctl("source", "poll", sid, "--poll-timeout", "2", "--wait"))
    assert (done["id"], done["poll"]["status"], done["poll"]["sourceStatus"]) == (sid, "finished", "pending")
    # Waiting again on a finished poll answers at once, the same way.
    assert ok(stpctl("source", "wait", sid))["poll"]["status"] == "finished"


def test_wait_timeout_exits_4_and_a_stopped_poll_1(stpctl):
    sid = ok(stpctl(*SOFORT))["source"]["id"]
    assert ok(stpctl("source", "poll", sid, "--poll-timeout", "60"))["poll"]["status"] == "polling"
    late = stpctl("source", "wait", sid, "--timeout", "1")
    assert late.returncode == 4 and late.stdout == "", late
    assert "gave up waiting after 1 s" in late.stderr and sid in late.stderr

    ok(stpctl("source", "stop", sid))
    stopped = stpctl("source", "wait", sid)
    assert stopped.returncode == 1, stopped
    assert json.loads(stopped.stdout)["poll"]["status"] == "stopped"
    assert "stopped before it finished" in stopped.stderr

    unpolled = ok(stpctl(*SOFORT))["source"]["id"]
    none = stpctl("source", "wait", unpolled)
    assert none.returncode == 1 and f"stpctl source poll {unpolled}" in none.stderr, none


def test_a_poll_ending_with_an_error_exits_1(stpctl):
    sid = ok(stpctl(*SOFORT))["source"]["id"]
    stpctl.server.add_fault(method="GET", path=f"/v1/sources/{sid}", status=404, times=1, body={"error": {
        "type": "invalid_request_error", "code": "resource_missing", "message": f"No such source: '{sid}'"}})
    done = stpctl("source", "poll", sid, "--wait")
    assert done.returncode == 1, done
    assert json.loads(done.stdout)["poll"]["error"]["code"] == STRIPE_INVALID_REQUEST
    assert json.loads(done.stderr)["code"] == STRIPE_INVALID_REQUEST  # like a daemon error, in JSON when piped


def test_cancelled_redirect_wait_exits_1(stpctl):
    sid = ok(stpctl(*SOFORT))["source"]["id"]
    rid = ok(stpctl("redirect", "create", "--source", sid))["id"]
    assert ok(stpctl("redirect", "start", rid, "--mode", "in-app"))["mode"] == "inApp"
    assert ok(stpctl("redirect", "cancel", rid))["status"] == "cancelled"
    done = stpctl("redirect", "wait", rid)
    assert done.returncode == 1 and json.loads(done.stdout)["status"] == "cancelled", done
    assert "cancelled" in done.stderr
    assert stpctl("redirect", "create", "--source", sid, "--payment-intent", "pi_1_secret_2").returncode == 2


def test_redirect_report_closed(stpctl):
    sid = ok(stpctl(*SOFORT))["source"]["id"]
    rid = ok(stpctl("redirect", "create", "--source", sid))["id"]
    assert ok(stpctl("redirect", "start", rid))["status"] == "inProgress"
    closed = ok(stpctl("redirect", "report", rid, "closed", "--message", "window closed"))
    assert closed["completion"]["trigger"] == "closed"
    assert closed["completion"]["error"]["data"] == {"sdkDomain": "com.stripe.lib", "sdkCode": 80,
                                                     "message": "window closed"}
    assert stpctl("redirect", "report", rid, "gone").returncode == 2


def test_progress_line_on_a_terminal(stpctl):
    sid = ok(stpctl(*SOFORT))["source"]["id"]
    status, output = run_on_terminal([*stpctl.argv, "source", "poll", sid, "--poll-timeout", "2", "--wait"])
    assert status == 0, output
    # Redrawn in place with \r and erased before the result, which is the human form.
    assert f"\r\x1b[K{sid}  pending  polling  retries 0" in output
    result = output.rsplit("\r\x1b[K", 1)[1]
    assert result.startswith(f"source:     {sid}\n") and "poll:       finished: pending" in result
    assert "client secret" not in result
