"""Issue 32.2: subscriptions were bounded neither in count nor in bytes (300 `events.subscribe` of
30,000 object ids each took the daemon to 1 GB; one on each of 1,000 connections to 4 GB). Now a
filter holds at most 1,000 ids, 100 types and 64 KiB; a connection and a uid hold a bounded
number of subscriptions, and a uid's filters a bounded number of bytes (TooManySubscriptions,
naming the bound and its setting); another uid keeps its own budget. The cost of many idle
subscriptions on everyone's writes is counted in EventBusIndexTests and timed by the bench
(`idle_subscriptions`)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

from codes import INVALID_PARAMS
from flows import rpc_error, run_as
from stpd import errors
from test_security import OTHER_UID, system_python

TOO_MANY_SUBSCRIPTIONS = errors.TooManySubscriptions.code


@pytest.fixture
def daemon(start_stpd):
    directory = Path(tempfile.mkdtemp(prefix="stpd-subs-"))
    directory.chmod(0o755)
    try:
        yield start_stpd(directory, "--socket-mode", "0666", "--max-subscriptions-per-connection", "3",
                         "--max-subscriptions-per-uid", "5", "--max-subscription-bytes-per-uid", "100000")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def ids(count: int, width: int) -> list[str]:
    return [f"pi_{n:0{width - 3}d}" for n in range(count)]


def test_a_filter_is_bounded_in_ids_types_and_bytes(daemon):
    with daemon.client() as client:
        error = rpc_error(client, "events.subscribe", {"filter": {"objects": ids(30_000, 24)}})
        assert error.code == INVALID_PARAMS and error.data == {"parameter": "filter.objects", "maxItems": 1000}
        error = rpc_error(client, "events.subscribe", {"filter": {"objects": ids(1000, 70)}})
        assert error.code == INVALID_PARAMS and error.data == {"parameter": "filter", "maxBytes": 65536}, error
        assert "70000 bytes" in error.message
        assert client.call("events.subscribe", {"filter": {"objects": ids(1000, 60)}})["subscription"]


def test_subscriptions_are_bounded_per_connection_and_per_uid(daemon):
    python = system_python()
    first, second = daemon.client(), daemon.client()
    try:
        made = [first.call("events.subscribe", {})["subscription"] for _ in range(3)]
        error = rpc_error(first, "events.subscribe", {})
        assert error.code == TOO_MANY_SUBSCRIPTIONS, error
        assert error.data == {"scope": "connection", "limit": 3, "setting": "STPD_MAX_SUBSCRIPTIONS_PER_CONNECTION"}
        second.call("events.subscribe", {})
        second.call("events.subscribe", {})
        error = rpc_error(second, "events.subscribe", {})
        assert error.data == {"scope": "user", "limit": 5, "setting": "STPD_MAX_SUBSCRIPTIONS_PER_UID"}, error
        # Another uid has a budget of its own.
        replies = run_as(python, OTHER_UID, daemon.socket_path, [["events.subscribe", {}]] * 4)
        assert all("result" in reply for reply in replies[:3]), replies
        assert replies[3]["error"]["code"] == TOO_MANY_SUBSCRIPTIONS
        # Ending one makes room again, as does closing a connection.
        first.call("events.unsubscribe", {"subscription": made[0]})
        assert second.call("events.subscribe", {})["subscription"]
        first.close()
        third = daemon.client()
        try:
            # The closed connection's subscriptions end as the daemon sees it close.
            for _ in range(100):
                try:
                    third.call("events.subscribe", {})
                    break
                except errors.TooManySubscriptions:
                    time.sleep(0.1)
            else:
                pytest.fail("a closed connection's subscriptions still counted after 10 s")
            third.call("events.subscribe", {})
        finally:
            third.close()
    finally:
        first.close()
        second.close()


def test_a_uids_filters_are_bounded_in_bytes_across_its_connections(daemon):
    clients = [daemon.client() for _ in range(2)]
    try:
        clients[0].call("events.subscribe", {"filter": {"objects": ids(1000, 60)}})
        error = rpc_error(clients[1], "events.subscribe", {"filter": {"objects": ids(1000, 60)}})
        assert error.code == TOO_MANY_SUBSCRIPTIONS, error
        assert error.data == {"scope": "user", "maxBytes": 100000, "setting": "STPD_MAX_SUBSCRIPTION_BYTES_PER_UID"}
        assert clients[1].call("events.subscribe", {"filter": {"objects": ids(100, 60)}})["subscription"]
    finally:
        for client in clients:
            client.close()
