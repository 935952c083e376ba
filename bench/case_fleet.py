"""The fleet on PostgreSQL beside SQLite (docs/fleet.md, "Figures").

Needs the throwaway cluster of scripts/test-postgres (STPD_TEST_DATABASE_URL, STPD_TEST_PG_CTL):
`make bench` runs the suite beside one with durable commits (STPD_TEST_PG_DURABLE=1: fsync on, as
PostgreSQL is shipped); `make bench-smoke` beside one without. Each run of instances gets a
database of its own. Figures:

- creation: started sessions per second (as the ``create`` case) on SQLite, and on PostgreSQL
  with 1, 2 and 4 instances (the connections split between them); for each, stpd's CPU per
  session (all instances together; the whole run, warmup included) and, on PostgreSQL, the
  server's CPU per session, the statements per session and the round trips per commit (as
  pg_stat_statements counts them: statements that write the objects, events and counter, or
  begin and end a transaction, over the instances' commits), and the mean time a commit held
  the event counter's row lock (from the instances' ``daemon.metrics``, measured by the server);
- handle-url: p50 and p99 on SQLite, on one PostgreSQL instance, and on B for sessions A started;
- propagation: from the reply to a commit on A (debug.emit) to the event reaching a subscriber on
  B, p50 and p99;
- takeover: from `kill -9` of A, which runs polls, until B holds every one of their leases, with
  the default lease (10 s; 2 s in the smoke);
- recovery: PostgreSQL stopped (`pg_ctl -m immediate`) for 5 s and started again: how long a call
  made meanwhile took to answer 1010, and from its start until each instance answers a call that
  reads the database.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

from harness import Client, Daemon, RpcError, StripeServer, cpu_seconds, log, percentile, remove_tree, scratch_dir
from settings import Settings
from workload import create_source, create_started_session, run_workers

STATE_KEY = "5f" * 32


class Cluster:
    """The scripts/test-postgres cluster: databases made and dropped, the server stopped and started."""

    def __init__(self):
        self.url = os.environ["STPD_TEST_DATABASE_URL"]
        self.ctl = shlex.split(os.environ["STPD_TEST_PG_CTL"])
        self.options = os.environ["STPD_TEST_PG_OPTIONS"]

    def sql(self, statement: str, url: str | None = None) -> str:
        return subprocess.run(["psql", url or self.url, "-qAtc", statement], check=True, capture_output=True,
                              text=True, timeout=60).stdout

    def durable(self) -> bool:
        return self.sql("SHOW fsync").strip() == "on" and self.sql("SHOW synchronous_commit").strip() == "on"

    def cpu_seconds(self) -> float:
        """CPU of the server and every process it started (backends, WAL writer, checkpointer)
        so far; a backend that exited since is no longer counted (the instances' pools keep theirs)."""
        data = self.ctl[self.ctl.index("-D") + 1]
        postmaster = int(Path(data, "postmaster.pid").read_text().split()[0])
        total = cpu_seconds(postmaster)
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    if int(fields[1]) == postmaster:
                        total += cpu_seconds(int(entry.name))
                except (OSError, ValueError):
                    pass  # gone meanwhile
        return total

    def database(self) -> str:
        name = "bench_" + uuid.uuid4().hex[:12]
        self.sql(f"CREATE DATABASE {name}")
        return urllib.parse.urlunsplit(urllib.parse.urlsplit(self.url)._replace(path="/" + name))

    def drop(self, url: str) -> None:
        self.sql(f"DROP DATABASE {urllib.parse.urlsplit(url).path[1:]} WITH (FORCE)")

    def stop(self) -> None:
        subprocess.run(self.ctl + ["-m", "immediate", "-w", "stop"], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        subprocess.run(self.ctl + ["-w", "-o", self.options, "start"], check=True, capture_output=True, timeout=120)


def instance(settings: Settings, directory: Path, stripe: StripeServer, url: str, name: str, *args: str,
             lease: int = 10) -> Daemon:
    credentials = directory.parent / "credentials"
    credentials.mkdir(parents=True, exist_ok=True)
    (credentials / "state-key").write_text(STATE_KEY)
    return Daemon(settings.stpd, directory, directory / "state", *args, stripe_api_base=stripe.base_url,
                  env={"STPD_DATABASE_URL": url, "STPD_INSTANCE": name, "STPD_LEASE_SECONDS": str(lease),
                       "CREDENTIALS_DIRECTORY": str(credentials)}).wait_started()


def creation(settings: Settings, daemons: list[Daemon]) -> tuple[float, int]:
    """Started sessions per second over the measured window, the connections split between
    DAEMONS; and the sessions made in the whole run (warmup included)."""
    runs: list = []
    per = max(1, settings.create_connections // len(daemons))

    def work(daemon: Daemon, first: int) -> None:
        runs.append(run_workers(daemon.socket_path, create_started_session, connections=per, first=first,
                                duration=settings.create_warmup + settings.create_seconds, label=f"create {first}"))
    threads = [threading.Thread(target=work, args=(d, i * 1_000_000)) for i, d in enumerate(daemons)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return (sum(run.rate(run.started + settings.create_warmup, run.started + settings.create_warmup
                         + settings.create_seconds) for run in runs),
            sum(len(run.results) for run in runs))


def metric(daemon: Daemon, name: str) -> float:
    """A value of DAEMON's daemon.metrics (0 if absent)."""
    for line in daemon.client().call("daemon.metrics")["text"].splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


# What a commit sends: pg_stat_statements's text of each, lowercased. Anything of these beyond one
# statement per commit (a commit's own writes, as before issue 31) counts against it; reads'
# BEGIN and COMMIT do not (nor does the retention's pruning, which writes neither).
COMMIT_STATEMENTS = ("call stpd_apply", "select pg_notify", "insert into object", "update object",
                     "delete from object", "insert into event ", "update event_counter")


def measured_creation(settings: Settings, cluster: Cluster, daemons: list[Daemon], url: str | None) -> dict:
    """creation() with what it cost: stpd's CPU (all DAEMONS), and on PostgreSQL (URL) the
    server's CPU, its statements and the counter lock's hold."""
    def stpd_cpu() -> float:
        return sum(cpu_seconds(d.pid) for d in daemons)
    if url:
        cluster.sql("SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database "
                    "WHERE datname = current_database()), 0)", url)
        commits_before = sum(metric(d, "stpd_database_commits") for d in daemons)
        held_before = sum(metric(d, "stpd_event_counter_held_seconds") for d in daemons)
        server_before = cluster.cpu_seconds()
    before = stpd_cpu()
    rate, sessions = creation(settings, daemons)
    figures: dict = {"sessions_per_s": rate, "sessions": sessions, "instances": len(daemons),
                     "stpd_cpu_per_session_ms": (stpd_cpu() - before) / max(1, sessions) * 1e3}
    if url:
        figures["server_cpu_per_session_ms"] = (cluster.cpu_seconds() - server_before) / max(1, sessions) * 1e3
        commits = sum(metric(d, "stpd_database_commits") for d in daemons) - commits_before
        held = sum(metric(d, "stpd_event_counter_held_seconds") for d in daemons) - held_before
        rows = cluster.sql("SELECT calls || '|' || lower(regexp_replace(query, '\\s+', ' ', 'g')) "
                           "FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database "
                           "WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'", url)
        statements = [(int(calls), text) for calls, text in (line.split("|", 1) for line in rows.splitlines() if line)]
        writing = sum(calls for calls, text in statements if text.startswith(COMMIT_STATEMENTS))
        figures.update(statements_per_session=sum(calls for calls, _ in statements) / max(1, sessions),
                       commits_per_session=commits / max(1, sessions),
                       round_trips_per_commit=writing / max(1, commits),
                       counter_hold_us=held / max(1, commits) * 1e6)
    return figures


def handle_url(settings: Settings, starter: Daemon, handler: Daemon) -> dict:
    """handle-url latency on HANDLER for sessions STARTER started."""
    run = run_workers(starter.socket_path, create_started_session, connections=8,
                      count=settings.handle_url_samples, first=5_000_000, label="sessions")
    client = handler.client()
    latencies = []
    for made in run.results:
        url = made.get("returnURL") or "benchshop://return"
        url += ("&" if "?" in url else "?") + f"source={made['source']}"
        started = time.perf_counter()
        if not client.call("handle-url", {"url": url})["handled"]:
            raise RuntimeError(f"handle-url matched no session for {url}")
        latencies.append(time.perf_counter() - started)
    return {"p50_us": percentile(latencies, 50) * 1e6, "p99_us": percentile(latencies, 99) * 1e6,
            "samples": len(latencies)}


def propagation(settings: Settings, a: Daemon, b: Daemon) -> dict:
    """From the reply to a commit on A to its event on a subscriber of B."""
    arrived: dict[int, float] = {}
    subscriber = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    subscriber.connect(str(b.socket_path))
    subscriber.sendall(b'{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":'
                       b'{"filter":{"types":["debug.*"]}}}\n')
    stop = threading.Event()

    def read() -> None:
        buffer = b""
        while not stop.is_set():
            if not select.select([subscriber], [], [], 0.1)[0]:
                continue
            chunk = subscriber.recv(1 << 16)
            if not chunk:
                return
            now = time.perf_counter()
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                if message.get("method") == "event":
                    arrived[message["params"]["seq"]] = now
    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.3)
    client = a.client()
    acknowledged: dict[int, float] = {}
    for _ in range(settings.handle_url_samples):
        seq = client.call("debug.emit", {"count": 1})["firstSeq"]
        acknowledged[seq] = time.perf_counter()
        time.sleep(0.01)
    deadline = time.monotonic() + 30
    while len(set(acknowledged) & set(arrived)) < len(acknowledged) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    reader.join()
    subscriber.close()
    delays = [max(0.0, arrived[seq] - at) for seq, at in acknowledged.items() if seq in arrived]
    return {"p50_ms": percentile(delays, 50) * 1e3, "p99_ms": percentile(delays, 99) * 1e3,
            "samples": len(delays), "lost": len(acknowledged) - len(delays)}


def takeover(settings: Settings, directory: Path, stripe: StripeServer, url: str) -> dict:
    """kill -9 of the instance running polls, until the other holds all their leases (the smoke
    runs with 2 s leases, the least there is, to be quick)."""
    lease = 2 if settings.smoke else 10
    a = instance(settings, directory / "ta", stripe, url, "ta", lease=lease)
    b = instance(settings, directory / "tb", stripe, url, "tb", lease=lease)
    try:
        polls = 4 if settings.smoke else 20
        client = a.client()
        for n in range(polls):
            sid = create_source(client, 9_000_000 + n)["source"]
            client.call("source.poll", {"id": sid, "timeout": 300})
        watcher = b.client()

        def leases(daemon_client: Client) -> int:
            return sum(1 for name in daemon_client.call("daemon.status")["fleet"]["leases"] if name.startswith("poll:"))
        while leases(client) < polls:
            time.sleep(0.05)
        killed = time.monotonic()
        os.killpg(a.pid, signal.SIGKILL)
        a.proc.wait()
        while leases(watcher) < polls:
            if time.monotonic() - killed > 120:
                raise RuntimeError("B did not take the polls over within 120 s")
            time.sleep(0.05)
        return {"seconds": time.monotonic() - killed, "polls": polls, "lease_s": lease}
    finally:
        for daemon in (a, b):
            if daemon.proc.poll() is None:
                daemon.stop()


def recovery(cluster: Cluster, daemons: list[Daemon], outage: float = 5.0) -> dict:
    """PostgreSQL down OUTAGE seconds: how long a call made meanwhile took to be answered (1010),
    and from PostgreSQL's start until each instance serves a read again."""
    clients = [d.client() for d in daemons]
    cluster.stop()
    stopped = time.monotonic()
    try:
        try:
            clients[0].call("source.list", {})
        except RpcError:
            pass
        answered = time.monotonic() - stopped
        time.sleep(max(0.0, outage - (time.monotonic() - stopped)))
    finally:
        cluster.start()
    back = time.monotonic()
    serving = []
    for client in clients:
        while True:
            try:
                client.call("source.list", {})
                break
            except RpcError:
                if time.monotonic() - back > 120:
                    raise RuntimeError("an instance did not serve again within 120 s")
                time.sleep(0.02)
        serving.append(time.monotonic() - back)
    return {"serving_again_s": max(serving), "down_answer_s": answered, "outage_s": back - stopped}


def fleet(settings: Settings) -> dict:
    if not os.environ.get("STPD_TEST_PG_CTL"):
        settings.notes.append("fleet: skipped (no PostgreSQL: run the suite under scripts/test-postgres)")
        return {}
    cluster = Cluster()
    directory = scratch_dir("fleet")
    stripe = StripeServer(settings.stripe_server, directory / "stripe")
    running: list[Daemon] = []
    urls: list[str] = []
    result: dict = {}
    try:
        result["durable_commits"] = cluster.durable()
        for key, count in (("sqlite", 0), ("postgres_1", 1), ("postgres_2", 2), ("postgres_4", 4)):
            url = None
            if count == 0:
                daemons = [Daemon(settings.stpd, directory / key, directory / key / "state",
                                  stripe_api_base=stripe.base_url).wait_started()]
            else:
                url = cluster.database()
                urls.append(url)
                cluster.sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", url)
                daemons = [instance(settings, directory / f"{key}_{n}", stripe, url, f"{key}_{n}", "--debug-methods")
                           for n in range(count)]
            running += daemons
            result[key] = measured_creation(settings, cluster, daemons, url)
            log(f"  {key}: {result[key]['sessions_per_s']:.0f} sessions/s, "
                f"{result[key]['stpd_cpu_per_session_ms']:.2f} ms of stpd CPU each")
            if count == 2:
                a, b = daemons
                result[key]["handle_url"] = handle_url(settings, a, b)
                result["propagation"] = propagation(settings, a, b)
                result["recovery"] = recovery(cluster, [a, b])
                log(f"  serving again {result['recovery']['serving_again_s']:.2f} s after PostgreSQL started")
            elif count < 2:
                result[key]["handle_url"] = handle_url(settings, daemons[0], daemons[0])
            for daemon in daemons:
                daemon.stop()
                running.remove(daemon)
        urls.append(cluster.database())
        result["takeover"] = takeover(settings, directory, stripe, urls[-1])
        log(f"  takeover after kill -9: {result['takeover']['seconds']:.1f} s")
        return result
    finally:
        for daemon in running:
            if daemon.proc.poll() is None:
                daemon.stop()
        stripe.stop()
        for url in urls:
            try:
                cluster.drop(url)
            except subprocess.SubprocessError:
                pass
        remove_tree(directory)
