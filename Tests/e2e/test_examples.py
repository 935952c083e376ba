"""The Python example (examples/python, on the client package) runs against a live stpd."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO_ROOT, clean_environment

EXAMPLE = REPO_ROOT / "examples" / "python" / "stpd_client.py"


def run_example(*args: str, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, str(EXAMPLE), *args], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    results = {}
    for line in done.stdout.splitlines():
        method, _, payload = line.partition(": ")
        results[method] = json.loads(payload)
    assert list(results) == ["daemon.ping", "daemon.status"], done.stdout
    return results


def test_example_with_socket_argument(start_stpd, tmp_path, checker):
    daemon = start_stpd(tmp_path)
    results = run_example(str(daemon.socket_path), env=clean_environment())
    checker.check_result("daemon.ping", results["daemon.ping"])
    checker.check_result("daemon.status", results["daemon.status"])
    assert results["daemon.ping"]["pong"] is True
    assert results["daemon.status"]["pid"] == daemon.pid
    assert results["daemon.status"]["socketPath"] == str(daemon.socket_path)


def test_example_with_stpd_socket_variable(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path)
    results = run_example(env=clean_environment(STPD_SOCKET=str(daemon.socket_path)))
    assert results["daemon.status"]["pid"] == daemon.pid


def test_example_reports_a_missing_daemon(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "nobody.sock")],
                          env=clean_environment(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "cannot connect" in done.stderr
