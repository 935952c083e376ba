"""Restart after load: 100,000 started redirect sessions made through the RPC, then a restart
straight away, and again after a `kill -9` in the middle of more load. This is the restart users
meet (the scale case starts stpd on a copy of a cached, settled state instead).

On a fresh stpd and stripe-test-server:
1. ``load_reference`` (100) sessions, a restart (SIGTERM, start), and `handle-url` over all of
   them: the reference p50 "at 100 sessions", measured the same way as the rest, in the same run.
2. The load: ``load_sessions`` (100,000) more started sessions on ``create_connections`` (16)
   connections: the creation rate over the whole load and over its last tenth.
3. **after load**: stpd is stopped (SIGTERM) as soon as the last creation is answered, and
   started again: start to READY=1 and to the first answered daemon.ping, the RSS, `handle-url`
   p50 over sessions spread across the population. The size of the write-ahead log each start
   met is recorded beside it (``wal_bytes``), and how long the stop took.
4. **after kill -9**: the load runs again on that state for ``kill_after`` seconds and stpd is
   killed (SIGKILL) with calls in flight. The next start is measured the same way; `handle-url`
   samples include the last sessions whose creation was answered before the kill (each must still
   be there: an answered call survives a crash).

Each start is measured once: the first start after the load is the one that meets its WAL.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from harness import BenchError, Daemon, StripeServer, log, percentile, remove_tree, rss_bytes, scratch_dir
from settings import Settings
from workload import create_started_session, run_workers


def _file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _start(settings: Settings, directory: Path, state: Path, stripe: StripeServer) -> tuple[Daemon, dict]:
    """Starts stpd on STATE; returns it and the start's figures."""
    figures = {"wal_bytes": _file_size(state / "stpd.sqlite-wal"), "db_bytes": _file_size(state / "stpd.sqlite")}
    daemon = Daemon(settings.stpd, directory, state, stripe_api_base=stripe.base_url).wait_started()
    figures.update(start_ready_s=daemon.ready_s, start_ping_s=daemon.ping_s, rss_mib=rss_bytes(daemon.pid) / 2**20)
    return daemon, figures


def _handle_url(daemon: Daemon, sessions: list[dict], samples: int, between: bool = False) -> dict:
    """handle-url on SAMPLES sessions spread over SESSIONS (each call completes one); BETWEEN picks
    the ones halfway between those picked without it, so a second measurement finds them started."""
    count = min(samples, len(sessions))
    picked = [sessions[(2 * i + between) * len(sessions) // (2 * count)] for i in range(count)]
    latencies, unhandled = [], []
    with daemon.client() as client:
        for session in picked:
            url = session["returnURL"] + f"&source={session['source']}"
            started = time.perf_counter_ns()
            reply = client.call("handle-url", {"url": url})
            latencies.append((time.perf_counter_ns() - started) / 1000)
            if not reply["handled"]:
                unhandled.append(session["session"])
    if unhandled:
        raise BenchError(f"handle-url matched no session for {len(unhandled)} of {count} (lost?): {unhandled[:3]}")
    return {"handle_url_p50_us": percentile(latencies, 50), "handle_url_p99_us": percentile(latencies, 99),
            "handle_url_samples": count}


def _load(daemon: Daemon, settings: Settings, count: int | None, first: int, label: str,
          stop: threading.Event | None = None):
    return run_workers(daemon.socket_path, create_started_session, connections=settings.create_connections,
                       count=count, first=first, label=label, stop=stop)


def _log(what: str, figures: dict) -> None:
    log(f"  {what}: WAL {figures['wal_bytes'] / 2**20:.1f} MiB, READY {figures['start_ready_s']:.3f} s, "
        f"ping {figures['start_ping_s']:.3f} s, RSS {figures['rss_mib']:.0f} MiB, "
        f"handle-url p50 {figures.get('handle_url_p50_us', 0):.0f} us")


def load(settings: Settings) -> dict:
    directory = scratch_dir("load")
    state = directory / "state"
    stripe = StripeServer(settings.stripe_server, directory / "stripe")
    daemon: Daemon | None = None
    result: dict = {}
    try:
        daemon, result["empty"] = _start(settings, directory, state, stripe)
        reference = _load(daemon, settings, settings.load_reference, 0, "").results
        daemon.stop()
        daemon, result["reference"] = _start(settings, directory, state, stripe)
        result["reference"].update(_handle_url(daemon, reference, settings.handle_url_samples),
                                   sessions=len(reference))
        _log(f"{len(reference)} sessions", result["reference"])

        first = settings.load_reference
        run = _load(daemon, settings, settings.load_sessions, first, f"load {settings.load_sessions}")
        if len(run.results) != settings.load_sessions:
            raise BenchError(f"load: {len(run.results)} of {settings.load_sessions} created; {run.errors[:3]}")
        tenth = run.times[len(run.times) * 9 // 10]
        loaded = sorted(run.results, key=lambda s: s["order"])
        stop_started = time.monotonic()
        daemon.stop()
        after = {"sessions": len(loaded), "stop_s": time.monotonic() - stop_started,
                 "sessions_per_s": len(loaded) / (run.ended - run.started),
                 "last_tenth_per_s": run.rate(tenth, run.ended)}
        daemon, figures = _start(settings, directory, state, stripe)
        after.update(figures)
        after.update(_handle_url(daemon, loaded, settings.handle_url_samples))
        result["after_load"] = after
        log(f"  load: {after['sessions_per_s']:.0f} started sessions/s ({after['last_tenth_per_s']:.0f}/s over "
            f"the last tenth), stop {after['stop_s']:.2f} s")
        _log("after load", after)

        stop = threading.Event()
        victim = daemon
        killer = threading.Timer(settings.kill_after, lambda: (stop.set(), victim.kill()))
        killer.start()
        more = _load(daemon, settings, None, first + len(loaded), "", stop=stop)
        killer.join()
        answered = sorted(more.results, key=lambda s: s["order"])
        daemon, figures = _start(settings, directory, state, stripe)
        # Spread over the whole population, and the last answered ones besides.
        recent = answered[-max(1, settings.handle_url_samples // 10):]
        spread = _handle_url(daemon, loaded, settings.handle_url_samples, between=True)
        last = _handle_url(daemon, recent, len(recent))
        killed = {**figures, **spread, "sessions": len(loaded) + len(answered), "killed_during": len(answered),
                  "last_answered_checked": last["handle_url_samples"]}
        result["after_kill"] = killed
        _log(f"after kill -9 ({len(answered)} sessions into more load)", killed)
        return result
    finally:
        if daemon and daemon.proc.poll() is None:
            daemon.stop()
        stripe.stop()
        remove_tree(directory)
