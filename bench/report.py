"""The one table `make bench` prints, the targets (issues 12 and 22) judged on a run's figures, and
the comparison of two runs (`--compare OLD.json`). The table is made of one section per case
(`SECTIONS`): its targets and its rows, so a new case adds a section without touching the others.

A run's JSON: {"schema", "mode" (full|smoke), "build", "git", "machine", "started_at",
"seconds", "cases": {case: figures}, "errors": {case: message}, "targets": [...]}. The figures of
each case are what bench/case_*.py return; a target is {"id", "what", "value", "display",
"met"}.
"""

from __future__ import annotations

from pathlib import Path
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


# -- targets and rows, one section per case ----------------------------------------------------

Row = tuple[str, str, str, str, str]  # figure, stpd, Python peer, C line echo, target


def _target(id: str, what: str, value: float | None, met: Callable[[float], bool], display: str,
            note: str = "") -> dict:
    """WHAT reads "figure: wanted"; the table shows the part after the colon beside the value."""
    if value is None:
        return {"id": id, "what": what, "value": None, "display": "not measured", "met": None}
    return {"id": id, "what": what + note, "value": value, "display": display, "met": bool(met(value))}


def _ratio(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else ""


def _judged(found: list[dict], *ids: str) -> str:
    parts = []
    for target in found:
        if target["id"] in ids and target["met"] is not None:
            wanted = target["what"].rsplit(": ", 1)[-1]
            parts.append(f"{wanted}: {target['display']}, {'met' if target['met'] else '**not met**'}")
    return "; ".join(parts)


def _ping_targets(ping: dict) -> list[dict]:
    stpd16, peer16, echo16 = (_get(ping, name, "16") for name in ("stpd", "peer", "echo"))
    stpd1, echo1 = _get(ping, "stpd", "1"), _get(ping, "echo", "1")
    vs_peer = stpd16["rps"] / peer16["rps"] if stpd16 and peer16 else None
    vs_echo = stpd16["rps"] / echo16["rps"] if stpd16 and echo16 else None
    p99 = stpd16["p99_us"] if stpd16 else None
    p50 = stpd1["p50_us"] / echo1["p50_us"] if stpd1 and echo1 else None
    return [
        _target("ping16_vs_peer", "daemon.ping, 16 connections: rps >= 3x the Python peer's", vs_peer,
                lambda v: v >= 3, _ratio(vs_peer)),
        _target("ping16_vs_echo", "daemon.ping, 16 connections: rps >= 0.5x the C echo's", vs_echo,
                lambda v: v >= 0.5, _ratio(vs_echo)),
        _target("ping16_p99", "daemon.ping, 16 connections: p99 <= 0.25 ms", p99, lambda v: v <= 250,
                micros(p99) if p99 else ""),
        _target("ping1_p50", "daemon.ping, 1 connection: p50 <= 1.5x the C echo's", p50, lambda v: v <= 1.5,
                _ratio(p50)),
    ]


def _ping_rows(ping: dict, found: list[dict]) -> list[Row]:
    rows: list[Row] = []
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
    return rows


def _fanout_targets(fanout: dict) -> list[dict]:
    largest = max((int(k) for k in fanout), default=None)
    p99 = fanout[str(largest)]["p99_ms"] if largest else None
    note = "" if largest in (None, 1000) else f" (at {count(largest)})"
    return [_target("fanout_p99", "fan-out, 1,000 subscribers x 10 events: p99 <= 50 ms", p99, lambda v: v <= 50,
                    millis(p99) if p99 is not None else "", note)]


def _fanout_rows(fanout: dict, found: list[dict]) -> list[Row]:
    largest = max(int(k) for k in fanout)
    return [(f"fan-out, {count(int(subscribers))} subscribers: 10th event p50, p99",
             f"{millis(figures['p50_ms'])}, {millis(figures['p99_ms'])}", "", "",
             _judged(found, "fanout_p99") if int(subscribers) == largest else "")
            for subscribers, figures in sorted(fanout.items(), key=lambda kv: int(kv[0]))]


def _attack_targets(attack: dict) -> list[dict]:
    rss, ping = attack.get("peak_rss_mib"), attack.get("ping_p99_us")
    uid_rss = attack.get("uid_peak_rss_mib")
    return [
        _target("attack_uid_rss", f"issue 32.4's byte attack over {attack.get('uid_connections', 1000):,} connections "
                "of one uid: stpd RSS <= 256 MiB", uid_rss, lambda v: v <= 256,
                f"{uid_rss:.0f} MiB" if uid_rss is not None else ""),
        _target("attack_rss", "issue 24's byte attack: stpd RSS <= 256 MiB", rss, lambda v: v <= 256,
                f"{rss:.0f} MiB" if rss is not None else ""),
        _target("attack_ping", "issue 24's byte attack: another client's ping p99 <= 10 ms", ping,
                lambda v: v <= 10_000, micros(ping) if ping is not None else ""),
    ]


def _attack_rows(attack: dict, found: list[dict]) -> list[Row]:
    rows = [(f"byte attack over {attack['events_mib']:.0f} MiB of events: peak RSS; another client's ping p50, p99",
             f"{attack['peak_rss_mib']:.0f} MiB; {micros(attack['ping_p50_us'])}, {micros(attack['ping_p99_us'])}",
             "", "", _judged(found, "attack_rss", "attack_ping"))]
    if "uid_peak_rss_mib" in attack:
        rows.append((f"the same over {attack['uid_connections']:,} connections of one uid: peak RSS",
                     f"{attack['uid_peak_rss_mib']:.0f} MiB", "", "", _judged(found, "attack_uid_rss")))
    return rows


def _idle_subscriptions_targets(idle: dict) -> list[dict]:
    counts = sorted(int(k) for k in idle)
    if len(counts) < 2:
        return []
    few, many = idle[str(counts[0])]["emit_100_p50_ms"], idle[str(counts[-1])]["emit_100_p50_ms"]
    ratio = many / few if few else None
    return [_target("idle_subscriptions", f"issue 32.2: 100 events beside {counts[-1]:,} idle subscriptions cost "
                    f"<= 2x what they cost beside {counts[0]}", ratio, lambda v: v <= 2,
                    f"{ratio:.2f}x" if ratio is not None else "")]


def _idle_subscriptions_rows(idle: dict, found: list[dict]) -> list[Row]:
    parts = [f"{int(k):,}: {millis(v['emit_100_p50_ms'])}" for k, v in sorted(idle.items(), key=lambda i: int(i[0]))]
    return [("debug.emit of 100 events beside idle subscriptions (p50)", "; ".join(parts), "", "",
             _judged(found, "idle_subscriptions"))]


def _scale_targets(scale: dict) -> list[dict]:
    sizes = sorted(int(k) for k in scale if int(k) > 0)
    top = sizes[-1] if sizes else None
    note = "" if top in (None, 100_000) else f" (at {count(top)})"
    at_top, empty = (scale.get(str(top)) if top else None), scale.get("0")
    ready = at_top["start_ready_s"] if at_top else None
    rss = at_top["rss_mib"] / empty["rss_mib"] if at_top and empty else None
    at100 = scale.get("100") or (scale.get(str(sizes[0])) if sizes else None)
    handle = (at_top["handle_url_p50_us"] / at100["handle_url_p50_us"]
              if at_top and at100 and "handle_url_p50_us" in at_top and at100.get("handle_url_p50_us") else None)
    return [
        _target("start_ready", "100,000 sessions, a copy of a settled state: start to READY=1 <= 1 s", ready,
                lambda v: v <= 1, seconds(ready) if ready is not None else "", note),
        _target("rss", "100,000 sessions, a copy of a settled state: RSS <= 2x an empty daemon's", rss,
                lambda v: v <= 2, _ratio(rss), note),
        _target("handle_url", "100,000 sessions, a copy of a settled state: handle-url p50 <= 1.2x its p50 at 100",
                handle, lambda v: v <= 1.2, _ratio(handle), note),
    ]


def _scale_rows(scale: dict, found: list[dict]) -> list[Row]:
    rows: list[Row] = []
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
    return rows


_LOAD_PHASES = (("after_load", "load", "after the load"), ("after_kill", "kill", "after a kill -9 in more load"))


def _load_targets(load: dict) -> list[dict]:
    found = []
    empty, reference = load.get("empty"), load.get("reference")
    for phase, id, what in _LOAD_PHASES:
        figures = load.get(phase)
        n = f"{count(figures['sessions'])} sessions" if figures else "100,000 sessions"
        ready = figures["start_ready_s"] if figures else None
        ping = figures["start_ping_s"] if figures else None
        handle = (figures["handle_url_p50_us"] / reference["handle_url_p50_us"]
                  if figures and reference else None)
        rss = figures["rss_mib"] / empty["rss_mib"] if figures and empty else None
        found += [
            _target(f"{id}_ready", f"{n} {what}: start to READY=1 <= 1 s", ready, lambda v: v <= 1,
                    seconds(ready) if ready is not None else ""),
            _target(f"{id}_ping", f"{n} {what}: start to the first ping <= 1 s", ping, lambda v: v <= 1,
                    seconds(ping) if ping is not None else ""),
            _target(f"{id}_handle_url", f"{n} {what}: handle-url p50 <= 1.2x its p50 at "
                    f"{count(reference['sessions']) if reference else 100}", handle, lambda v: v <= 1.2,
                    _ratio(handle)),
            _target(f"{id}_rss", f"{n} {what}: RSS <= 2x an empty daemon's", rss, lambda v: v <= 2, _ratio(rss)),
        ]
    value = _get(load, "after_load", "sessions_per_s")
    found.append(_target("load_create", "the load, 16 connections: >= 1,000 started sessions/s", value,
                         lambda v: v >= 1000, f"{value:.0f}/s" if value is not None else ""))
    return found


def _load_rows(load: dict, found: list[dict]) -> list[Row]:
    rows: list[Row] = []
    empty, reference = load.get("empty"), load.get("reference")
    if empty:
        rows.append(("fresh daemon for the load: start to READY, to ping; RSS",
                     f"{seconds(empty['start_ready_s'])}, {seconds(empty['start_ping_s'])}; "
                     f"{empty['rss_mib']:.0f} MiB", "", "", ""))
    if reference:
        rows.append((f"{count(reference['sessions'])} sessions, restarted: start to READY, to ping; RSS; "
                     f"handle-url p50", f"{seconds(reference['start_ready_s'])}, "
                     f"{seconds(reference['start_ping_s'])}; {reference['rss_mib']:.0f} MiB; "
                     f"{micros(reference['handle_url_p50_us'])}", "", "", ""))
    after = load.get("after_load")
    if after:
        rows.append((f"the load: {count(after['sessions'])} started sessions over 16 connections, per second "
                     f"(over its last tenth); stop after it",
                     f"{after['sessions_per_s']:.0f} ({after['last_tenth_per_s']:.0f}); {seconds(after['stop_s'])}",
                     "", "", _judged(found, "load_create")))
    for phase, id, what in _LOAD_PHASES:
        figures = load.get(phase)
        if not figures:
            continue
        n = count(figures["sessions"])
        rows.append((f"{n} sessions {what}: WAL met; start to READY, to ping",
                     f"{size(figures['wal_bytes'])}; {seconds(figures['start_ready_s'])}, "
                     f"{seconds(figures['start_ping_s'])}", "", "", _judged(found, f"{id}_ready", f"{id}_ping")))
        rows.append((f"{n} sessions {what}: RSS; handle-url p50, p99",
                     f"{figures['rss_mib']:.0f} MiB; {micros(figures['handle_url_p50_us'])}, "
                     f"{micros(figures['handle_url_p99_us'])}", "", "",
                     _judged(found, f"{id}_rss", f"{id}_handle_url")))
    return rows


def _create_targets(create: dict) -> list[dict]:
    value = create.get("sessions_per_s")
    return [_target("create", "creation over 16 connections, a fresh daemon: >= 1,000 started sessions/s", value,
                    lambda v: v >= 1000, f"{value:.0f}/s" if value is not None else "")]


def _create_rows(create: dict, found: list[dict]) -> list[Row]:
    per_session = create.get("stpd_ms_per_session")
    cost = f"; {per_session:.2f} ms" if per_session is not None else ""
    return [(f"creation, {create['connections']} connections: started sessions/s; stpd cores; stpd CPU per session",
             f"{create['sessions_per_s']:.0f}; {create['stpd_cores']:.2f}{cost}", "", "", _judged(found, "create"))]


def _polls_targets(polls: dict) -> list[dict]:
    total, started = polls.get("polls"), polls.get("started", polls.get("polls"))
    note = "" if started in (None, 10_000) else f" (at {count(started)})"
    share = started / total if total else None
    cpu = _get(polls, "running", "stpd_cores")
    within = _get(polls, "running", "within_10pct")
    paused = _get(polls, "paused", "stpd_cores")
    return [
        _target("polls_started", "10,000 polls: all started within 120 s", share, lambda v: v >= 1,
                f"{count(started)} of {count(total)}" if share is not None else ""),
        _target("polls_cpu", "10,000 running polls: stpd CPU <= 1 core", cpu, lambda v: v <= 1,
                f"{cpu:.2f} cores" if cpu is not None else "", note),
        _target("polls_interval", "10,000 running polls: 99% of intervals within 10% of 1.5 s", within,
                lambda v: v >= 0.99, f"{within:.1%}" if within is not None else "", note),
        _target("paused_cpu", "10,000 paused polls: stpd CPU ~0 (<= 0.01 core)", paused, lambda v: v <= 0.01,
                f"{paused:.4f} cores" if paused is not None else "", note),
    ]


def _polls_rows(polls: dict, found: list[dict]) -> list[Row]:
    r, p = polls["running"], polls["paused"]
    started = polls.get("started", polls["polls"])
    return [
        (f"{count(polls['polls'])} polls: started, in", f"{count(started)}, {polls.get('start_s', 0):.0f} s", "", "",
         _judged(found, "polls_started")),
        (f"{count(polls['polls'])} polls running: stpd CPU (per request); interval p50, p99; within 10%",
         f"{r['stpd_cores']:.2f} cores"
         + (f" ({r['stpd_us_per_request']:.0f} us)" if r.get("stpd_us_per_request") is not None else "")
         + f"; {r['interval_p50_s']:.3f} s, {r['interval_p99_s']:.3f} s; "
         f"{r['within_10pct']:.1%}", "", "", _judged(found, "polls_cpu", "polls_interval")),
        (f"{count(polls['polls'])} polls paused: stpd CPU; requests",
         f"{p['stpd_cores']:.4f} cores; {p['requests']}", "", "", _judged(found, "paused_cpu")),
    ]


FLEET_STORES = [("sqlite", "SQLite"), ("postgres_1", "PostgreSQL, 1 instance"),
                ("postgres_2", "PostgreSQL, 2 instances"), ("postgres_4", "PostgreSQL, 4 instances")]


def _fleet_targets(fleet: dict) -> list[dict]:
    """Issue 31's: PostgreSQL near SQLite, more instances no slower, one round trip per commit."""
    def rate(key: str) -> float | None:
        return _get(fleet, key, "sessions_per_s")

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None
    one, two, four = ratio(rate("postgres_1"), rate("sqlite")), ratio(rate("postgres_2"), rate("postgres_1")), \
        ratio(rate("postgres_4"), rate("postgres_2"))
    trips = [t for t in (_get(fleet, key, "round_trips_per_commit") for key, _ in FLEET_STORES) if t is not None]
    worst = max(trips) if trips else None
    return [
        _target("fleet_1", "fleet, PostgreSQL, 1 instance: >= 0.6x SQLite's sessions/s", one, lambda v: v >= 0.6,
                _ratio(one)),
        _target("fleet_2", "fleet, PostgreSQL, 2 instances: >= 1.0x one instance's", two, lambda v: v >= 1.0,
                _ratio(two)),
        _target("fleet_4", "fleet, PostgreSQL, 4 instances: no slower than 2 (>= 1.0x)", four, lambda v: v >= 1.0,
                _ratio(four)),
        _target("fleet_trips", "fleet: round trips per commit <= 2", worst, lambda v: v <= 2,
                f"{worst:.2f}" if worst is not None else ""),
    ]


def _fleet_rows(fleet: dict, found: list[dict]) -> list[Row]:
    def pair(figures: dict) -> str:
        return f"{micros(figures['p50_us'])}, {micros(figures['p99_us'])}"
    rows: list[Row] = []
    durable = "durable commits" if fleet.get("durable_commits") else "fsync off"
    judged = {"postgres_1": "fleet_1", "postgres_2": "fleet_2", "postgres_4": "fleet_4"}
    for key, label in FLEET_STORES:
        figures = fleet.get(key)
        if not figures:
            continue
        cost = f"{figures['sessions_per_s']:.0f}; {figures['stpd_cpu_per_session_ms']:.2f} ms"
        if "server_cpu_per_session_ms" in figures:
            rows.append((f"fleet, {label} ({durable}): started sessions/s; stpd CPU per session; PostgreSQL's",
                         f"{cost}; {figures['server_cpu_per_session_ms']:.2f} ms", "", "",
                         _judged(found, judged[key])))
            rows.append((f"fleet, {label}: statements per session; commits per session, round trips each; "
                         "counter lock held per commit",
                         f"{figures['statements_per_session']:.1f}; {figures['commits_per_session']:.1f}, "
                         f"{figures['round_trips_per_commit']:.2f}; {micros(figures['counter_hold_us'])}", "", "",
                         _judged(found, "fleet_trips") if key == "postgres_1" else ""))
        else:
            rows.append((f"fleet, {label}: started sessions/s; stpd CPU per session", cost, "", "", ""))
        if "handle_url" in figures:
            where = " (started on A, handled on B)" if key == "postgres_2" else ""
            rows.append((f"fleet, {label}: handle-url p50, p99{where}", pair(figures["handle_url"]), "", "", ""))
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
    return rows


class Section:
    """One case's part of the table: its targets (judged on its figures; {} when it did not run, so
    each reads "not measured") and its rows. Another case adds its own with ``SECTIONS.append``."""

    def __init__(self, case: str, targets: Callable[[dict], list[dict]],
                 rows: Callable[[dict, list[dict]], list[Row]]):
        self.case, self.targets, self.rows = case, targets, rows


SECTIONS = [
    Section("ping", _ping_targets, _ping_rows),
    Section("fanout", _fanout_targets, _fanout_rows),
    Section("attack", _attack_targets, _attack_rows),
    Section("idle_subscriptions", _idle_subscriptions_targets, _idle_subscriptions_rows),
    Section("scale", _scale_targets, _scale_rows),
    Section("load", _load_targets, _load_rows),
    Section("create", _create_targets, _create_rows),
    Section("polls", _polls_targets, _polls_rows),
    Section("fleet", _fleet_targets, _fleet_rows),
]


def targets(cases: dict) -> list[dict]:
    """Every section's targets, each judged on this run's figures (None when its case did not run)."""
    return [target for section in SECTIONS for target in section.targets(cases.get(section.case) or {})]


def table(result: dict) -> str:
    cases, found = result["cases"], result["targets"]
    rows: list[Row] = []
    for section in SECTIONS:
        if cases.get(section.case):
            rows += section.rows(cases[section.case], found)
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


BEGIN_MARK = "<!-- bench-table: begin (bench/run.py --doc writes it) -->"
END_MARK = "<!-- bench-table: end -->"


def write_into(path: Path, result: dict) -> None:
    """Replaces what lies between the two markers of PATH with this run's heading and table."""
    text = path.read_text()
    begin, end = text.find(BEGIN_MARK), text.find(END_MARK)
    if begin < 0 or end < begin:
        raise ValueError(f"{path} has no {BEGIN_MARK!r} ... {END_MARK!r}")
    said = "\n\n".join(heading(result).splitlines())
    block = f"{BEGIN_MARK}\n{said}\n\n{table(result)}\n{END_MARK}"
    path.write_text(text[:begin] + block + text[end + len(END_MARK):])


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
