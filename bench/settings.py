"""How big and how long each case runs: the full suite (`make bench`) and the smoke
(`make bench-smoke`, a few seconds per case at tiny scales, for CI)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

FULL_SCALES = (100, 10_000, 100_000)
SMOKE_SCALES = (20, 50)


@dataclass
class Settings:
    stpd: Path
    stripe_server: Path
    programs: dict[str, Path]  # loadgen, echo, tap
    smoke: bool = False
    # daemon.ping: seconds per run, after a warmup
    ping_connections: tuple[int, ...] = (1, 16, 64)
    ping_seconds: float = 10.0
    ping_warmup: float = 2.0
    # fan-out: emits per subscriber count
    fanout_subscribers: tuple[int, ...] = (100, 1000)
    fanout_events: int = 10
    fanout_rounds: int = 10
    # subscriptions to a type that never occurs, beside 100-event emits (rounds per count)
    idle_subscriptions: tuple[int, ...] = (5, 50_000)
    idle_rounds: int = 20
    # issue 24's attack: MiB of large events, seconds of pinging beside it
    attack_megabytes: int = 96
    attack_seconds: float = 10.0
    attack_uid_connections: int = 1000
    # restart and scale (0 = an empty daemon, always measured)
    scales: tuple[int, ...] = FULL_SCALES
    restarts: int = 3
    handle_url_samples: int = 200
    cache_dir: Path | None = None  # populated state directories, kept between runs
    # restart after load (case_load): sessions made first, then the load, then seconds of more
    # load before the kill -9
    load_reference: int = 100
    load_sessions: int = 100_000
    kill_after: float = 10.0
    # creation
    create_connections: int = 16
    create_seconds: float = 10.0
    create_warmup: float = 2.0
    # polls
    polls: int = 10_000
    polls_start_limit: float = 120.0  # seconds to start them; a poll ends after 300 s, so the window must come soon
    polls_settle: float = 5.0
    polls_seconds: float = 30.0
    paused_settle: float = 3.0
    paused_seconds: float = 10.0
    notes: list[str] = field(default_factory=list)


def scales_from_environment(default: tuple[int, ...]) -> tuple[int, ...]:
    """BENCH_SCALES=100,10000 measures only those scales (e.g. to skip the slow 100,000); the
    largest is also the load of the restart-after-load case."""
    text = os.environ.get("BENCH_SCALES", "").strip()
    if not text:
        return default
    return tuple(sorted({int(part.replace("_", "")) for part in text.split(",") if part.strip()}))


def make_settings(stpd: Path, stripe_server: Path, programs: dict[str, Path], smoke: bool,
                  cache_dir: Path | None) -> Settings:
    if not smoke:
        scales = scales_from_environment(FULL_SCALES)
        return Settings(stpd, stripe_server, programs, scales=scales, load_sessions=max(scales), cache_dir=cache_dir,
                        polls=int(os.environ.get("BENCH_POLLS", "10000")))
    return Settings(
        stpd, stripe_server, programs, smoke=True,
        ping_seconds=0.5, ping_warmup=0.2,
        fanout_subscribers=(10, 50), fanout_rounds=2, idle_subscriptions=(5, 500), idle_rounds=3, attack_megabytes=4, attack_seconds=1.0, attack_uid_connections=50,
        scales=scales_from_environment(SMOKE_SCALES), restarts=1, handle_url_samples=10, cache_dir=None,
        load_reference=10, load_sessions=60, kill_after=1.0,
        create_connections=4, create_seconds=2.0, create_warmup=0.5,
        polls=30, polls_start_limit=20.0, polls_settle=1.0, polls_seconds=3.5, paused_settle=1.0, paused_seconds=1.5,
    )
