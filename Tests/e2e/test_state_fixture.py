"""A database written by the release before the domain's records got types of their own
(Tests/Fixtures/state-0.1.0, made by scripts/make-state-fixture; state_fixture.py says how)
opens in today's stpd: it migrates, and every kind reads back through the API as it did, with
every event of the log. Today's answers may hold members the old ones did not; none may be
missing or changed.
"""

from __future__ import annotations

import os

import pytest

from state_fixture import FIXTURES, LISTS, RELEASE, copy_state, expected, missing_from, read_events, read_views

FIXTURE = FIXTURES / f"state-{RELEASE}"


@pytest.fixture
def old_state(start_stpd, tmp_path):
    want = expected(FIXTURE)
    if os.getuid() not in (0, want["uid"]):
        # Objects answer their creator's uid only (and root's).
        pytest.skip(f"the fixture's objects belong to uid {want['uid']}: run as it or as root")
    copy_state(FIXTURE, tmp_path / "stpd" / "state")
    daemon = start_stpd(tmp_path / "stpd")
    return daemon, want


def test_every_kind_reads_back_as_the_release_before_stored_it(old_state):
    daemon, want = old_state
    client = daemon.client()
    views = read_views(client, want["ids"])
    for kind, old_views in want["views"].items():
        assert old_views, f"the fixture holds no {kind}"
        for old, new in zip(old_views, views[kind]):
            assert not missing_from(old, new), (kind, old["id"], missing_from(old, new))


def test_every_kind_lists_as_it_did(old_state):
    daemon, want = old_state
    client = daemon.client()
    for kind, method in LISTS.items():
        listed = client.call(method, {"limit": 100})
        (objects,) = [value for value in listed.values() if isinstance(value, list)]
        assert sorted(o["id"] for o in objects) == sorted(want["ids"][kind]), (kind, listed)


def test_the_event_log_reads_back_whole(old_state):
    daemon, want = old_state
    events = read_events(daemon.client())
    old = want["events"]
    kinds = {event["type"].split(".")[0] for event in old}
    # Every kind stored appears in the log, the app request and customer preference included.
    assert {"appRequest", "customer", "paymentContext", "source", "redirect", "paymentIntent",
            "setupIntent"} <= kinds, kinds
    # The restart may append events (none expected: nothing was left to resume), never change one.
    assert not missing_from(old, events[:len(old)])
