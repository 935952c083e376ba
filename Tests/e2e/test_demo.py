"""`make demo`'s walk-through (scripts/demo) runs to the end on the built binaries: a card
PaymentIntent succeeds through its 3-D Secure page and the loopback return (headless Chromium as the
customer where it is installed, as under CI), a PaymentIntent confirmed on the merchant's server
succeeds through use_stripe_sdk's 3-D Secure page opened by handleNextAction, an OXXO voucher's
page opens as a redirect session (the SDK's VoucherDisplayHandler) and its closing succeeds, the payment context finishes with success, and everything it started is stopped and its
directory removed. It uses no payment method Stripe has discontinued."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT, clean_environment

DEMO_TIMEOUT = 300


@pytest.fixture
def tmp_path():
    """A short directory of the test's own: Chromium's singleton socket goes under $TMPDIR, and
    pytest's tmp_path under an xdist worker (.../popen-gw3/test_demo_runs_to_the_end0/) makes
    that socket's path longer than a Unix socket's 108 bytes."""
    directory = Path(tempfile.mkdtemp(prefix="stpd-demo-test."))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_demo_runs_to_the_end(bin_dir: Path, tmp_path: Path):
    # A setting of the caller's must not reach the demo's daemon (it unsets STPD_*).
    env = clean_environment(STPD_BIN_DIR=str(bin_dir), TMPDIR=str(tmp_path), STPD_SOCKET="/nonexistent/stpd.sock")
    # No display: the demo must not wait for a person's click.
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "STPD_DEMO_BROWSER"):
        env.pop(name, None)
    done = subprocess.run([str(REPO_ROOT / "scripts" / "demo")], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=DEMO_TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"(?m)^payment intent pi_\w+: succeeded$", out), out
    assert "the customer's browser shows: Payment authorised: you can close this window and return to Demo Shop." \
        in out, out
    headless = any(Path(p).exists() for p in ("/usr/lib/chromium/chromium", "/usr/bin/chromium"))
    assert ("headless Chromium is the customer" if headless else "the demo is the customer's browser") in out, out
    assert "--return-url loopback" in out
    # A PaymentIntent confirmed on the server: use_stripe_sdk's 3-D Secure page, opened as a redirect.
    assert re.search(r"(?m)^result: pending, next action: use_stripe_sdk \(redirect\), session: rdr_\w+$", out), out
    assert len(re.findall(r"(?m)^payment intent pi_\w+: succeeded$", out)) == 2, out
    # The voucher: its hosted page opened as a session with no return URL, closed, a success still to pay.
    assert re.search(r"(?m)^result: pending, next action: oxxo_display_details, voucher number \d+, session: rdr_\w+$",
                     out), out
    assert re.search(r"(?m)^voucher for pi_\w+: succeeded \(the PaymentIntent is requires_action until", out), out
    assert re.search(r"(?m)^context pctx_\w+: didFinish with success$", out), out
    for command in ("payment-intent confirm", "redirect wait", "redirect report", "payment-intent show",
                    "payment-intent retrieve", "context select", "context request-payment", "context answer",
                    "events wait"):
        assert re.search(rf"\$ stpctl(?: --[\w-]+(?: \d+)?)* {re.escape(command)}", out), command
    for discontinued in ("sofort", "giropay"):
        assert discontinued not in out.lower(), discontinued
    # Stopped what it started: its directory (socket, state, logs) is gone, and no process runs from it.
    assert not list(tmp_path.glob("stpd-demo.*")), list(tmp_path.iterdir())
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            assert str(tmp_path).encode() not in cmdline, cmdline
