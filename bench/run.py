#!/usr/bin/env python3
"""stpd's benchmark suite: prints one table of figures and issue 12's targets, and writes the
figures as JSON.

    bench/run.py --bin-dir DIR [--smoke] [--out PATH] [--compare OLD.json] [CASE ...]
    bench/run.py --compare-only OLD.json NEW.json
    bench/run.py --table RESULT.json [--doc docs/performance.md]

CASE is any of: ping, fanout, attack, scale, load, create, polls, fleet (default: all, in that order;
fleet needs the PostgreSQL cluster of scripts/test-postgres, which `make bench` starts). DIR holds the
stpd and stripe-test-server binaries (`make bench` builds release ones into .build-release;
`make bench-smoke` uses the release build `make deb` packages, in .build-deb). The C programs
(bench/*.c) are built with `cc` into .build-bench/. Progress goes to stderr; the table to stdout; the JSON to --out
(default bench/results/latest.json). Standard library only. --table prints the table of an
earlier run; with --doc it also replaces the table between the markers in that file (a run with
--doc does the same with its own table).

Environment: BENCH_SCALES=100,10000 (stored-session scales to measure; the largest is also the
restart-after-load case's load), BENCH_POLLS=2000 (polls instead of 10,000), BENCH_REPOPULATE=1
(rebuild the cached populated state directories).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import case_fleet  # noqa: E402
import case_load  # noqa: E402
import case_scale  # noqa: E402
import case_transport  # noqa: E402
import case_work  # noqa: E402
import report  # noqa: E402
from harness import BENCH_DIR, REPO_ROOT, build_c, log, machine, raise_nofile  # noqa: E402
from settings import make_settings  # noqa: E402

CASES = {
    "ping": case_transport.ping,
    "fanout": case_transport.fanout,
    "idle_subscriptions": case_transport.idle_subscriptions,
    "attack": case_transport.attack,
    "scale": case_scale.scale,
    "load": case_load.load,
    "create": case_work.create,
    "polls": case_work.polls,
    "fleet": case_fleet.fleet,
}


def git_state() -> dict:
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    return {"commit": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", metavar="CASE", help=", ".join(CASES) + " (default: all)")
    parser.add_argument("--bin-dir", type=Path, help="directory holding stpd and stripe-test-server")
    parser.add_argument("--stand-in", type=Path, metavar="PATH",
                        help="the stripe-test-server to run instead of --bin-dir's (bench-smoke: the debug one)")
    parser.add_argument("--smoke", action="store_true", help="every case for a few seconds at tiny scales")
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "results" / "latest.json")
    parser.add_argument("--compare", type=Path, metavar="OLD.json", help="also print ratios against an earlier run")
    parser.add_argument("--compare-only", nargs=2, type=Path, metavar=("OLD.json", "NEW.json"),
                        help="print the ratios between two runs and exit")
    parser.add_argument("--table", type=Path, metavar="RESULT.json", help="print the table of an earlier run and exit")
    parser.add_argument("--doc", type=Path, metavar="FILE.md",
                        help="also write the table between the bench-table markers of FILE.md")
    parser.add_argument("--cache-dir", type=Path, default=REPO_ROOT / ".build-bench" / "cache",
                        help="where populated state directories are kept between runs")
    args = parser.parse_args()

    if args.compare_only:
        old, new = (json.loads(path.read_text()) for path in args.compare_only)
        print(report.compare(old, new))
        return 0
    if args.table:
        result = json.loads(args.table.read_text())
        print(report.heading(result) + "\n\n" + report.table(result))
        if args.doc:
            report.write_into(args.doc, result)
        return 0
    unknown = [case for case in args.cases if case not in CASES]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}: choose from {', '.join(CASES)}")
    if not args.bin_dir:
        parser.error("--bin-dir is required")
    stand_in = args.stand_in or args.bin_dir / "stripe-test-server"
    for path in (args.bin_dir / "stpd", stand_in):
        if not path.is_file():
            parser.error(f"no {path}: build it first (make bench builds it)")

    # Stopped by a signal, the cases' cleanups still stop every process they started (SIGINT is
    # ignored in a background job of a non-interactive shell, hence both, explicitly).
    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)

    limit = raise_nofile()
    programs = {**build_c(REPO_ROOT / ".build-bench"), "peer.py": BENCH_DIR / "peer.py"}
    settings = make_settings(args.bin_dir / "stpd", stand_in, programs, args.smoke,
                             args.cache_dir)
    chosen = args.cases or list(CASES)
    build = "release" if "release" in str(args.bin_dir.resolve()) else "debug"
    result: dict = {"schema": report.SCHEMA, "mode": "smoke" if args.smoke else "full", "build": build,
                    "git": git_state(), "machine": machine(),
                    "started_at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                    "bin_dir": str(args.bin_dir), "open_files_limit": limit, "cases": {}, "errors": {},
                    "case_seconds": {}}
    result["machine"]["loadavg_start"] = result["machine"].pop("loadavg")
    started = time.monotonic()
    for name in chosen:
        log(f"== {name}")
        case_started = time.monotonic()
        try:
            result["cases"][name] = CASES[name](settings)
        except Exception as error:  # one failing case must not lose the others' figures
            traceback.print_exc()
            result["errors"][name] = f"{type(error).__name__}: {error}"
        result["case_seconds"][name] = round(time.monotonic() - case_started, 1)
    result["seconds"] = time.monotonic() - started
    result["machine"]["loadavg_end"] = list(os.getloadavg())
    result["targets"] = report.targets(result["cases"])

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(report.heading(result))
    print()
    print(report.table(result))
    print(f"\nfigures: {args.out}")
    if args.doc:
        report.write_into(args.doc, result)
        print(f"table written into {args.doc}")
    if args.compare:
        print()
        print(report.compare(json.loads(args.compare.read_text()), result))
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
