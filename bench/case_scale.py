"""Restart and scale: start time, RSS, `handle-url` and `redirect.list` at N stored sessions.

For each scale (0 = an empty daemon, then e.g. 100, 10,000, 100,000 started redirect sessions on
sofort Sources) a copy of a populated state directory is started ``restarts`` times; each start
is timed from just before the exec to READY=1 on NOTIFY_SOCKET and to the first answered
daemon.ping. After the last start: RSS, then `handle-url` p50/p99 over sessions spread across the
population (each call completes one session: the copy is thrown away), then the size of one
`redirect.list` reply (the last thing, as it may be huge).

Populating goes through stpd's RPC against a fresh stripe-test-server (16 connections), a scale
starting from the largest smaller one already cached. Populated directories are cached under
``cache_dir`` (by default .build-bench/cache/) keyed on the contents of Sources/StpdStore, so a
storage change repopulates; BENCH_REPOPULATE=1 forces it. The smoke populates afresh each time.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import time
from pathlib import Path

from harness import (REPO_ROOT, BenchError, Daemon, RpcError, StripeServer, log, percentile, remove_tree, rss_bytes,
                     scratch_dir)
from settings import Settings
from workload import create_started_session, run_workers

WORKLOAD_VERSION = "1"  # bump when what a populated directory holds changes


def store_key() -> str:
    """A hash of the storage layer's sources and of this workload: a populated directory is reused
    only while both are the same."""
    digest = hashlib.sha256(WORKLOAD_VERSION.encode())
    for path in sorted((REPO_ROOT / "Sources" / "StpdStore").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(REPO_ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


class Population:
    """A populated state directory (``state``) and its sessions (``sessions.json``)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.state = directory / "state"
        self.meta = directory / "sessions.json"

    def exists(self) -> bool:
        return self.meta.exists() and self.state.is_dir()

    def sessions(self) -> list[dict]:
        return json.loads(self.meta.read_text())


def _copy_state(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True)


def populate(settings: Settings, root: Path, scale: int, smaller: Population | None) -> Population:
    """Creates ``root/sessions-SCALE`` from SMALLER (or empty) by adding sessions through stpd."""
    final = Population(root / f"sessions-{scale}")
    work = Population(root / f"sessions-{scale}.partial")
    remove_tree(work.directory)
    work.directory.mkdir(parents=True)
    sessions = smaller.sessions() if smaller else []
    if smaller:
        _copy_state(smaller.state, work.state)
    scratch = scratch_dir("populate")
    stripe = StripeServer(settings.stripe_server, scratch / "stripe")
    daemon = None
    try:
        daemon = Daemon(settings.stpd, scratch, work.state, stripe_api_base=stripe.base_url).wait_started()
        todo = scale - len(sessions)
        log(f"  populating {scale} sessions: {len(sessions)} cached, {todo} to create "
            f"(16 connections, progress every few seconds)")
        run = run_workers(daemon.socket_path, create_started_session, connections=16, count=todo,
                          first=len(sessions), label=f"populate {scale}")
        if len(run.results) != todo:
            raise BenchError(f"populating {scale}: {len(run.results)} of {todo} created; {run.errors[:3]}")
        sessions += sorted(run.results, key=lambda s: s["order"])
        log(f"  populated {scale} sessions ({len(run.results) / (run.ended - run.started):.0f}/s)")
    finally:
        if daemon:
            daemon.stop()
        stripe.stop()
        remove_tree(scratch)
    work.meta.write_text(json.dumps(sessions))
    remove_tree(final.directory)
    os.rename(work.directory, final.directory)
    return final


def populations(settings: Settings, scales: list[int]) -> tuple[dict[int, Population], Path | None]:
    """A populated directory per scale, from the cache when it holds one. Returns them and the
    temporary root to remove afterwards (None when they live in the cache)."""
    if settings.cache_dir is not None:
        root, temporary = settings.cache_dir / store_key(), None
        if os.environ.get("BENCH_REPOPULATE") == "1":
            remove_tree(root)
    else:
        root = temporary = scratch_dir("populations")
    root.mkdir(parents=True, exist_ok=True)
    found: dict[int, Population] = {}
    previous = None
    for scale in sorted(scales):
        population = Population(root / f"sessions-{scale}")
        if population.exists():
            log(f"  {scale} sessions: cached in {population.directory}")
        else:
            population = populate(settings, root, scale, previous)
        found[scale] = previous = population
    return found, temporary


def measure(settings: Settings, scale: int, population: Population | None) -> dict:
    run_dir = scratch_dir(f"scale{scale}")
    state = run_dir / "state"
    if population:
        _copy_state(population.state, state)
    stripe = StripeServer(settings.stripe_server, run_dir / "stripe")
    result: dict = {"sessions": scale}
    try:
        ready, ping = [], []
        for attempt in range(settings.restarts):
            daemon = Daemon(settings.stpd, run_dir, state, stripe_api_base=stripe.base_url).wait_started()
            ready.append(daemon.ready_s)
            ping.append(daemon.ping_s)
            if attempt < settings.restarts - 1:
                daemon.stop()
        result.update(start_ready_s=statistics.median(ready), start_ping_s=statistics.median(ping),
                      start_ready_all_s=ready, start_ping_all_s=ping, rss_mib=rss_bytes(daemon.pid) / 2**20)
        try:
            with daemon.client() as client:
                if population:
                    result.update(_handle_url(settings, client, population.sessions()))
                started = time.monotonic()
                try:
                    reply = client.call("redirect.list")
                    result.update(list_bytes=client.last_reply_bytes, list_items=len(reply.get("sessions", [])),
                                  list_s=time.monotonic() - started)
                except (RpcError, BenchError, OSError) as error:
                    result.update(list_error=str(error)[:200], list_s=time.monotonic() - started)
        finally:
            daemon.stop()
        log(f"  {scale:6} sessions: READY {result['start_ready_s']:.3f} s, ping {result['start_ping_s']:.3f} s, "
            f"RSS {result['rss_mib']:.0f} MiB, handle-url p50 {result.get('handle_url_p50_us', 0):.0f} us, "
            f"redirect.list {result.get('list_bytes', result.get('list_error'))} bytes")
        return result
    finally:
        stripe.stop()
        remove_tree(run_dir)


def _handle_url(settings: Settings, client, sessions: list[dict]) -> dict:
    """handle-url on sessions spread evenly over the population; latency of each call."""
    count = min(settings.handle_url_samples, len(sessions))
    picked = [sessions[i * len(sessions) // count] for i in range(count)]
    latencies, unhandled = [], 0
    for session in picked:
        url = session.get("returnURL") or "benchshop://return"
        url += ("&" if "?" in url else "?") + f"source={session['source']}"
        started = time.perf_counter_ns()
        reply = client.call("handle-url", {"url": url})
        latencies.append((time.perf_counter_ns() - started) / 1000)
        unhandled += not reply["handled"]
    if unhandled:
        raise BenchError(f"handle-url matched no session for {unhandled} of {count} return URLs")
    return {"handle_url_p50_us": percentile(latencies, 50), "handle_url_p99_us": percentile(latencies, 99),
            "handle_url_samples": count}


def scale(settings: Settings) -> dict:
    scales = sorted(s for s in settings.scales if s > 0)
    found, temporary = populations(settings, scales)
    try:
        results = {"0": measure(settings, 0, None)}
        for n in scales:
            results[str(n)] = measure(settings, n, found[n])
        return results
    finally:
        if temporary:
            remove_tree(temporary)
