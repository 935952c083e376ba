"""A state directory written by an earlier stpd, kept under Tests/Fixtures/state-VERSION/, and
the reading back of it (test_state_fixture.py).

``scripts/make-state-fixture`` runs ``make_state_fixture.py``, which drives the stpd of the
build at hand against the stripe-test-server until it has stored one object of every kind,
then stops it and copies its database and state key here with ``expected.json``: what every
kind's get (and the event log) answered before the stop. A later stpd must open that
database, migrate it, and answer the same: its stored forms are a promise to every installed
daemon, whatever becomes of the contract's views.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from rpc import Client

FIXTURES = Path(__file__).resolve().parent.parent / "Fixtures"
# The release whose database the test opens: the last one before the domain's records got types
# of their own (issue 30). A new fixture is made only when a release changes the stored forms.
RELEASE = "0.1.0"
FILES = ("stpd.sqlite", "state-key")

# Each kind's get, by its id: (method, the params naming the object).
GETS: dict[str, tuple[str, str]] = {
    "customerSession": ("customer.get", "session"),
    "source": ("source.get", "id"),
    "redirect": ("redirect.get", "session"),
    "paymentIntent": ("paymentIntent.get", "id"),
    "setupIntent": ("setupIntent.get", "id"),
    "paymentContext": ("paymentContext.get", "context"),
}
LISTS = {"customerSession": "customer.list", "source": "source.list", "redirect": "redirect.list",
         "paymentIntent": "paymentIntent.list", "setupIntent": "setupIntent.list",
         "paymentContext": "paymentContext.list"}


def read_views(client: Client, ids: dict[str, list[str]]) -> dict[str, list[dict]]:
    """Every object of IDS ({kind: [id]}) as its kind's get answers it."""
    views: dict[str, list[dict]] = {}
    for kind, (method, name) in GETS.items():
        views[kind] = [client.call(method, {name: object_id}) for object_id in ids.get(kind, [])]
    return views


def read_events(client: Client, limit: int = 500) -> list[dict]:
    """The whole event log, oldest first (at most LIMIT events, in pages of 100)."""
    events: list[dict] = []
    after = 0
    for _ in range(limit // 100 + 1):
        page = client.call("events.wait", {"since": after, "limit": 100, "timeout": 0})
        events += page["events"]
        if not page["events"]:
            break
        after = page["events"][-1]["seq"]
    return events


def missing_from(old: Any, new: Any, path: str = "") -> list[str]:
    """Where NEW does not hold what OLD held: every member of an old object must be in the new
    one with the same value (a newer stpd may add members, never lose or change one)."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{path or '.'}: {new!r} is no object"]
        found: list[str] = []
        for key, value in old.items():
            if key not in new:
                found.append(f"{path}.{key}: missing")
            else:
                found += missing_from(value, new[key], f"{path}.{key}")
        return found
    if isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            return [f"{path or '.'}: {new!r} is not a list of {len(old)}"]
        return [line for index, item in enumerate(old) for line in missing_from(item, new[index], f"{path}[{index}]")]
    return [] if old == new else [f"{path or '.'}: {old!r} became {new!r}"]


def copy_state(source: Path, target: Path) -> None:
    """The state directory as stpd wants it: 0700, its files 0600 and the daemon's own."""
    target.mkdir(parents=True, exist_ok=True)
    os.chmod(target, 0o700)
    for name in FILES:
        shutil.copyfile(source / name, target / name)
        os.chmod(target / name, 0o600)


def expected(directory: Path) -> dict:
    return json.loads((directory / "expected.json").read_text())
