"""Socket activation without a service manager: the test binds the listening sockets and
passes them as PID 1 does (fds from 3, LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID)."""

from __future__ import annotations

import os
import select
import stat


def first_status(daemon, socket_path):
    from rpc import Client
    with Client(str(socket_path), checker=daemon.checker) as client:
        return client.call("daemon.status")


def test_picks_the_socket_named_stpd(start_stpd, tmp_path):
    other, ours = tmp_path / "other.sock", tmp_path / "ours.sock"
    daemon = start_stpd(tmp_path, activate=[(other, "other"), (ours, "stpd")])
    status = first_status(daemon, ours)
    assert status["activation"] == "socket"
    assert status["socketPath"] == str(ours)
    assert status["pid"] == daemon.pid


def test_listen_fd_name_option(start_stpd, tmp_path):
    default, custom = tmp_path / "default.sock", tmp_path / "custom.sock"
    daemon = start_stpd(tmp_path, "--listen-fd-name", "custom-rpc",
                        activate=[(default, "stpd"), (custom, "custom-rpc")])
    assert first_status(daemon, custom)["socketPath"] == str(custom)


def test_sigterm_when_activated_exits_0_and_leaves_the_socket(start_stpd, tmp_path):
    path = tmp_path / "stpd.sock"
    daemon = start_stpd(tmp_path, activate=[(path, "stpd")])
    assert first_status(daemon, path)["activation"] == "socket"
    code = daemon.terminate()
    assert code == 0, f"socket-activated stpd exited {code} on SIGTERM\n--- log:\n{daemon.log()}"
    assert "STOPPING=1" in "\n".join(daemon.notify_messages()).split("\n")
    # The socket belongs to whoever passed it (systemd): stpd must not unlink it.
    assert stat.S_ISSOCK(os.stat(path).st_mode)


def test_exits_when_idle(start_stpd, tmp_path):
    path = tmp_path / "stpd.sock"
    daemon = start_stpd(tmp_path, "--idle-timeout", "1", activate=[(path, "stpd")])
    first_status(daemon, path)  # the client disconnects: from now on nothing needs stpd
    daemon.wait_notify("STOPPING=1", timeout=30)
    code = daemon.wait_exit()
    assert code == 0, f"idle exit status {code}\n--- log:\n{daemon.log()}"
    assert stat.S_ISSOCK(os.stat(path).st_mode)


def test_no_idle_exit_when_it_bound_the_socket_itself(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path, "--idle-timeout", "1")
    with daemon.client() as client:
        client.call("daemon.ping")
    # Nothing is connected now. Proving that something does NOT happen needs a bounded wait:
    # block on the process's exit (pidfd) for well over the idle timeout.
    pidfd = os.pidfd_open(daemon.pid)
    try:
        exited, _, _ = select.select([pidfd], [], [], 3.0)
    finally:
        os.close(pidfd)
    assert not exited, f"stpd exited on idle although it bound its socket itself\n{daemon.log()}"
    with daemon.client() as client:
        assert client.call("daemon.ping")["pong"] is True
