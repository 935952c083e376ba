"""`daemon.metrics` and `stpctl metrics` against the real daemon: the counters move with the calls
made, the gauges follow what is open, label values stay within the declared sets, and every
Stripe call is in the log with its fields and without a secret."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import stpd
from conftest import clean_environment
from flows import create_source, sofort, stpd_for

SAMPLE = re.compile(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$')


def parse(text: str) -> dict[tuple[str, frozenset], float]:
    """{(name, labels): value} of every sample line; # lines checked for form only."""
    samples = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (TYPE|HELP) [a-z_]+ ", line), line
            continue
        match = SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        name, labels, value = match.groups()
        pairs = frozenset(re.findall(r'([a-z_]+)="([^"]*)"', labels or ""))
        samples[(name, pairs)] = float(value)
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def daemon(start_stpd, tmp_path: Path, stripe_test_server):
    return stpd_for(start_stpd, tmp_path / "stpd", stripe_test_server, "--debug-methods")


def metrics(client: stpd.Client) -> dict:
    result = client.call("daemon.metrics")
    assert result["contentType"] == "text/plain; version=0.0.4"
    return parse(result["text"])


def test_counters_move_with_the_calls_made(daemon, stripe_test_server):
    with daemon.client() as client:
        before = metrics(client)
        for _ in range(3):
            client.call("daemon.ping")
        with pytest.raises(stpd.errors.InvalidParams):
            client.call("source.get", {"id": "not-a-source-id"})
        with pytest.raises(stpd.errors.MethodNotFound):
            client.call("no.such.method")
        client.call("debug.emit", {"count": 4})
        source, _ = create_source(client, sofort("myshop://metrics"))
        client.call("redirect.create", {"source": {"id": source["id"]}})
        subscription = client.call("events.subscribe", {})
        after = metrics(client)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("stpd_requests_total", method="daemon.ping", outcome="ok") == 3
    assert moved("stpd_requests_total", method="source.get", outcome="-32602") == 1
    assert moved("stpd_requests_total", method="(unknown)", outcome="-32601") == 1
    assert moved("stpd_requests_total", method="daemon.metrics", outcome="ok") == 1  # the first one
    assert moved("stpd_request_duration_seconds_count", method="daemon.ping") == 3
    # debug.emit's 4, source.create's and redirect.create's at least.
    assert moved("stpd_events_appended_total") >= 6
    assert moved("stpd_stripe_requests_total", endpoint="POST /v1/sources", status="200", attempt="1") == 1
    assert value(after, "stpd_stripe_request_duration_seconds_count", endpoint="POST /v1/sources") == 1
    assert value(after, "stpd_connections") == 1
    assert value(after, "stpd_subscribers") == 1, subscription
    assert value(after, "stpd_redirect_sessions", status="notStarted") == 1
    assert value(after, "stpd_redirect_sessions", status="inProgress") == 0
    assert value(after, "stpd_polls_running") == 0
    assert value(after, "stpd_store_size_bytes") > 0
    assert ("stpd_subscribers_dropped_total", frozenset({("reason", "slow-consumer")})) in after

    # Label values come from fixed sets, never from what a client sent.
    methods = {dict(labels).get("method") for (name, labels) in after if name == "stpd_requests_total"}
    assert "no.such.method" not in methods and "(unknown)" in methods

    log = daemon.log()
    line = next(l for l in log.splitlines() if "Stripe POST /v1/sources" in l)
    for field in ("method=POST", "path=/v1/sources", "status=200", "request_id=", "latency_ms=", "attempt=1",
                  "idempotency_key="):
        assert field in line, (field, line)
    for secret in (stripe_test_server.publishable_key, stripe_test_server.secret_key, "_secret_"):
        assert secret not in log


def test_stpctl_metrics_prints_the_text(daemon, bin_dir: Path):
    argv = [str(bin_dir / "stpctl"), "--socket", str(daemon.socket_path)]
    run = lambda *args: subprocess.run([*argv, *args], env=clean_environment(), capture_output=True, text=True,
                                       timeout=30, stdin=subprocess.DEVNULL)
    run("ping")
    first = run("metrics")
    assert first.returncode == 0 and first.stderr == "", first
    run("ping")
    second = run("metrics")
    # Not JSON even with stdout a pipe: the text as the daemon sent it, for the textfile collector.
    assert second.stdout.startswith("# TYPE ") and second.stdout.endswith("\n")
    pings = lambda text: value(parse(text), "stpd_requests_total", method="daemon.ping", outcome="ok")
    assert pings(second.stdout) == pings(first.stdout) + 1
