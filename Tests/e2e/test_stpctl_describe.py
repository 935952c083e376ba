"""`stpctl describe METHOD` against the real daemon: one method of `rpc.discover` for a person
(on a terminal), its entry of the contract as JSON otherwise, a usage error for an unknown name;
without a method, the methods by kind with their summaries."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import clean_environment
from test_stpctl_customer import EXIT_TIMEOUT, run_on_terminal


def test_describe(start_stpd, tmp_path: Path, bin_dir: Path, contract: dict):
    daemon = start_stpd(tmp_path)
    argv = [str(bin_dir / "stpctl"), "--socket", str(daemon.socket_path)]

    status, text = run_on_terminal([*argv, "describe", "source.poll"])
    assert status == 0, text
    lines = text.replace("\r\n", "\n").splitlines()
    assert lines[0].startswith("source.poll: Starts polling a Source")
    assert "  id (string, required): A Stripe Source id" in lines
    assert "result: Source" in lines
    assert "  1001 NotFound: No such object" in lines

    piped = subprocess.run([*argv, "describe", "daemon.metrics"], env=clean_environment(), capture_output=True,
                           text=True, timeout=EXIT_TIMEOUT, stdin=subprocess.DEVNULL)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout) == next(m for m in contract["methods"] if m["name"] == "daemon.metrics")

    unknown = subprocess.run([*argv, "describe", "poll"], env=clean_environment(), capture_output=True, text=True,
                             timeout=EXIT_TIMEOUT, stdin=subprocess.DEVNULL)
    assert unknown.returncode == 2
    assert "no method poll: did you mean" in unknown.stderr and "source.poll, source.stopPolling?" in unknown.stderr

    status, text = run_on_terminal([*argv, "describe"])
    assert status == 0, text
    lines = text.replace("\r\n", "\n").splitlines()
    assert lines[0] == f"{len(contract['methods'])} methods by kind (stpctl describe METHOD tells more)"
    poll = next(m for m in contract["methods"] if m["name"] == "source.poll")
    heading = lines.index("source")
    assert any(line.startswith("  source.poll ") and line.endswith(poll["summary"]) for line in lines[heading:])

    piped = subprocess.run([*argv, "describe"], env=clean_environment(), capture_output=True, text=True,
                           timeout=EXIT_TIMEOUT, stdin=subprocess.DEVNULL)
    assert piped.returncode == 0, piped.stderr
    kinds = json.loads(piped.stdout)
    assert [m["name"] for kind in kinds for m in kind["methods"]] == [m["name"] for m in contract["methods"]]
    assert next(kind for kind in kinds if kind["kind"] == "paymentIntent")["methods"] == [
        {"name": m["name"], "summary": m["summary"]} for m in contract["methods"]
        if m["name"].startswith("paymentIntent.")]
