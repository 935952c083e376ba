"""The one table `make bench` prints, the targets of issue 12 judged on a run's figures, and the
comparison of two runs (`--compare OLD.json`).

A run's JSON: {"schema", "mode" (full|smoke), "build", "git", "machine", "started_at",
"seconds", "cases": {case: figures}, "errors": {case: message}, "targets": [...]}. The figures of
each case are what bench/case_*.py return; a target is {"id", "what", "value", "display",
"met"}.
"""

from __future__ import annotations

from typing import Any, Callable

SCHEMA = 1


# -- formatting ---------------------------------------------------------------------------------

def rate(value: float) -> str:
    if value >= 100_000:
        return f"{value / 1000:.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}"


def micros(value: float) -> str:
    if value < 1000:
        return f"{value:.0f} us"
    if value < 10_000:
        return f"{value / 1000:.2f} ms"
    if value < 100_000:
        return f"{value / 1000:.1f} ms"
    if value < 1_000_000:
        return f"{value / 1000:.0f} ms"
    return f"{value / 1e6:.2f} s"


def millis(value: float) -> str:
    return micros(value * 1000)


def seconds(value: float) -> str:
    return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"


def size(value: float) -> str:
    if value >= 2**20:
        return f"{value / 2**20:.1f} MiB"
    if value >= 1024:
        return f"{value / 1024:.0f} KiB"
    return f"{value:.0f} B"


def count(value: int) -> str:
    return f"{value:,}"


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


# -- targets ------------------------------------------------------------------------------------

def _target(id: str, what: str, value: float | None, met: Callable[[float], bool], display: str,
            note: str = "") -> dict:
    """WHAT reads "figure: wanted"; the table shows the part after the colon beside the value."""
    if value is None:
        return {"id": id, "what": what, "value": None, "display": "not measured", "met": None}
    return {"id": id, "what": what + note, "value": value, "display": display, "met": bool(met(value))}


def targets(cases: dict) -> list[dict]:
    """Issue 12's targets, each judged on this run's figures (None when the case did not run)."""
    found = []
    ping = cases.get("ping") or {}
    stpd16, peer16, echo16 = (_get(ping, name, "16") for name in ("stpd", "peer", "echo"))
    ratio = stpd16["rps"] / peer16["rps"] if stpd16 and peer16 else None
    found.append(_target("ping16_vs_peer", "daemon.ping, 16 connections: rps >= 3x the Python peer's", ratio,
                         lambda v: v >= 3, f"{ratio:.2f}x" if ratio else ""))
    ratio = stpd16["rps"] / echo16["rps"] if stpd16 and echo16 else None
    found.append(_target("ping16_vs_echo", "daemon.ping, 16 connections: rps >= 0.5x the C echo's", ratio,
                         lambda v: v >= 0.5, f"{ratio:.2f}x" if ratio else ""))
    p99 = stpd16["p99_us"] if stpd16 else None
    found.append(_target("ping16_p99", "daemon.ping, 16 connections: p99 <= 1 ms", p99, lambda v: v <= 1000,
                         micros(p99) if p99 else ""))
    stpd1, echo1 = _get(ping, "stpd", "1"), _get(ping, "echo", "1")
    ratio = stpd1["p50_us"] / echo1["p50_us"] if stpd1 and echo1 else None
    found.append(_target("ping1_p50", "daemon.ping, 1 connection: p50 <= 1.5x the C echo's", ratio,
                         lambda v: v <= 1.5, f"{ratio:.2f}x" if ratio else ""))

    fanout = cases.get("fanout") or {}
    largest = max((int(k) for k in fanout), default=None)
    p99 = fanout[str(largest)]["p99_ms"] if largest else None
    note = "" if largest in (None, 1000) else f" (at {count(largest)})"
    found.append(_target("fanout_p99", "fan-out, 1,000 subscribers x 10 events: p99 <= 50 ms", p99,
                         lambda v: v <= 50, millis(p99) if p99 is not None else "", note))

    attack = cases.get("attack") or {}
    value = attack.get("peak_rss_mib")
    found.append(_target("attack_rss", "issue 24's byte attack: stpd RSS <= 256 MiB", value, lambda v: v <= 256,
                         f"{value:.0f} MiB" if value is not None else ""))
    value = attack.get("ping_p99_us")
    found.append(_target("attack_ping", "issue 24's byte attack: another client's ping p99 <= 10 ms", value,
                         lambda v: v <= 10_000, micros(value) if value is not None else ""))

    scale = cases.get("scale") or {}
    sizes = sorted(int(k) for k in scale if int(k) > 0)
    top = sizes[-1] if sizes else None
    note = "" if top in (None, 100_000) else f" (at {count(top)})"
    at_top, empty = (scale.get(str(top)) if top else None), scale.get("0")
    value = at_top["start_ready_s"] if at_top else None
    found.append(_target("start_ready", "100,000 sessions: start to READY=1 <= 1 s", value, lambda v: v <= 1,
                         seconds(value) if value is not None else "", note))
    ratio = at_top["rss_mib"] / empty["rss_mib"] if at_top and empty else None
    found.append(_target("rss", "100,000 sessions: RSS <= 2x an empty daemon's", ratio, lambda v: v <= 2,
                         f"{ratio:.2f}x" if ratio else "", note))
    at100 = scale.get("100") or (scale.get(str(sizes[0])) if sizes else None)
    ratio = (at_top["handle_url_p50_us"] / at100["handle_url_p50_us"]
             if at_top and at100 and "handle_url_p50_us" in at_top and at100.get("handle_url_p50_us") else None)
    found.append(_target("handle_url", "100,000 sessions: handle-url p50 <= 1.2x its p50 at 100", ratio,
                         lambda v: v <= 1.2, f"{ratio:.2f}x" if ratio else "", note))

    value = _get(cases, "create", "sessions_per_s")
    found.append(_target("create", "creation over 16 connections: >= 500 started sessions/s", value,
                         lambda v: v >= 500, f"{value:.0f}/s" if value is not None else ""))

    polls = cases.get("polls") or {}
    running = polls.get("started", polls.get("polls"))
    note = "" if running in (None, 10_000) else f" (at {count(running)})"
    value = _get(polls, "running", "stpd_cores")
    found.append(_target("polls_cpu", "10,000 running polls: stpd CPU <= 1 core", value, lambda v: v <= 1,
                         f"{value:.2f} cores" if value is not None else "", note))
    value = _get(polls, "running", "within_10pct")
    found.append(_target("polls_interval", "10,000 running polls: 99% of intervals within 10% of 1.5 s", value,
                         lambda v: v >= 0.99, f"{value:.1%}" if value is not None else "", note))
    value = _get(polls, "paused", "stpd_cores")
    found.append(_target("paused_cpu", "10,000 paused polls: stpd CPU ~0 (<= 0.01 core)", value,
                         lambda v: v <= 0.01, f"{value:.4f} cores" if value is not None else "", note))
    return found


# -- the table ----------------------------------------------------------------------------------

def _judged(found: list[dict], *ids: str) -> str:
    parts = []
    for target in found:
        if target["id"] in ids and target["met"] is not None:
            wanted = target["what"].rsplit(": ", 1)[-1]
            parts.append(f"{wanted}: {target['display']}, {'met' if target['met'] else '**not met**'}")
    return "; ".join(parts)


def table(result: dict) -> str:
    cases, found = result["cases"], result["targets"]
    rows: list[tuple[str, str, str, str, str]] = []
    ping = cases.get("ping")
    if ping:
        for connections in sorted({int(k) for server in ping.values() for k in server}):
            key = str(connections)
            label = f"daemon.ping, {connections} connection{'s' if connections > 1 else ''}"
            cells = [ping.get(name, {}).get(key) for name in ("stpd", "peer", "echo")]
            judged = {1: ("ping1_p50",), 16: ("ping16_p99",)}.get(connections, ())
            rows.append((f"{label}: rps", *[rate(c["rps"]) if c else "" for c in cells],
                         _judged(found, "ping16_vs_peer", "ping16_vs_echo") if connections == 16 else ""))
            rows.append((f"{label}: p50, p99", *[f"{micros(c['p50_us'])}, {micros(c['p99_us'])}" if c else ""
                                                 for c in cells], _judged(found, *judged)))
            if connections == 16:
                rows.append((f"{label}: requests per CPU second of the server",
                             *[rate(c["rps"] / c["server_cores"]) if c and c.get("server_cores") else "" for c in cells],
                             ""))
    for subscribers, figures in sorted((cases.get("fanout") or {}).items(), key=lambda kv: int(kv[0])):
        largest = max(int(k) for k in cases["fanout"])
        rows.append((f"fan-out, {count(int(subscribers))} subscribers: 10th event p50, p99",
                     f"{millis(figures['p50_ms'])}, {millis(figures['p99_ms'])}", "", "",
                     _judged(found, "fanout_p99") if int(subscribers) == largest else ""))
    attack = cases.get("attack")
    if attack:
        rows.append((f"byte attack over {attack['events_mib']:.0f} MiB of events: peak RSS; another client's ping "
                     "p50, p99", f"{attack['peak_rss_mib']:.0f} MiB; {micros(attack['ping_p50_us'])}, "
                     f"{micros(attack['ping_p99_us'])}", "", "", _judged(found, "attack_rss", "attack_ping")))
    scale = cases.get("scale") or {}
    top = max((int(k) for k in scale), default=0)
    for sessions, figures in sorted(scale.items(), key=lambda kv: int(kv[0])):
        n = int(sessions)
        label = "empty daemon" if n == 0 else f"{count(n)} sessions"
        rows.append((f"{label}: start to READY, to ping; RSS",
                     f"{seconds(figures['start_ready_s'])}, {seconds(figures['start_ping_s'])}; "
                     f"{figures['rss_mib']:.0f} MiB", "", "",
                     _judged(found, "start_ready", "rss") if n == top and n else ""))
        if n:
            listed = size(figures["list_bytes"]) if "list_bytes" in figures else f"error ({figures.get('list_error')})"
            rows.append((f"{label}: handle-url p50; redirect.list reply",
                         f"{micros(figures['handle_url_p50_us'])}; {listed}", "", "",
                         _judged(found, "handle_url") if n == top else ""))
    create = cases.get("create")
    if create:
        rows.append((f"creation, {create['connections']} connections: started sessions/s",
                     f"{create['sessions_per_s']:.0f}", "", "", _judged(found, "create")))
    polls = cases.get("polls")
    if polls:
        r, p = polls["running"], polls["paused"]
        started = polls.get("started", polls["polls"])
        short = f" ({count(started)} started in {polls.get('start_s', 0):.0f} s)" if started < polls["polls"] else ""
        rows.append((f"{count(polls['polls'])} polls running{short}: stpd CPU; interval p50, p99; within 10%",
                     f"{r['stpd_cores']:.2f} cores; {r['interval_p50_s']:.3f} s, {r['interval_p99_s']:.3f} s; "
                     f"{r['within_10pct']:.1%}", "", "", _judged(found, "polls_cpu", "polls_interval")))
        rows.append((f"{count(polls['polls'])} polls paused: stpd CPU; requests",
                     f"{p['stpd_cores']:.4f} cores; {p['requests']}", "", "", _judged(found, "paused_cpu")))
    fleet = cases.get("fleet")
    if fleet:
        def pair(figures: dict) -> str:
            return f"{micros(figures['p50_us'])}, {micros(figures['p99_us'])}"
        stores = [("sqlite", "SQLite"), ("postgres_1", "PostgreSQL, 1 instance"),
                  ("postgres_2", "PostgreSQL, 2 instances")]
        for key, label in stores:
            if key in fleet:
                where = " (started on A, handled on B)" if key == "postgres_2" else ""
                rows.append((f"fleet, {label}: started sessions/s; handle-url p50, p99{where}",
                             f"{fleet[key]['sessions_per_s']:.0f}; {pair(fleet[key]['handle_url'])}", "", "", ""))
        if "propagation" in fleet:
            p = fleet["propagation"]
            rows.append(("fleet: event from a commit on A to a subscriber on B, p50, p99",
                         f"{millis(p['p50_ms'])}, {millis(p['p99_ms'])}", "", "", ""))
        if "takeover" in fleet:
            t = fleet["takeover"]
            rows.append((f"fleet: kill -9 of A to B holding its {t['polls']} polls (lease {t['lease_s']} s)",
                         seconds(t["seconds"]), "", "", ""))
        if "recovery" in fleet:
            r = fleet["recovery"]
            rows.append((f"fleet: PostgreSQL down {r['outage_s']:.0f} s: a call's 1010; restarted to both serving",
                         f"{seconds(r['down_answer_s'])}; {seconds(r['serving_again_s'])}", "", "", ""))
    for case, message in (result.get("errors") or {}).items():
        rows.append((f"{case}: FAILED", message.splitlines()[0][:100] if message else "", "", "", ""))

    lines = ["| figure | stpd | Python peer | C line echo | target |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    judged = [t for t in found if t["met"] is not None]
    lines.append("")
    lines.append(f"Targets met: {sum(t['met'] for t in judged)} of {len(judged)} judged"
                 + (f" ({len(found) - len(judged)} not measured)" if len(judged) < len(found) else "") + ".")
    return "\n".join(lines)


def heading(result: dict) -> str:
    machine, git = result["machine"], result.get("git") or {}
    load = machine.get("loadavg_start", [0])[0], machine.get("loadavg_end", [0])[0]
    smoke = " SMOKE (tiny scales, a few seconds per case: the figures mean nothing)" if result["mode"] == "smoke" else ""
    return (f"stpd benchmark{smoke}: {result['build']} build of {git.get('commit', '?')[:10]}"
            f"{' (modified)' if git.get('dirty') else ''}, {result['started_at']}, {result['seconds']:.0f} s\n"
            f"machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB, "
            f"Linux {machine['kernel']}; load average {load[0]:.1f} at start, {load[1]:.1f} at end")


# -- comparing two runs -------------------------------------------------------------------------

def _leaves(data: Any, prefix: str = "") -> dict[str, float]:
    found = {}
    if isinstance(data, dict):
        for key, value in data.items():
            found.update(_leaves(value, f"{prefix}.{key}" if prefix else key))
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        found[prefix] = float(data)
    return found


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


# Counts of work done, not figures of how well: left out of comparisons.
_NOT_FIGURES = ("requests", "errors", "samples", "sessions", "connections", "incomplete", "intervals",
                "polls_seen", "handle_url_samples", "list_items", "polls")


def compare(old: dict, new: dict) -> str:
    """Every figure both runs have, with new/old; then each target in both."""
    before, after = _leaves(old.get("cases", {})), _leaves(new.get("cases", {}))
    after = {k: v for k, v in after.items() if k.rsplit(".", 1)[-1] not in _NOT_FIGURES}
    lines = [f"old: {heading(old).splitlines()[0]}", f"new: {heading(new).splitlines()[0]}", "",
             "| figure | old | new | new/old |", "|---|---|---|---|"]
    for key in [k for k in after if k in before]:
        a, b = before[key], after[key]
        ratio = f"{b / a:.2f}x" if a else ""
        lines.append(f"| {key} | {_number(a)} | {_number(b)} | {ratio} |")
    old_targets = {t["id"]: t for t in old.get("targets", [])}
    lines += ["", "| target | old | new |", "|---|---|---|"]
    for target in new.get("targets", []):
        was = old_targets.get(target["id"], {})

        def show(t: dict) -> str:
            return "" if t.get("met") is None else f"{t['display']} ({'met' if t['met'] else 'not met'})"
        lines.append(f"| {target['what']} | {show(was)} | {show(target)} |")
    return "\n".join(lines)
