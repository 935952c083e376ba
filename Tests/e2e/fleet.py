"""Helpers for the fleet's end-to-end tests (test_fleet.py, test_fleet_faults.py).

- ``database_url``: a fresh database on the test's cluster (``postgres_cluster``: the one of
  scripts/test-postgres, shared by the whole run), dropped afterwards;
- ``instance``: an stpd of the fleet, with the fleet's state key (a systemd credential, as every
  instance of a fleet must get the same one) and short leases;
- ``Postgres``: stops a cluster (``pg_ctl -m immediate``, a crash as the server sees it) and
  starts it again, for the fault tests, which hold a cluster of their own (``private_cluster``):
  stopping the shared one would fail every other test using it at that moment (xdist);
- ``Load``: threads calling stpd in a loop, each call's start, end and outcome recorded.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import REPO_ROOT
from flows import stpd_for
from rpc import RpcError

CLUSTER = os.environ.get("STPD_TEST_DATABASE_URL")
needs_cluster = pytest.mark.skipif(not CLUSTER, reason="no PostgreSQL test cluster (scripts/test-postgres)")

# The fleet's state key, as the tests give it to every instance (64 hex digits).
STATE_KEY = "5f" * 32
LEASE_SECONDS = 2


def psql(url: str, sql: str) -> str:
    return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], check=True, timeout=60,
                          capture_output=True, text=True).stdout


@pytest.fixture
def database_url(postgres_cluster):
    """A fresh database on the test's cluster, as a URL stpd takes; dropped at teardown."""
    name = "fleet_" + uuid.uuid4().hex[:12]
    psql(postgres_cluster.url, f"CREATE DATABASE {name}")
    parts = urllib.parse.urlsplit(postgres_cluster.url)
    yield urllib.parse.urlunsplit(parts._replace(path="/" + name))
    postgres_cluster.ensure_running()
    psql(postgres_cluster.url, f"DROP DATABASE {name} WITH (FORCE)")


def credentials(directory: Path, key: str = STATE_KEY) -> Path:
    """A credentials directory holding the fleet's state key, as systemd's LoadCredential= makes it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "state-key").write_text(key + "\n")
    return directory


def instance(start_stpd, directory: Path, server, url: str, name: str | None, *args: str,
             env: dict | None = None, wait_ready: bool = True):
    """An instance of the fleet on URL, named NAME (None: the default name)."""
    environment = {"STPD_DATABASE_URL": url, "STPD_LEASE_SECONDS": str(LEASE_SECONDS),
                   "CREDENTIALS_DIRECTORY": str(credentials(directory.parent / "credentials"))}
    if name is not None:
        environment["STPD_INSTANCE"] = name
    return stpd_for(start_stpd, directory, server, *args, env={**environment, **(env or {})}) if wait_ready \
        else start_stpd(directory, "--stripe-api-base", server.base_url, *args,
                        env={**_stripe(server), **environment, **(env or {})}, wait_ready=False)


def pair(start_stpd, tmp_path: Path, server, url: str, env: dict | None = None) -> tuple:
    """Instances "a" and "b" of one fleet."""
    return tuple(instance(start_stpd, tmp_path / name, server, url, name, env=env) for name in "ab")


def _stripe(server) -> dict:
    from flows import stripe_env
    return stripe_env(server)


class Postgres:
    """A cluster of scripts/test-postgres (as its three STPD_TEST_* variables describe it), stopped
    and started as its owner."""

    def __init__(self, variables: dict[str, str] = os.environ):
        self.url = variables.get("STPD_TEST_DATABASE_URL", "")
        self.ctl = shlex.split(variables.get("STPD_TEST_PG_CTL", ""))
        self.options = variables.get("STPD_TEST_PG_OPTIONS", "")

    def stop(self) -> None:
        """As a crash: the server's processes are killed, every connection is cut."""
        subprocess.run(self.ctl + ["-m", "immediate", "-w", "stop"], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        subprocess.run(self.ctl + ["-w", "-o", self.options, "start"], check=True, capture_output=True, timeout=120)

    def ensure_running(self) -> None:
        if self.ctl and subprocess.run(self.ctl + ["status"], capture_output=True, timeout=60).returncode != 0:
            self.start()


def private_cluster(directory: Path):
    """Yields a Postgres of a throwaway cluster of its own: scripts/test-postgres --hold, which
    removes it once this closes its standard input (or this process dies)."""
    directory.mkdir(parents=True, exist_ok=True)
    variables = directory / "cluster.env"
    log = open(directory / "test-postgres.log", "wb")
    holder = subprocess.Popen([str(REPO_ROOT / "scripts" / "test-postgres"), "--hold", str(variables)],
                              stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not variables.exists():
            if holder.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"scripts/test-postgres --hold did not start a cluster (exit {holder.poll()}):\n"
                                     f"{(directory / 'test-postgres.log').read_text(errors='replace')}")
            time.sleep(0.05)
        yield Postgres(dict(line.split("=", 1) for line in variables.read_text().splitlines()))
    finally:
        holder.stdin.close()
        try:
            holder.wait(60)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
            raise AssertionError("scripts/test-postgres --hold did not stop its cluster within 60 s")
        finally:
            log.close()


class Call:
    def __init__(self, daemon, start: float, result: Any = None, error: RpcError | None = None):
        self.daemon, self.start, self.end, self.result, self.error = daemon, start, start, result, error

    @property
    def seconds(self) -> float:
        return self.end - self.start


class Load:
    """WORKERS threads, each with its own connection to one of DAEMONS (round robin), calling
    `work(client, n)` until `stop()` or COUNT calls each; every call is recorded."""

    def __init__(self, daemons: list, work: Callable[[Any, int], Any], workers: int = 8, count: int = 100_000):
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.failures: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(daemons[i % len(daemons)], work, i, count),
                                         daemon=True) for i in range(workers)]
        for thread in self.threads:
            thread.start()

    def _run(self, daemon, work, worker: int, count: int) -> None:
        try:
            client = daemon.client(checker=None, timeout=60)
            for n in range(count):
                if self.stopping.is_set():
                    return
                start = time.monotonic()
                try:
                    call = Call(daemon, start, result=work(client, worker * count + n))
                except RpcError as error:
                    call = Call(daemon, start, error=error)
                call.end = time.monotonic()
                with self.lock:
                    self.calls.append(call)
        except BaseException as failure:  # a hung or broken connection is the test's failure
            with self.lock:
                self.failures.append(failure)

    def stop(self, timeout: float = 60) -> list[Call]:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout)
        assert not any(t.is_alive() for t in self.threads), "a call was never answered"
        assert not self.failures, self.failures
        return self.calls

    def answered(self, since: float) -> int:
        with self.lock:
            return sum(1 for c in self.calls if c.start >= since)

    def succeeded_after(self, since: float, daemon=None) -> bool:
        """Whether a call started after SINCE succeeded (on DAEMON, if given)."""
        with self.lock:
            return any(c.error is None and c.start >= since and daemon in (None, c.daemon) for c in self.calls)


def wait_until(condition: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    """Polls CONDITION until it is truthy (a bounded wait on something stpd does by itself)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(every)


def seen_or_wait(events, type: str, object_id: str | None = None, where: Callable[[dict], bool] | None = None,
                 timeout: float = 30.0) -> dict:
    """The first TYPE event (for OBJECT_ID, passing WHERE) EVENTS read so far, else the next one."""
    for event in events.seen:
        if event["type"] == type and object_id in (None, event["objectId"]) and (where is None or where(event)):
            return event
    return events.wait(type, object_id, where, timeout)
