#!/usr/bin/env python3
"""Fan-out probe: how long after a `debug.emit {count: E}` request does each of N subscribers
hold its E-th event? (issue 12, target 2: 1,000 subscribers x 10 events, p99 <= 50 ms.)

It starts its own stpd (--debug-methods, socket and state in a temporary directory), opens N
connections that each `events.subscribe {filter: {types: ["debug.test"]}}`, then for each round
sends one `debug.emit` from another connection and times, per subscriber, the moment the line
carrying its E-th event of that round is read. One thread, one epoll set, no JSON parsing while
timing (lines are counted; they are parsed and checked after each round), so the client adds as
little as it can to what is measured. Standard library only.

    bench/fanout_probe.py                          # 1,000 x 10, 5 rounds, release build
    bench/fanout_probe.py --subscribers 100 --json
    bench/fanout_probe.py --stpd .build/debug/stpd

It prints one line per round and a summary; --json prints the summary as JSON instead. It is a
measurement, not a test: it asserts only that every subscriber got every event once, in order.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def default_stpd() -> Path:
    if os.environ.get("STPD_BIN_DIR"):
        return Path(os.environ["STPD_BIN_DIR"]) / "stpd"
    out = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO, check=True,
                         capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1]) / "stpd"


def frame(id: int, method: str, params: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params},
                      separators=(",", ":")).encode() + b"\n"


def read_reply(sock: socket.socket, buffer: bytearray) -> dict:
    """Blocking read of the next line (only used while setting up, before any event flows)."""
    while b"\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("EOF from stpd")
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    message = json.loads(line)
    if "error" in message:
        raise RuntimeError(f"stpd answered an error: {message}")
    return message


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def start_daemon(stpd: Path, directory: Path) -> tuple[subprocess.Popen, str]:
    sock_path = str(directory / "stpd.sock")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STPD_", "LISTEN_", "NOTIFY_"))}
    proc = subprocess.Popen(
        [str(stpd), "--socket", sock_path, "--state-dir", str(directory / "state"), "--debug-methods",
         "--log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.connect(sock_path)
            return proc, sock_path
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("stpd did not start")
            time.sleep(0.05)


def run(args: argparse.Namespace) -> dict:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.subscribers + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))  # the daemon inherits it
    directory = Path(tempfile.mkdtemp(prefix="stpd-fanout-"))
    proc, sock_path = start_daemon(Path(args.stpd), directory)
    subscribers: list[socket.socket] = []
    try:
        for _ in range(args.subscribers):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock_path)
            s.sendall(frame(1, "events.subscribe", {"filter": {"types": ["debug.test"]}}))
            subscribers.append(s)
        buffers = [bytearray() for _ in subscribers]
        for s, buffer in zip(subscribers, buffers):
            read_reply(s, buffer)
        emitter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        emitter.connect(sock_path)
        emitter_buffer = bytearray()

        selector = selectors.EpollSelector()
        for index, s in enumerate(subscribers):
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ, index)
        rounds = []
        expected_seq = 0
        for round_number in range(args.rounds):
            lines_needed = args.events
            counts = [0] * len(subscribers)
            done_at: list[float | None] = [None] * len(subscribers)
            remaining = len(subscribers)
            started = time.perf_counter()
            emitter.sendall(frame(100 + round_number, "debug.emit", {"count": args.events}))
            deadline = time.monotonic() + args.timeout
            while remaining:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"round {round_number}: {remaining} subscribers incomplete")
                for key, _ in selector.select(timeout=1.0):
                    index = key.data
                    chunk = key.fileobj.recv(1 << 20)
                    now = time.perf_counter()
                    if not chunk:
                        raise RuntimeError(f"subscriber {index} got EOF")
                    buffers[index] += chunk
                    if done_at[index] is None:
                        counts[index] += chunk.count(b"\n")
                        if counts[index] >= lines_needed:
                            done_at[index] = now
                            remaining -= 1
            emit_reply = read_reply(emitter, emitter_buffer)["result"]
            # Check what was timed: every subscriber got exactly this round's seqs, in order.
            first, last = emit_reply["firstSeq"], emit_reply["lastSeq"]
            assert last - first + 1 == args.events and first == expected_seq + 1, emit_reply
            expected_seq = last
            for index, buffer in enumerate(buffers):
                *lines, rest = bytes(buffer).split(b"\n")
                buffer[:] = rest
                got = [json.loads(line)["params"]["seq"] for line in lines]
                assert got == list(range(first, last + 1)), (index, got)
            latencies = [(t - started) * 1000 for t in done_at if t is not None]
            summary = {
                "p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99),
                "max_ms": max(latencies), "mean_ms": statistics.fmean(latencies)}
            rounds.append(summary)
            if not args.json:
                print(f"round {round_number + 1}: " + ", ".join(f"{k} {v:.1f}" for k, v in summary.items()),
                      flush=True)
            time.sleep(args.pause)
        emitter.close()
    finally:
        for s in subscribers:
            s.close()
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(directory, ignore_errors=True)
    # The first round also pays for warming up (allocations, page faults): reported, not summarised.
    measured = rounds[1:] or rounds
    return {
        "subscribers": args.subscribers, "events": args.events, "rounds": args.rounds,
        "p50_ms": statistics.median(r["p50_ms"] for r in measured),
        "p99_ms": statistics.median(r["p99_ms"] for r in measured),
        "max_ms": max(r["max_ms"] for r in measured),
        "first_round": rounds[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stpd", default=None, help="the stpd binary (default: the release build)")
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--events", type=int, default=10, help="events per debug.emit")
    parser.add_argument("--rounds", type=int, default=6, help="emits; the first is a warm-up")
    parser.add_argument("--pause", type=float, default=0.2, help="seconds between rounds")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a round may take")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    args.stpd = args.stpd or str(default_stpd())
    result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.subscribers} subscribers x {args.events} events: 10th-event latency "
              f"p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, max {result['max_ms']:.1f} ms "
              f"(median over rounds 2-{args.rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
