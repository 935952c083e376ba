"""Work against stripe-test-server: the creation rate, and poll scheduling at 10,000 polls.

- ``create``: `source.create` + `redirect.create` + `redirect.start` in a loop on 16
  connections (each one call in flight) against a fresh stpd and stripe-test-server; started
  sessions per second after a warmup.
- ``polls``: N pending sofort Sources, each with a running `source.poll` (timeout 300 s, the
  SDK's schedule: a request every 1.5 s). Polls are started on 16 connections for at most
  ``polls_start_limit`` seconds: a daemon that cannot keep up starts fewer (``started``, and
  ``polls_seen`` counts those that sent a request in the window), and the window still comes
  before the first polls reach their 300 s timeout. stpd reaches stripe-test-server through tap.c, which
  notes when each `GET /v1/sources/ID` passes, so every poll's intervals are known without any
  change to stpd or the server. Over a window: stpd's CPU (cores = CPU seconds / wall seconds,
  from /proc), requests per second, and the spread of the intervals around 1.5 s. Then
  `app.background` pauses every poll, and a second window measures the idle CPU and counts the
  requests that still went out (none expected).
"""

from __future__ import annotations

import time
from collections import defaultdict

from harness import Daemon, StripeServer, Tap, cpu_seconds, log, percentile, remove_tree, scratch_dir
from settings import Settings
from workload import create_source, create_started_session, run_workers

POLL_INTERVAL = 1.5
# The case's one uid runs every poll: the per-uid budget (200 polls, 10 requests/s by default)
# is raised to what 10,000 polls on the SDK's schedule need.
POLL_BUDGET = {"STPD_MAX_POLLS_PER_UID": "100000", "STPD_POLL_REQUESTS_PER_SECOND_PER_UID": "10000"}


def create(settings: Settings) -> dict:
    directory = scratch_dir("create")
    stripe = StripeServer(settings.stripe_server, directory / "stripe")
    daemon = None
    try:
        daemon = Daemon(settings.stpd, directory, directory / "state", stripe_api_base=stripe.base_url).wait_started()
        cpu_before = cpu_seconds(daemon.pid)
        run = run_workers(daemon.socket_path, create_started_session, connections=settings.create_connections,
                          duration=settings.create_warmup + settings.create_seconds, label="create")
        cpu = cpu_seconds(daemon.pid) - cpu_before
        since = run.started + settings.create_warmup
        rate = run.rate(since, since + settings.create_seconds)
        if not run.results:
            raise RuntimeError(f"no session was created: {run.errors[:3]}")
        # CPU time per session is the figure that holds on a shared machine (the rate does not).
        per_session = cpu / len(run.results) * 1000
        log(f"  creation: {rate:.0f} started sessions/s over {settings.create_connections} connections "
            f"({len(run.errors)} errors); stpd {per_session:.2f} ms of CPU per session")
        return {"sessions_per_s": rate, "connections": settings.create_connections, "sessions": len(run.results),
                "errors": len(run.errors), "stpd_cores": cpu / (run.ended - run.started),
                "stpd_ms_per_session": per_session}
    finally:
        if daemon:
            daemon.stop()
        stripe.stop()
        remove_tree(directory)


def _window_cpu(pids: dict[str, int], seconds: float) -> tuple[dict[str, float], int, int]:
    """Sleeps SECONDS; returns each process's cores over it and the window in monotonic ns."""
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    start = time.monotonic_ns()
    time.sleep(seconds)
    end = time.monotonic_ns()
    wall = (end - start) / 1e9
    return {name: (cpu_seconds(pid) - before[name]) / wall for name, pid in pids.items()}, start, end


def _intervals(requests: list[tuple[int, str]], start: int, end: int) -> tuple[list[float], int, int]:
    """Seconds between a Source's consecutive requests within [start, end]; also the requests
    and the Sources seen in the window."""
    by_source: dict[str, list[int]] = defaultdict(list)
    count = 0
    for at, source in requests:
        if start <= at <= end:
            by_source[source].append(at)
            count += 1
    intervals = []
    for times in by_source.values():
        times.sort()
        intervals += [(b - a) / 1e9 for a, b in zip(times, times[1:])]
    return intervals, count, len(by_source)


def polls(settings: Settings) -> dict:
    directory = scratch_dir("polls")
    stripe = StripeServer(settings.stripe_server, directory / "stripe")
    tap = Tap(settings.programs["tap"], stripe.port, directory / "tap.log")
    daemon = None
    try:
        daemon = Daemon(settings.stpd, directory, directory / "state", stripe_api_base=tap.base_url,
                        env=POLL_BUDGET).wait_started()
        created = run_workers(daemon.socket_path, create_source, connections=16, count=settings.polls,
                              label="polls: creating sources")
        sources = [r["source"] for r in created.results]
        if len(sources) != settings.polls:
            raise RuntimeError(f"{len(sources)} of {settings.polls} sources created: {created.errors[:3]}")
        started = run_workers(daemon.socket_path, lambda client, n: client.call(
            "source.poll", {"id": sources[n], "timeout": 300}), connections=16, count=len(sources),
            duration=settings.polls_start_limit, label="polls: starting")
        if not started.results:
            raise RuntimeError(f"no poll started: {started.errors[:3]}")
        log(f"  polls: {len(started.results)} of {len(sources)} started in {started.ended - started.started:.0f} s; "
            f"settling {settings.polls_settle:.0f} s, then measuring {settings.polls_seconds:.0f} s")
        time.sleep(settings.polls_settle)
        pids = {"stpd": daemon.pid, "stripe": stripe.proc.pid}
        running_cpu, start, end = _window_cpu(pids, settings.polls_seconds)
        with daemon.client() as client:
            paused = len(client.call("app.background")["polls"])
        time.sleep(settings.paused_settle)
        paused_cpu, pause_start, pause_end = _window_cpu(pids, settings.paused_seconds)
        requests = tap.requests()
        intervals, count, seen = _intervals(requests, start, end)
        _, paused_requests, _ = _intervals(requests, pause_start, pause_end)
        if not intervals:
            raise RuntimeError(f"no poll interval observed ({count} requests in the window)")
        deviations = [abs(i - POLL_INTERVAL) for i in intervals]
        within = sum(d <= 0.1 * POLL_INTERVAL for d in deviations) / len(deviations)
        requests_per_s = count / ((end - start) / 1e9)
        result = {
            "polls": len(sources),
            "started": len(started.results),
            "start_s": started.ended - started.started,
            "running": {
                "stpd_cores": running_cpu["stpd"], "stripe_server_cores": running_cpu["stripe"],
                "requests_per_s": requests_per_s, "polls_seen": seen,
                "stpd_us_per_request": running_cpu["stpd"] / requests_per_s * 1e6 if requests_per_s else None, "intervals": len(intervals),
                "interval_p1_s": percentile(intervals, 1), "interval_p50_s": percentile(intervals, 50),
                "interval_p99_s": percentile(intervals, 99), "interval_max_s": max(intervals),
                "deviation_p99_ms": percentile(deviations, 99) * 1000, "within_10pct": within},
            "paused": {"polls": paused, "stpd_cores": paused_cpu["stpd"], "requests": paused_requests},
        }
        r = result["running"]
        log(f"  polls running: stpd {r['stpd_cores']:.2f} cores, {r['requests_per_s']:.0f} requests/s "
            f"({r['stpd_us_per_request'] or 0:.0f} us of stpd CPU each), interval "
            f"p50 {r['interval_p50_s']:.3f} s, p99 {r['interval_p99_s']:.3f} s, {within:.1%} within 10%")
        log(f"  polls paused ({paused}): stpd {paused_cpu['stpd']:.4f} cores, {paused_requests} requests")
        return result
    finally:
        if daemon:
            daemon.stop()
        tap.stop()
        stripe.stop()
        remove_tree(directory)
