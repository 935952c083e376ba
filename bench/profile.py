#!/usr/bin/env python3
"""Where stpd's time goes: samples stpd with `perf record` (the cpu-clock software event, which
works where hardware counters do not) during one of the suite's workloads, and prints the top
symbols, demangled, by self time and by inclusive time.

    bench/profile.py --bin-dir DIR ping|fanout|restart|polls|create|create-postgres [--seconds N] [--scale N]

- ping: 16 connections of daemon.ping (closed loop) for --seconds;
- fanout: 1,000 subscribers, debug.emit {count: 10} x 5 rounds;
- restart: stpd starting on a copy of the cached state with --scale sessions (see case_scale),
  from the exec to the first answered ping;
- create: started redirect sessions made on 16 connections for --seconds (the creation case);
- create-postgres: the same on one fleet instance over PostgreSQL (run it under
  scripts/test-postgres, with STPD_TEST_PG_DURABLE=1 for durable commits as the fleet case);
  the server's CPU over the run is printed beside;
- polls: --scale pending Sources polled (default 2,000 here), for --seconds while they run
  (report "polls"), then as long again after app.background paused them ("polls-paused").

perf.data and the reports go to .build-bench/profiles/. Needs linux-perf (apt-get install
linux-perf); use a release build (`make bench-build`) with its symbols.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import case_scale  # noqa: E402
from case_transport import PING  # noqa: E402
from case_work import POLL_BUDGET  # noqa: E402
from harness import REPO_ROOT, Daemon, StripeServer, build_c, log, raise_nofile, remove_tree, scratch_dir  # noqa: E402
from settings import make_settings  # noqa: E402
from workload import create_source, create_started_session, run_workers  # noqa: E402

OUT = REPO_ROOT / ".build-bench" / "profiles"


def record(pid: int, data: Path) -> subprocess.Popen:
    proc = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-o", str(data), "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.3)  # perf attaches to every thread before the workload starts
    return proc


def finish(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    proc.wait(60)


def demangle(text: str) -> str:
    swift = shutil.which("swift-demangle") or shutil.which("swift")
    if not swift:
        return text
    argv = [swift, "--simplified", "--compact"] if swift.endswith("swift-demangle") else \
        [swift, "demangle", "--simplified", "--compact"]
    return subprocess.run(argv, input=text, capture_output=True, text=True).stdout or text


def report(data: Path, name: str, top: int) -> str:
    """Top symbols by self and by inclusive samples, also written to OUT/NAME.txt."""
    sections = []
    for title, mode in (("self", "--no-children"), ("inclusive (children)", "--children")):
        text = subprocess.run(["perf", "report", "-i", str(data), mode, "--sort", "dso,symbol", "--stdio", "-g",
                               "none", "--percent-limit", "0.3"], capture_output=True, text=True).stdout
        # perf pads its columns to the longest symbol seen; squeeze the runs of blanks.
        rows = [re.sub(r"\s{2,}", "  ", line.strip()).removesuffix("  -  -").removesuffix(" -")
                for line in text.splitlines() if line.strip() and not line.startswith("#")]
        sections.append(f"-- {name}: top {top} by {title} --\n" + demangle("\n".join(rows[:top])))
        if mode == "--children":
            own = [row for row in rows if "  stpd  " in row][:top]
            sections.append(f"-- {name}: top {top} of stpd's own symbols, inclusive --\n" + demangle("\n".join(own)))
    result = "\n\n".join(sections)
    (OUT / f"{name}.txt").write_text(result + "\n")
    return result


def profile_polls(settings, directory: Path, polls: int, seconds: float, top: int) -> int:
    stripe = StripeServer(settings.stripe_server, directory / "stripe")
    daemon = Daemon(settings.stpd, directory, directory / "state", stripe_api_base=stripe.base_url,
                    env=POLL_BUDGET).wait_started()
    try:
        created = run_workers(daemon.socket_path, create_source, connections=16, count=polls, label="sources")
        sources = [r["source"] for r in created.results]
        run_workers(daemon.socket_path, lambda client, n: client.call("source.poll", {"id": sources[n], "timeout": 300}),
                    connections=16, count=len(sources), duration=120, label="starting polls")
        time.sleep(5)
        perf = record(daemon.pid, OUT / "polls.perf.data")
        time.sleep(seconds)
        finish(perf)
        with daemon.client() as client:
            client.call("app.background")
        time.sleep(3)
        perf = record(daemon.pid, OUT / "polls-paused.perf.data")
        time.sleep(seconds)
        finish(perf)
    finally:
        daemon.stop()
        stripe.stop()
    print(report(OUT / "polls.perf.data", "polls", top))
    print(report(OUT / "polls-paused.perf.data", "polls-paused", top))
    return 0


def profile_create(settings, directory: Path, seconds: float, top: int) -> int:
    stripe = StripeServer(settings.stripe_server, directory / "stripe")
    daemon = Daemon(settings.stpd, directory, directory / "state", stripe_api_base=stripe.base_url).wait_started()
    try:
        run_workers(daemon.socket_path, create_started_session, connections=16, duration=2)  # warm up
        perf = record(daemon.pid, OUT / "create.perf.data")
        run = run_workers(daemon.socket_path, create_started_session, connections=16, duration=seconds)
        finish(perf)
        log(f"create: {len(run.results) / (run.ended - run.started):.0f} started sessions/s under perf")
    finally:
        daemon.stop()
        stripe.stop()
    print(report(OUT / "create.perf.data", "create", top))
    return 0


def profile_create_postgres(settings, directory: Path, seconds: float, top: int) -> int:
    import case_fleet  # only here: it needs the scripts/test-postgres cluster's environment

    cluster = case_fleet.Cluster()
    url = cluster.database()
    stripe = StripeServer(settings.stripe_server, directory / "stripe")
    try:
        daemon = case_fleet.instance(settings, directory / "a", stripe, url, "a")
        try:
            run_workers(daemon.socket_path, create_started_session, connections=16, duration=2)  # warm up
            server_before = cluster.cpu_seconds()
            perf = record(daemon.pid, OUT / "create-postgres.perf.data")
            run = run_workers(daemon.socket_path, create_started_session, connections=16, duration=seconds)
            finish(perf)
            sessions = len(run.results)
            server = (cluster.cpu_seconds() - server_before) / max(sessions, 1) * 1000
            log(f"create-postgres: {sessions / (run.ended - run.started):.0f} started sessions/s under perf, "
                f"PostgreSQL {server:.2f} ms of CPU per session (durable commits: {cluster.durable()})")
        finally:
            daemon.stop()
    finally:
        stripe.stop()
        cluster.drop(url)
    print(report(OUT / "create-postgres.perf.data", "create-postgres", top))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=["ping", "fanout", "restart", "polls", "create", "create-postgres", "report"],
                        help="report: print the reports of earlier recordings again")
    parser.add_argument("--bin-dir", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--scale", type=int, help="sessions (restart, default 10,000) or polls (default 2,000)")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    raise_nofile()
    OUT.mkdir(parents=True, exist_ok=True)
    programs = build_c(REPO_ROOT / ".build-bench")
    settings = make_settings(args.bin_dir / "stpd", args.bin_dir / "stripe-test-server", programs, False,
                             REPO_ROOT / ".build-bench" / "cache")
    if args.workload == "report":
        for name in ("ping", "fanout", "restart", "polls", "polls-paused", "create", "create-postgres"):
            if (OUT / f"{name}.perf.data").exists():
                print(report(OUT / f"{name}.perf.data", name, args.top))
        return 0
    data = OUT / f"{args.workload}.perf.data"
    directory = scratch_dir(f"profile-{args.workload}")
    try:
        if args.workload == "polls":
            return profile_polls(settings, directory, args.scale or 2000, args.seconds, args.top)
        if args.workload == "create":
            return profile_create(settings, directory, args.seconds, args.top)
        if args.workload == "create-postgres":
            return profile_create_postgres(settings, directory, args.seconds, args.top)
        if args.workload == "restart":
            scale = args.scale or 10_000
            found, _ = case_scale.populations(settings, [scale])
            shutil.copytree(found[scale].state, directory / "state", symlinks=True)
            stripe = StripeServer(settings.stripe_server, directory / "stripe")
            daemon = Daemon(settings.stpd, directory, directory / "state", stripe_api_base=stripe.base_url)
            perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-o", str(data), "-p",
                                     str(daemon.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            daemon.wait_started()
            finish(perf)
            log(f"start: READY {daemon.ready_s:.3f} s, ping {daemon.ping_s:.3f} s (perf attached after the exec)")
            daemon.stop()
            stripe.stop()
        else:
            extra = ["--debug-methods"] if args.workload == "fanout" else []
            daemon = Daemon(settings.stpd, directory, directory / "state", *extra).wait_started()
            perf = record(daemon.pid, data)
            if args.workload == "ping":
                argv = ["ping", str(daemon.socket_path), "-c", "16", "-d", str(args.seconds), "-w", "0", "-r", PING]
            else:
                argv = ["fanout", str(daemon.socket_path), "-n", "1000", "-k", "10", "-R", "5"]
            done = subprocess.run([str(programs["loadgen"]), *argv], capture_output=True, text=True)
            finish(perf)
            log(done.stdout.strip() or done.stderr.strip())
            daemon.stop()
        print(report(data, args.workload, args.top))
        return 0
    finally:
        remove_tree(directory)


if __name__ == "__main__":
    sys.exit(main())
