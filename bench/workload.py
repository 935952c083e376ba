"""Work the cases share: creating started redirect sessions (sofort Sources) and pending Sources
through stpd, over several connections at once, for a count or for a duration.

A session is what an app makes for a bank redirect: `source.create` (a sofort Source, pending at
stripe-test-server), `redirect.create` on it, `redirect.start`. Its return URL is
``benchshop://return?order=N``; Stripe's return adds its own items (``source=src_...``), which
`handle-url` accepts as extra items.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness import BenchError, Client, RpcError, log

PROGRESS_EVERY = 5.0  # seconds between progress lines


def sofort(order: int) -> dict:
    return {"params": {"sofort": {"amount": 1099, "returnURL": f"benchshop://return?order={order}", "country": "DE"}}}


def create_source(client: Client, order: int) -> dict:
    """A pending sofort Source; returns {"order", "source"}."""
    return {"order": order, "source": client.call("source.create", sofort(order))["source"]["id"]}


def create_started_session(client: Client, order: int) -> dict:
    """A started redirect session; returns {"order", "session", "source", "returnURL"}."""
    source = client.call("source.create", sofort(order))["source"]["id"]
    session = client.call("redirect.create", {"source": {"id": source}})["id"]
    started = client.call("redirect.start", {"session": session})
    return {"order": order, "session": session, "source": source, "returnURL": started.get("returnURL")}


@dataclass
class Run:
    """What ``run_workers`` did: results in completion order, with the monotonic time of each."""

    results: list[dict] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0

    def rate(self, since: float, until: float) -> float:
        """Completions per second between two monotonic times."""
        done = sum(1 for t in self.times if since <= t <= until)
        return done / (until - since) if until > since else 0.0


def run_workers(socket_path: Path, work: Callable[[Client, int], dict], *, connections: int, count: int | None = None,
                duration: float | None = None, first: int = 0, label: str = "",
                max_errors: int = 50, stop: threading.Event | None = None) -> Run:
    """Calls WORK(client, n) for n = FIRST, FIRST+1, ... on CONNECTIONS connections at once (each
    with one call in flight), until COUNT calls are done or DURATION seconds have passed. Prints
    progress every few seconds when LABEL is given. Stops early after MAX_ERRORS failures, or
    when STOP is set (by another thread, say before it kills the daemon: what fails after that
    is not counted as an error)."""
    run = Run()
    lock = threading.Lock()
    next_order = [first]
    end_order = first + count if count is not None else None
    stopped_outside = stop is not None
    stop = stop or threading.Event()

    def worker() -> None:
        try:
            client = Client(socket_path)
        except OSError as error:
            with lock:
                run.errors.append(f"connect: {error}")
            return
        with client:
            while not stop.is_set():
                with lock:
                    order = next_order[0]
                    if end_order is not None and order >= end_order:
                        return
                    next_order[0] += 1
                try:
                    result = work(client, order)
                except (RpcError, OSError, ValueError, BenchError) as error:
                    if stopped_outside and stop.is_set():
                        return
                    with lock:
                        run.errors.append(f"{order}: {error}")
                        if len(run.errors) >= max_errors:
                            stop.set()
                    continue
                with lock:
                    run.results.append(result)
                    run.times.append(time.monotonic())

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(connections)]
    run.started = time.monotonic()
    deadline = run.started + duration if duration is not None else None
    for thread in threads:
        thread.start()
    last_progress = run.started
    while any(thread.is_alive() for thread in threads):
        time.sleep(0.1)
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            stop.set()
        if label and now - last_progress >= PROGRESS_EVERY:
            last_progress = now
            done = len(run.results)
            rate = done / (now - run.started)
            total = f"/{count}" if count is not None else ""
            eta = f", {(count - done) / rate:.0f} s to go" if count is not None and rate > 0 else ""
            log(f"  {label}: {done}{total} in {now - run.started:.0f} s ({rate:.0f}/s{eta})")
    for thread in threads:
        thread.join()
    run.ended = time.monotonic()
    if run.errors and len(run.errors) >= max_errors:
        raise RuntimeError(f"{label or 'workload'}: {len(run.errors)} errors, the first: {run.errors[0]}")
    return run


def call_each(socket_path: Path, method: str, params: list[Any], connections: int = 16) -> Run:
    """One METHOD call per params object, over CONNECTIONS connections."""
    return run_workers(socket_path, lambda client, n: client.call(method, params[n]) or {},
                       connections=connections, count=len(params))
