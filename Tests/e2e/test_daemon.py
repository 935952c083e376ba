"""stpd end to end over its real Unix socket: the wire contract (design.md section 2) and the
socket handling when stpd binds the socket itself (section 5)."""

from __future__ import annotations

import datetime
import json
import os
import socket
import stat

import pytest

from rpc import Client, RpcError, encode


@pytest.fixture
def daemon(start_stpd, tmp_path):
    return start_stpd(tmp_path)


@pytest.fixture
def client(daemon):
    with daemon.client() as c:
        yield c


# -- methods -----------------------------------------------------------------------------------

def test_ping(client):
    result = client.call("daemon.ping")
    assert result["pong"] is True
    assert isinstance(result["version"], str) and result["version"]


def test_status(daemon, client):
    status = client.call("daemon.status")
    assert status["activation"] == "bound"
    assert status["pid"] == daemon.pid
    assert status["socketPath"] == str(daemon.socket_path)
    assert status["stateDirectory"] == str(daemon.state_dir)
    assert status["connections"] >= 1
    assert status["uptimeSeconds"] >= 0
    assert status["version"] == client.call("daemon.ping")["version"]
    started = datetime.datetime.fromisoformat(status["startedAt"])
    assert started.tzinfo is not None, f"startedAt has no UTC offset: {status['startedAt']}"
    assert started <= datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=5)


def test_status_counts_connections(daemon, client):
    with daemon.client() as second:
        second.call("daemon.ping")
        assert client.call("daemon.status")["connections"] >= 2


def test_discover_returns_the_committed_contract(client, contract):
    assert client.call("rpc.discover") == contract


# -- framing, pipelining, batches ----------------------------------------------------------------

def test_pipelined_requests_in_one_write(client):
    calls = [("daemon.ping", None), ("daemon.status", None), ("rpc.discover", None),
             ("daemon.ping", {}), ("daemon.status", {})] * 4
    messages = [client.request_message(method, params) for method, params in calls]
    messages.append(client.request_message("daemon.ping", id="text-id"))
    client.send_raw(b"".join(encode(m) for m in messages))
    methods = {m["id"]: m["method"] for m in messages}
    for message_id, method in methods.items():
        result = client.result(client.wait_reply(message_id))
        if method == "daemon.ping":
            assert result["pong"] is True
        elif method == "daemon.status":
            assert result["activation"] == "bound"
        else:
            assert result["openrpc"]


def test_requests_split_across_writes(client):
    frame = encode(client.request_message("daemon.ping", id=7))
    for i in range(len(frame)):
        client.send_raw(frame[i:i + 1])
    assert client.result(client.wait_reply(7))["pong"] is True


def test_batch(client):
    members = [client.request_message("daemon.ping"), client.request_message("daemon.status"),
               Client.notification_message("daemon.ping")]
    client.send(members)
    reply = client.receive()
    assert isinstance(reply, list), f"a batch gets an array reply, got {reply!r}"
    assert sorted(r["id"] for r in reply) == sorted(m["id"] for m in members[:2])
    by_id = {r["id"]: r for r in reply}
    assert Client.result(by_id[members[0]["id"]])["pong"] is True
    assert Client.result(by_id[members[1]["id"]])["activation"] == "bound"


def test_batch_with_invalid_member(client):
    ping = client.request_message("daemon.ping")
    client.send([ping, 1])
    reply = client.receive()
    assert isinstance(reply, list) and len(reply) == 2, reply
    by_id = {json.dumps(r["id"]): r for r in reply}
    assert Client.result(by_id[json.dumps(ping["id"])])["pong"] is True
    assert by_id["null"]["error"]["code"] == -32600


def test_empty_batch_is_an_invalid_request(client):
    client.send_raw(b"[]\n")
    reply = client.receive()
    assert isinstance(reply, dict), f"an empty batch gets one error object, not an array: {reply!r}"
    assert reply["id"] is None
    assert reply["error"]["code"] == -32600


def test_all_notification_batch_gets_no_reply(client):
    # No reply can be proved without waiting: whatever the daemon sends must come before the
    # reply to the request that follows, so the first thing read must be that reply.
    client.send([Client.notification_message("daemon.ping"), Client.notification_message("daemon.status")])
    after = client.request_message("daemon.ping", id="after-batch")
    client.send(after)
    first = client.receive()
    assert isinstance(first, dict) and first.get("id") == "after-batch", \
        f"the notification batch was answered: {first!r}"


def test_notification_gets_no_reply(client):
    client.notify("daemon.ping")
    client.notify("no.such.method")  # not even an error for an unknown method
    client.send(client.request_message("daemon.ping", id="after"))
    first = client.receive()
    assert isinstance(first, dict) and first.get("id") == "after", f"a notification was answered: {first!r}"


# -- errors --------------------------------------------------------------------------------------

def test_invalid_json_is_a_parse_error(client):
    client.send_raw(b'{"jsonrpc":"2.0","id":1,"method":\n')
    reply = client.receive()
    assert reply["id"] is None
    assert reply["error"]["code"] == -32700


def test_connection_survives_a_parse_error(client):
    client.send_raw(b"this is not json\n")
    assert client.receive()["error"]["code"] == -32700
    assert client.call("daemon.ping")["pong"] is True


def test_invalid_request(client):
    client.send_raw(b'{"jsonrpc":"2.0","id":5,"method":42}\n')
    reply = client.receive()
    assert reply["error"]["code"] == -32600
    assert reply["id"] in (5, None)


def test_unknown_method(client):
    client.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"no.such"}\n')
    reply = client.receive()
    assert reply["id"] == 1
    assert reply["error"]["code"] == -32601


def test_bad_params_name_the_parameter(client):
    with pytest.raises(RpcError) as caught:
        client.call("daemon.ping", {"x": 1})
    assert caught.value.code == -32602
    assert isinstance(caught.value.data, dict) and caught.value.data.get("parameter") == "x", caught.value.data


def test_frame_over_the_limit_gets_an_error_then_eof(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path, "--max-frame-bytes", "1024")
    with daemon.client() as small:
        assert small.call("daemon.ping")["pong"] is True  # below the limit: fine
    with daemon.client() as client:
        prefix = b'{"jsonrpc":"2.0","id":1,"method":"daemon.ping","params":{"pad":"'
        suffix = b'"}}'
        frame = prefix + b"x" * (2000 - len(prefix) - len(suffix)) + suffix
        assert len(frame) == 2000
        client.send_raw(frame + b"\n")
        reply = client.receive()
        assert reply is not None, "the connection closed without an error reply"
        assert reply["id"] is None
        assert isinstance(reply["error"]["code"], int)
        assert client.at_eof(), "the connection stayed open after the oversized frame"
    with daemon.client() as after:
        assert after.call("daemon.ping")["pong"] is True  # the daemon itself carries on


# -- the socket --------------------------------------------------------------------------------

def socket_mode(path) -> int:
    info = os.stat(path)
    assert stat.S_ISSOCK(info.st_mode), f"{path} is not a socket"
    return stat.S_IMODE(info.st_mode)


def test_socket_mode_defaults_to_0600(daemon):
    assert oct(socket_mode(daemon.socket_path)) == oct(0o600)


def test_socket_mode_option(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path, "--socket-mode", "0660")
    assert oct(socket_mode(daemon.socket_path)) == oct(0o660)


def test_environment_configures_socket_and_state(start_stpd, tmp_path):
    socket_path = tmp_path / "env.sock"
    state_dir = tmp_path / "env-state"
    daemon = start_stpd(tmp_path, default_args=False,
                        env={"STPD_SOCKET": str(socket_path), "STPD_STATE_DIR": str(state_dir),
                             "STPD_SOCKET_MODE": "0660"})
    with daemon.client() as client:
        status = client.call("daemon.status")
    assert status["socketPath"] == str(socket_path)
    assert status["stateDirectory"] == str(state_dir)
    assert oct(socket_mode(socket_path)) == oct(0o660)


def test_state_directory_from_systemd(start_stpd, tmp_path):
    state_dir = tmp_path / "from-systemd"
    state_dir.mkdir(mode=0o700)
    daemon = start_stpd(tmp_path, "--socket", str(tmp_path / "stpd.sock"), default_args=False,
                        env={"STATE_DIRECTORY": str(state_dir)})
    with daemon.client() as client:
        assert client.call("daemon.status")["stateDirectory"] == str(state_dir)


def test_state_directory_defaults_to_xdg_state_home(start_stpd, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    daemon = start_stpd(tmp_path, "--socket", str(tmp_path / "stpd.sock"), default_args=False,
                        env={"XDG_STATE_HOME": str(tmp_path / "xdg")})
    with daemon.client() as client:
        assert client.call("daemon.status")["stateDirectory"] == str(tmp_path / "xdg" / "stpd")
    assert daemon.terminate() == 0
    if os.geteuid() == 0:
        return  # root's default is /var/lib/stpd: not something a test should write to
    # Without XDG_STATE_HOME, the XDG default ~/.local/state applies.
    env = {"HOME": str(home), "XDG_STATE_HOME": None}
    daemon = start_stpd(tmp_path / "no-xdg", "--socket", str(tmp_path / "stpd2.sock"), default_args=False, env=env)
    with daemon.client() as client:
        assert client.call("daemon.status")["stateDirectory"] == str(home / ".local" / "state" / "stpd")


def test_second_daemon_on_the_same_socket_fails(start_stpd, tmp_path):
    first = start_stpd(tmp_path / "first")
    second = start_stpd(tmp_path / "second", "--socket", str(first.socket_path), wait_ready=False)
    code = second.wait_exit()
    assert code != 0, "a second stpd started on a socket another stpd serves"
    assert "another daemon" in second.log().lower(), f"unclear message:\n{second.log()}"
    assert "READY=1" not in "\n".join(second.notify_messages()).split("\n")
    # The first one is untouched.
    assert first.proc.poll() is None
    assert stat.S_ISSOCK(os.stat(first.socket_path).st_mode)
    with first.client() as client:
        assert client.call("daemon.status")["pid"] == first.pid


def test_stale_socket_file_is_replaced(start_stpd, tmp_path):
    path = tmp_path / "stpd.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    with pytest.raises(ConnectionRefusedError):
        Client(str(path))
    daemon = start_stpd(tmp_path)
    with daemon.client() as client:
        assert client.call("daemon.status")["pid"] == daemon.pid


def test_socket_path_too_long_is_refused(start_stpd, tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = deep / "stpd.sock"
    assert len(os.fsencode(path)) > 108
    daemon = start_stpd(tmp_path, "--socket", str(path), wait_ready=False)
    code = daemon.wait_exit()
    assert code != 0
    log = daemon.log()
    assert "long" in log.lower() and str(path) in log, f"unclear message:\n{log}"
    assert not path.exists()


def test_sigterm_exits_0_and_removes_the_socket(daemon, client):
    client.call("daemon.ping")  # with a client connected
    assert daemon.socket_path.exists()
    assert daemon.terminate() == 0
    assert not daemon.socket_path.exists(), "the socket file is left behind"
    assert "STOPPING=1" in "\n".join(daemon.notify_messages()).split("\n"), daemon.notifications
    assert client.at_eof()


def test_pings_the_watchdog_when_systemd_asks(start_stpd, tmp_path):
    # systemd sets WATCHDOG_USEC (and WATCHDOG_PID, optional) for WatchdogSec=; 0.2 s -> pings at 0.1 s.
    daemon = start_stpd(tmp_path, env={"WATCHDOG_USEC": "200000"})
    daemon.wait_notify("WATCHDOG=1", timeout=10)
    daemon.notify_messages()
    daemon.notifications.clear()
    daemon.wait_notify("WATCHDOG=1", timeout=10)  # and keeps pinging


def test_no_watchdog_pings_without_a_watchdog(daemon):
    daemon.client().call("daemon.ping")
    assert not any("WATCHDOG=1" in m.split("\n") for m in daemon.notify_messages())


def test_sends_status_to_the_service_manager(daemon):
    messages = "\n".join(daemon.notify_messages()).split("\n")
    assert any(line.startswith("STATUS=") and len(line) > len("STATUS=") for line in messages), messages


# -- notifications -------------------------------------------------------------------------------

def test_event_notifications_match_the_contract(start_stpd, tmp_path, checker):
    daemon = start_stpd(tmp_path, "--debug-methods")
    with daemon.client() as client:
        subscription = client.call("events.subscribe", {})["subscription"]
        emitted = client.call("debug.emit", {"count": 3, "payload": {"n": 1}})
        seqs = []
        while len(seqs) < 3:
            message = client.next_notification()
            assert message["method"] == "event", message
            assert message["params"]["subscription"] == subscription
            seqs.append(message["params"]["seq"])
        assert seqs == list(range(emitted["firstSeq"], emitted["lastSeq"] + 1))
    # Every one of them went through the contract check (x-notifications params schema).
    assert checker.seen.count(("notification", "event")) >= 3
