"""daemon.ping against its peers, and event fan-out: the transport's cases.

- ``ping``: loadgen's closed loop (each connection one request in flight) at 1, 16 and 64
  connections against the C line echo (the limit), the Python asyncio peer and stpd. The three
  servers run side by side and each connection count measures them back to back, so a noisy
  machine disturbs their ratios less than their absolute figures. Also records the CPU the
  server used (cores = CPU seconds / wall seconds) and the requests answered per CPU second of
  the server, which other processes' load disturbs far less than requests per wall second.
- ``attack``: issue 24's byte attack (below): stpd's peak RSS, and another client's ping p99.
- ``fanout``: N subscribers (`events.subscribe`, types `debug.test`) and one `debug.emit
  {count: 10}` per round; a sample is the time from the emit request to a subscriber's 10th
  event. stpd runs with --debug-methods.
- ``idle_subscriptions``: issue 32.2, 5 and then 50,000 subscriptions to a type that never occurs
  (over 10 connections) and the time of `debug.emit {count: 100}` beside them: the bus files
  subscriptions by type and object, so the many should cost about what the few do.
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import threading
import time

from harness import Daemon, LineServer, cpu_seconds, log, python_executable, remove_tree, rss_bytes, scratch_dir
from settings import Settings

PING = '{"jsonrpc":"2.0","id":1,"method":"daemon.ping"}'


def loadgen(settings: Settings, *args: str, timeout: float) -> dict:
    done = subprocess.run([str(settings.programs["loadgen"]), *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"loadgen {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


def ping(settings: Settings) -> dict:
    directory = scratch_dir("ping")
    servers: dict[str, object] = {}
    try:
        servers["echo"] = LineServer([str(settings.programs["echo"])], directory / "echo.sock", "echo")
        servers["peer"] = LineServer([python_executable(), str(settings.programs["peer.py"])],
                                     directory / "peer.sock", "peer.py")
        daemon = Daemon(settings.stpd, directory / "stpd", directory / "stpd" / "state").wait_started()
        servers["stpd"] = daemon
        sockets = {"echo": directory / "echo.sock", "peer": directory / "peer.sock", "stpd": daemon.socket_path}
        results: dict[str, dict] = {name: {} for name in servers}
        for connections in settings.ping_connections:
            for name, server in servers.items():
                before = cpu_seconds(server.pid)
                figures = loadgen(settings, "ping", str(sockets[name]), "-c", str(connections),
                                  "-d", str(settings.ping_seconds), "-w", str(settings.ping_warmup),
                                  "-r", PING, "-e", "ping" if name == "echo" else '"result"',
                                  timeout=settings.ping_seconds + settings.ping_warmup + 60)
                cores = (cpu_seconds(server.pid) - before) / (settings.ping_seconds + settings.ping_warmup)
                latency = figures["latency_us"]
                results[name][str(connections)] = {
                    "rps": figures["rps"], "p50_us": latency["p50"], "p99_us": latency["p99"],
                    "p999_us": latency["p999"], "requests": figures["requests"], "errors": figures["errors"],
                    "server_cores": round(cores, 3), "requests_per_cpu_s": figures["rps"] / cores if cores else 0}
                log(f"  ping {name:4} {connections:3} connections: {figures['rps']:9.0f} rps, "
                    f"p50 {latency['p50']:7.1f} us, p99 {latency['p99']:8.1f} us, errors {figures['errors']}")
                if figures["errors"] or figures["closed"]:
                    raise RuntimeError(f"{name}: {figures['errors']} bad replies, {figures['closed']} closed")
        return results
    finally:
        for server in servers.values():
            server.stop()
        remove_tree(directory)


def fanout(settings: Settings) -> dict:
    directory = scratch_dir("fanout")
    daemon = Daemon(settings.stpd, directory, directory / "state", "--debug-methods").wait_started()
    results = {}
    try:
        for subscribers in settings.fanout_subscribers:
            figures = loadgen(settings, "fanout", str(daemon.socket_path), "-n", str(subscribers),
                              "-k", str(settings.fanout_events), "-R", str(settings.fanout_rounds),
                              timeout=120 + 60 * settings.fanout_rounds)
            last, first = figures["last_event_us"], figures["first_event_us"]
            results[str(subscribers)] = {
                "p50_ms": last["p50"] / 1000, "p99_ms": last["p99"] / 1000, "max_ms": last["max"] / 1000,
                "first_event_p50_ms": first["p50"] / 1000, "emit_reply_p50_ms": figures["emit_reply_us"]["p50"] / 1000,
                "samples": last["count"], "incomplete": figures["incomplete"]}
            log(f"  fan-out {subscribers:5} subscribers: 10th event p50 {last['p50'] / 1000:8.2f} ms, "
                f"p99 {last['p99'] / 1000:8.2f} ms ({last['count']} samples)")
        return results
    finally:
        daemon.stop()
        remove_tree(directory)


def attack(settings: Settings) -> dict:
    """Issue 24's attack: 4 connections pipeline 8 `events.wait {since: 0, limit: 1000}` each over
    a log of ~60 KB events and never read, while another client pings on its own connection
    (loadgen, one request in flight). Figures: stpd's peak RSS and that client's ping latency.
    Then issue 32.4's: the same from `attack_uid_connections` connections of one uid (2 each),
    bounded together by STPD_MAX_OUTBOUND_BYTES_PER_UID: its peak RSS."""
    directory = scratch_dir("attack")
    daemon = Daemon(settings.stpd, directory, directory / "state", "--debug-methods").wait_started()
    try:
        payload = {name: name * 15_000 for name in "abcd"}  # a string param is at most 16 KiB
        emitted = 0
        with daemon.client() as client:
            while emitted * 60_000 < settings.attack_megabytes << 20:
                client.call("debug.emit", {"count": 250, "payload": payload})
                emitted += 250
        baseline = rss_bytes(daemon.pid)
        peak, figures = _attack_round(settings, daemon, 4, 8)
        latency = figures["latency_us"]
        result = {"events": emitted, "events_mib": round(emitted * 60_000 / (1 << 20), 1),
                  "baseline_rss_mib": round(baseline / (1 << 20), 1), "peak_rss_mib": round(peak / (1 << 20), 1),
                  "ping_p50_us": latency["p50"], "ping_p99_us": latency["p99"], "pings": figures["requests"]}
        log(f"  attack: {result['events_mib']} MiB of events, peak RSS {result['peak_rss_mib']} MiB, "
            f"another client's ping p50 {latency['p50']:.1f} us, p99 {latency['p99']:.1f} us")
        uid_peak, uid_figures = _attack_round(settings, daemon, settings.attack_uid_connections, 2)
        result["uid_connections"] = settings.attack_uid_connections
        result["uid_peak_rss_mib"] = round(uid_peak / (1 << 20), 1)
        result["uid_ping_p99_us"] = uid_figures["latency_us"]["p99"]
        log(f"  attack over {settings.attack_uid_connections} connections of one uid: peak RSS "
            f"{result['uid_peak_rss_mib']} MiB, another client's ping p99 {result['uid_ping_p99_us']:.1f} us")
        return result
    finally:
        daemon.stop()
        remove_tree(directory)


def _attack_round(settings: Settings, daemon: Daemon, connections: int, calls: int) -> tuple[int, dict]:
    """CONNECTIONS that pipeline CALLS `events.wait` each and never read, while loadgen pings;
    stpd's peak RSS meanwhile and loadgen's figures. The connections are closed after."""
    peak = [rss_bytes(daemon.pid)]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.05):
            peak[0] = max(peak[0], rss_bytes(daemon.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "events.wait",
                          "params": {"since": 0, "limit": 1000, "timeout": 0}}).encode() + b"\n"
    abusers: list[socket.socket] = []
    try:
        for _ in range(connections):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(daemon.socket_path))
            sock.sendall(request * calls)
            abusers.append(sock)
        figures = loadgen(settings, "ping", str(daemon.socket_path), "-c", "1", "-d", str(settings.attack_seconds),
                          "-w", "0", "-r", PING, "-e", '"result"', timeout=settings.attack_seconds + 60)
    finally:
        sampling.set()
        sampler.join(5)
        for sock in abusers:
            sock.close()
    if figures["errors"] or figures["closed"]:
        raise RuntimeError(f"the other client: {figures['errors']} bad replies, {figures['closed']} closed")
    return peak[0], figures


def idle_subscriptions(settings: Settings) -> dict:
    directory = scratch_dir("idlesubs")
    most = max(settings.idle_subscriptions)
    daemon = Daemon(settings.stpd, directory, directory / "state", "--debug-methods",
                    "--max-subscriptions-per-uid", str(most),
                    "--max-subscriptions-per-connection", str(IDLE_PER_CONNECTION)).wait_started()
    held: list[socket.socket] = []
    subscribed = 0
    results = {}
    try:
        with daemon.client() as client:
            for total in settings.idle_subscriptions:
                subscribed += _subscribe_idle(daemon.socket_path, total - subscribed, held)
                samples = []
                for _ in range(settings.idle_rounds):
                    started = time.perf_counter()
                    client.call("debug.emit", {"count": 100})
                    samples.append((time.perf_counter() - started) * 1000)
                figures = {"emit_100_p50_ms": statistics.median(samples), "emit_100_max_ms": max(samples),
                           "rss_mib": round(rss_bytes(daemon.pid) / (1 << 20), 1)}
                results[str(total)] = figures
                log(f"  {total:6} idle subscriptions: debug.emit of 100 events p50 "
                    f"{figures['emit_100_p50_ms']:7.2f} ms, RSS {figures['rss_mib']} MiB")
        return results
    finally:
        for sock in held:
            sock.close()
        daemon.stop()
        remove_tree(directory)


IDLE_PER_CONNECTION = 5000


def _subscribe_idle(path, count: int, held: list[socket.socket]) -> int:
    """COUNT more subscriptions to a type that never occurs, pipelined over new connections of up
    to IDLE_PER_CONNECTION each; every reply is read and must be a result. Returns COUNT."""
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "events.subscribe",
                          "params": {"filter": {"types": ["never.happens"]}}}).encode() + b"\n"
    left = count
    while left > 0:
        batch = min(left, IDLE_PER_CONNECTION)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(path))
        held.append(sock)
        reader = sock.makefile("rb")
        # In rounds that the socket buffers hold: stpd stops reading a client that does not take
        # its replies, and this one would wait in sendall for good.
        for start in range(0, batch, 200):
            rounds = min(200, batch - start)
            sock.sendall(request * rounds)
            for _ in range(rounds):
                line = reader.readline()
                if b'"result"' not in line:
                    raise RuntimeError(f"events.subscribe: {line[:200]!r}")
        left -= batch
    return count
