"""Exit on idle under a real (private) systemd user manager, with the user units from
systemd/user/ (design.md section 5): a socket-activated stpd that nothing needs exits by itself,
cleanly; systemd keeps the socket; the next client starts it again with its state (the event
log) intact. A held connection keeps it running.

The manager and the unit installation are those of Tests/e2e/test_systemd_user.py (fixture
`user_manager`, `install_user_units`: ExecStart rewritten to the built stpd, everything else of
the unit kept, stpd's output kept for failure reports).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rpc import Client
from test_systemd_user import TIMEOUT, install_user_units, runs, user_manager  # noqa: F401 (fixture)

IDLE_TIMEOUT = 2  # seconds, passed as --idle-timeout


@pytest.fixture
def activated(user_manager, stpd_bin):
    """The user units installed with `--idle-timeout 2 --debug-methods`, stpd.socket started;
    returns (manager, socket path)."""
    install_user_units(user_manager, stpd_bin, "--idle-timeout", str(IDLE_TIMEOUT), "--debug-methods")
    user_manager.systemctl("start", "stpd.socket")
    assert user_manager.show("stpd.socket", "ActiveState", "SubState") == \
        {"ActiveState": "active", "SubState": "listening"}
    assert user_manager.show("stpd.service", "ActiveState")["ActiveState"] == "inactive"
    return user_manager, user_manager.runtime / "stpd.sock"


def is_active(manager) -> str:
    return manager.systemctl("is-active", "stpd.service", check=False).stdout.strip()


def wait_until_inactive(manager, timeout: float = 30.0) -> float:
    """Bounded poll of `systemctl --user is-active stpd.service` until it says inactive;
    returns when (time.monotonic()) it was first seen inactive."""
    deadline = time.monotonic() + timeout
    while True:
        state = is_active(manager)
        if state == "inactive":
            return time.monotonic()
        assert state != "failed", f"stpd.service failed\n{manager.status_dump()}"
        assert time.monotonic() < deadline, \
            f"stpd.service still {state!r} {timeout} s after the last client left\n{manager.status_dump()}"
        time.sleep(0.05)


def test_exits_when_idle_and_comes_back_with_its_events(activated, stpd_bin, checker):
    manager, socket_path = activated

    # The first client starts the service, writes events and leaves.
    with Client(str(socket_path), timeout=TIMEOUT, checker=checker) as client:
        first = client.call("daemon.status")
        assert first["activation"] == "socket"
        emitted = client.call("debug.emit", {"count": 5, "objectId": "dbg_idle", "payload": {"kept": True}})
        assert emitted == {"firstSeq": 1, "lastSeq": 5}
        assert manager.show("stpd.service", "MainPID")["MainPID"] == str(first["pid"])
    left = time.monotonic()

    # With no connection left, stpd exits by itself after the idle timeout (not before), cleanly.
    inactive_at = wait_until_inactive(manager)
    assert inactive_at - left >= IDLE_TIMEOUT - 0.1, \
        f"stpd exited {inactive_at - left:.2f} s after the last client left, before its {IDLE_TIMEOUT} s idle timeout"
    props = manager.show("stpd.service", "ActiveState", "Result", "ExecMainCode", "ExecMainStatus", "NRestarts")
    assert props == {"ActiveState": "inactive", "Result": "success", "ExecMainCode": "1",
                     "ExecMainStatus": "0", "NRestarts": "0"}, \
        f"idle exit was not a clean exit 0 (ExecMainCode 1 = exited): {props}\n{manager.status_dump()}"
    assert not runs(first["pid"], stpd_bin), "the idle stpd is still running"
    # systemd still holds the socket for the next client.
    assert manager.show("stpd.socket", "ActiveState", "SubState") == {"ActiveState": "active", "SubState": "listening"}
    assert socket_path.is_socket()

    # The next client starts it again: a new process, socket-activated, with the events intact.
    with Client(str(socket_path), timeout=TIMEOUT, checker=checker) as client:
        second = client.call("daemon.status")
        assert second["activation"] == "socket"
        assert second["pid"] != first["pid"]
        assert manager.wait_for("stpd.service", "ActiveState", "active")["MainPID"] == str(second["pid"])
        assert second["store"]["latestSeq"] == 5 and second["store"]["oldestSeq"] == 1, second["store"]

        reply = client.call("events.subscribe", {"since": 0})
        assert reply["latestSeq"] == 5
        events = [client.next_notification() for _ in range(5)]
        assert [e["method"] for e in events] == ["event"] * 5
        assert [e["params"]["seq"] for e in events] == [1, 2, 3, 4, 5]
        assert all(e["params"]["objectId"] == "dbg_idle" and e["params"]["object"]["payload"] == {"kept": True}
                   for e in events)
        assert client.call("events.wait", {"since": 0, "timeout": 0})["next"] == 5
        # The seq continues where the first process left it.
        assert client.call("debug.emit", {"objectId": "dbg_idle"}) == {"firstSeq": 6, "lastSeq": 6}

    # And it goes idle again, just as cleanly.
    wait_until_inactive(manager)
    assert manager.show("stpd.service", "Result")["Result"] == "success"
    assert manager.show("stpd.socket", "SubState")["SubState"] == "listening"


def test_an_open_connection_keeps_it_running(activated, stpd_bin, checker):
    manager, socket_path = activated
    with Client(str(socket_path), timeout=TIMEOUT, checker=checker) as client:
        pid = client.call("daemon.status")["pid"]
        manager.wait_for("stpd.service", "ActiveState", "active")
        # Proving that something does NOT happen needs a bounded wait: twice the idle timeout,
        # with the connection open and silent.
        time.sleep(2 * IDLE_TIMEOUT + 0.5)
        assert is_active(manager) == "active", f"stpd exited with a client connected\n{manager.status_dump()}"
        assert manager.show("stpd.service", "MainPID")["MainPID"] == str(pid)
        assert runs(pid, stpd_bin)
        # The held connection is still served by the same process.
        status = client.call("daemon.status")
        assert status["pid"] == pid and status["connections"] == 1
        left = time.monotonic()

    # Once it is closed, the idle timer starts from then.
    inactive_at = wait_until_inactive(manager)
    assert inactive_at - left >= IDLE_TIMEOUT - 0.1, f"exited {inactive_at - left:.2f} s after the close"
    assert manager.show("stpd.service", "Result")["Result"] == "success"


def test_a_running_poll_keeps_it_running_and_a_restart_keeps_its_result(user_manager, stpd_bin, checker,
                                                                       stripe_test_server, tmp_path):
    """A Source poll is work that needs the process (design.md section 5): with no client left,
    the socket-activated stpd stays up until the poll ends, then exits on idle; the result is
    there for the next client."""
    from flows import create_source, sofort

    config = tmp_path / "stpd.conf"
    config.write_text(f"STPD_STRIPE_KEY={stripe_test_server.publishable_key}\n")
    config.chmod(0o600)
    install_user_units(user_manager, stpd_bin, "--idle-timeout", str(IDLE_TIMEOUT), "--config", str(config),
                       "--stripe-api-base", stripe_test_server.base_url, "--allow-insecure-stripe-base")
    user_manager.systemctl("start", "stpd.socket")
    socket_path = user_manager.runtime / "stpd.sock"
    poll_seconds = 3 * IDLE_TIMEOUT
    with Client(str(socket_path), timeout=TIMEOUT, checker=checker) as client:
        pid = client.call("daemon.status")["pid"]
        source, _ = create_source(client, sofort("myshop://stripe-redirect"))
        polled = client.call("source.poll", {"id": source["id"], "timeout": poll_seconds})
        assert polled["poll"]["status"] == "polling"
    # Proving that something does NOT happen needs a bounded wait: past the idle timeout, well
    # before the poll's end (the source stays pending, so only the timeout ends it).
    time.sleep(IDLE_TIMEOUT + 1.5)
    assert is_active(user_manager) == "active", f"stpd exited with a poll running\n{user_manager.status_dump()}"
    assert user_manager.show("stpd.service", "MainPID")["MainPID"] == str(pid)

    wait_until_inactive(user_manager, timeout=poll_seconds + 30)
    assert user_manager.show("stpd.service", "Result")["Result"] == "success"
    with Client(str(socket_path), timeout=TIMEOUT, checker=checker) as client:
        poll = client.call("source.get", {"id": source["id"]})["poll"]
        assert poll["status"] == "finished" and poll["sourceStatus"] == "pending" and poll.get("error") is None, poll
