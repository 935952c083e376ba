"""Issue 11's rows on uid holes, secrets at rest and configuration, against the real binary.

- debug.emit from a second uid cannot write another kind or another uid's object;
- keyProvider server sessions are refused to uids the configuration does not list;
- a copy of the database (and its WAL) holds no bearer token or client secret, and without its
  state key the sealed rows cannot be read;
- a malformed handle-url URL is not echoed;
- configuration mistakes stop the start (or warn) naming the setting and the value.

The cross-uid tests run clients as uid 1001 (root is needed to switch uid) over a 0666 socket in
a world-traversable directory, as test_customers.py does.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from codes import CURSOR_EXPIRED, INVALID_PARAMS, NOT_FOUND, PERMISSION_DENIED
from flows import Events, bank_page, create_source, run_as, sofort, stpd_for
from rpc import RpcError

OTHER_UID = 1001
RETURN_URL = "myapp://stripe-redirect/done?order=11"


def system_python() -> str:
    if os.geteuid() != 0:
        pytest.skip("needs root to run a client as another uid")
    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    if python is None:
        pytest.skip("no system python3 that another uid can run")
    return python


@pytest.fixture
def shared_socket():
    """A socket path another uid can reach (the test's tmp_path is root-only)."""
    directory = Path(tempfile.mkdtemp(prefix="stpd-sec-"))
    directory.chmod(0o755)
    yield directory / "stpd.sock"
    shutil.rmtree(directory, ignore_errors=True)


def error_of(reply: dict) -> dict:
    assert "error" in reply, reply
    return reply["error"]


# -- debug.emit ------------------------------------------------------------------------------

def test_debug_emit_writes_only_the_callers_own_debug_objects(start_stpd, tmp_path, shared_socket):
    python = system_python()
    args = ("--socket", str(shared_socket), "--socket-mode", "0666", "--debug-methods")
    daemon = start_stpd(tmp_path / "stpd", *args)
    root = daemon.client()
    session = root.call("customer.open", {"adapter": {"kind": "app"}, "prefetch": False})
    sid = session["id"]
    root.call("debug.emit", {"objectId": "dbg_root", "payload": {"owner": "root"}})

    root.call("debug.emit", {"objectId": f"dbg_{OTHER_UID}_planted"})
    theirs_id = f"dbg_{OTHER_UID}_theirs"
    replies = run_as(python, OTHER_UID, shared_socket, [
        ["debug.emit", {"objectId": sid}],
        ["debug.emit", {"objectId": "dbg_root", "payload": {"owner": "1001"}}],
        ["debug.emit", {"objectId": theirs_id, "count": 2}],
        ["debug.emit", {}],
        ["debug.emit", {"objectId": "dbg_nobodys"}],
        ["debug.emit", {"objectId": f"dbg_{OTHER_UID}_planted"}],
    ])
    # Another kind's id is not a debug id at all. Outside its own dbg_1001_ names the caller is
    # refused alike whether the id exists (root's dbg_root) or not (issue 24.5: no oracle).
    assert error_of(replies[0])["code"] == INVALID_PARAMS and error_of(replies[0])["data"]["parameter"] == "objectId"
    assert error_of(replies[1]) == error_of(replies[4]), replies
    assert error_of(replies[1])["code"] == INVALID_PARAMS, replies[1]
    assert replies[2]["result"]["lastSeq"] == replies[2]["result"]["firstSeq"] + 1, replies[2]
    assert "result" in replies[3], replies[3]
    # Root chose to plant an object under the caller's names: it is still root's.
    assert error_of(replies[5])["code"] == PERMISSION_DENIED, replies[5]

    # Nothing of root's changed, and no event of uid 1001 landed on root's objects.
    assert root.call("customer.get", {"session": sid}) == session
    events = root.call("events.wait", {"since": 0, "limit": 1000, "timeout": 0})["events"]
    on_roots = [e for e in events if e["objectId"] in (sid, "dbg_root")]
    assert [(e["type"], e["objectId"]) for e in on_roots] == [("customer.opened", sid), ("debug.test", "dbg_root")]
    assert on_roots[1]["object"]["payload"] == {"owner": "root"}
    # The uid's own objects are its own: it sees them, root sees them too.
    theirs = run_as(python, OTHER_UID, shared_socket, [
        ["events.wait", {"since": 0, "limit": 1000, "timeout": 0}]])[0]["result"]["events"]
    assert {e["objectId"] for e in theirs} >= {theirs_id} and sid not in {e["objectId"] for e in theirs}

    # The next start reads every object back (on main, root's overwritten row stopped it).
    assert daemon.terminate() == 0
    restarted = start_stpd(tmp_path / "stpd", *args)
    assert restarted.client().call("customer.get", {"session": sid})["id"] == sid


# -- keyProvider server ------------------------------------------------------------------------

def server_session(customer: str) -> dict:
    return {"adapter": {"kind": "stripe", "keyProvider": {"kind": "server", "customer": customer}}, "prefetch": False}


def test_server_key_sessions_only_for_allowed_uids(start_stpd, tmp_path, shared_socket, stripe_test_server):
    python = system_python()
    server = stripe_test_server
    roots, kiosk = server.create_customer()["id"], server.create_customer()["id"]
    directory = tmp_path / "stpd"

    def start(*extra: str):
        return start_stpd(directory, "--socket", str(shared_socket), "--socket-mode", "0666",
                          "--stripe-api-base", server.base_url, *extra,
                          env={"STPD_STRIPE_KEY": server.secret_key})

    daemon = start()
    [denied] = run_as(python, OTHER_UID, shared_socket, [["customer.open", server_session(roots)]])
    error = error_of(denied)
    assert error["code"] == PERMISSION_DENIED and error["data"]["setting"] == "STPD_SERVER_KEY_UIDS", error
    assert error["data"]["uid"] == OTHER_UID
    # Root may (it can read the key anyway).
    assert daemon.client().call("customer.open", server_session(roots))["status"] == "open"
    assert daemon.terminate() == 0

    # A listed customer is open to every uid; the others stay closed.
    daemon = start("--server-key-customers", kiosk)
    allowed, other = run_as(python, OTHER_UID, shared_socket, [
        ["customer.open", server_session(kiosk)], ["customer.open", server_session(roots)]])
    assert allowed["result"]["status"] == "open", allowed
    assert error_of(other)["code"] == PERMISSION_DENIED
    assert daemon.terminate() == 0

    # A listed uid may open any customer, until it is taken off the list: after the restart its
    # session is refused as well.
    daemon = start("--server-key-uids", str(OTHER_UID))
    [opened] = run_as(python, OTHER_UID, shared_socket, [["customer.open", server_session(roots)]])
    session = opened["result"]["id"]
    assert daemon.terminate() == 0
    start()
    [retrieved] = run_as(python, OTHER_UID, shared_socket, [["customer.retrieve", {"session": session}]])
    assert error_of(retrieved)["code"] == PERMISSION_DENIED, retrieved


# -- secrets at rest ---------------------------------------------------------------------------

def store_secrets(start_stpd, directory: Path, server) -> tuple[object, dict[str, str]]:
    """stpd holding a backend session with a bearer token, and a Source whose client secret sits in
    its object, its redirect URL and the return URL that completed its redirect session."""
    daemon = stpd_for(start_stpd, directory, server)
    client = daemon.client()
    token = "t0ken" + secrets.token_hex(16)
    session = client.call("customer.open", {"adapter": {
        "kind": "backend", "url": "http://127.0.0.1:9/api", "authorization": f"Bearer {token}"}, "prefetch": False})
    events = Events(daemon.client(), ["redirect.*"])
    source, client_secret = create_source(client, sofort(RETURN_URL))
    started = client.call("redirect.create", {"source": {"id": source["id"]}, "followUpTimeout": 1})
    started = client.call("redirect.start", {"session": started["id"]})
    location = bank_page(started["openURL"], "authorize")
    assert client_secret in location
    assert client.call("handle-url", {"url": location})["handled"] is True
    events.wait("redirect.outcome", started["id"])
    return daemon, {"token": token, "client secret": client_secret, "session": session["id"]}


def leaked(state_dir: Path, values: dict[str, str]) -> list[str]:
    found = []
    for name in ("stpd.sqlite", "stpd.sqlite-wal"):
        path = state_dir / name
        if path.exists():
            data = path.read_bytes()
            found += [f"{what} in {name}" for what, value in values.items() if what != "session"
                      and value.encode() in data]
    return found


def test_a_copied_database_holds_no_token_or_client_secret(start_stpd, tmp_path, stripe_test_server):
    daemon, values = store_secrets(start_stpd, tmp_path / "stpd", stripe_test_server)
    state = daemon.state_dir
    # A copy taken while stpd runs (the WAL holds the latest pages), then one after it stopped.
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("stpd.sqlite", "stpd.sqlite-wal"):
        if (state / name).exists():
            shutil.copy(state / name, copy / name)
    assert leaked(copy, values) == []
    assert daemon.terminate() == 0
    assert leaked(state, values) == []
    # The key that seals them is beside the database, private, and not in it.
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    key = state / "state-key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_text().strip().encode() not in (state / "stpd.sqlite").read_bytes()
    assert "secrets at rest are sealed" in daemon.log()


def test_with_another_key_the_rows_are_set_aside_kept_and_recovered(start_stpd, stpd_bin, tmp_path,
                                                                     stripe_test_server):
    directory = tmp_path / "stpd"
    daemon, values = store_secrets(start_stpd, directory, stripe_test_server)
    assert daemon.terminate() == 0
    old_key = tmp_path / "old-state-key"
    shutil.copy(daemon.state_dir / "state-key", old_key)
    (daemon.state_dir / "state-key").write_text(secrets.token_hex(32) + "\n")

    restarted = stpd_for(start_stpd, directory, stripe_test_server)
    client = restarted.client()
    # The sealed objects are set aside (counted, never served); the events they sealed are out of
    # reach as if pruned, so an old cursor gets CursorExpired rather than an error. Nothing is deleted.
    with pytest.raises(RpcError) as caught:
        client.call("customer.get", {"session": values["session"]})
    assert caught.value.code == NOT_FOUND
    assert client.call("source.list", {})["sources"] == []
    assert client.call("daemon.status")["store"]["setAside"] >= 3
    log = restarted.log()
    kept = re.search(r"the events through seq (\d+) are sealed with another state key: kept", log)
    assert kept, log
    latest = int(kept.group(1))
    with pytest.raises(RpcError) as caught:
        client.call("events.wait", {"since": 0, "timeout": 0})
    assert caught.value.code == CURSOR_EXPIRED and caught.value.data["oldestSeq"] == latest + 1
    assert client.call("events.wait", {"since": latest, "timeout": 0})["events"] == []
    # Each object is named in the log with why, and the new key serves new objects.
    assert re.search(r"\b(cses|src|rdr)_\w+: its state is sealed with state key \w+, but the daemon's", log), log
    assert values["token"] not in log and values["client secret"] not in log
    assert client.call("customer.open", {"adapter": {"kind": "app"}, "prefetch": False})["status"] == "open"
    assert restarted.terminate() == 0

    # The old key found again: `--recover-with-key` re-seals its rows with the current key.
    done = subprocess.run([str(stpd_bin), "--recover-with-key", str(old_key), "--state-dir", str(restarted.state_dir),
                           "--config", "/dev/null"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and re.search(r"re-sealed [1-9]\d* objects and \d+ events", done.stdout), done
    again = stpd_for(start_stpd, directory, stripe_test_server).client()
    assert again.call("customer.get", {"session": values["session"]})["id"] == values["session"]
    assert again.call("daemon.status")["store"]["setAside"] == 0
    replayed = again.call("events.wait", {"since": 0, "limit": 1000, "timeout": 0})["events"]
    assert replayed[0]["seq"] == 1 and any(e["objectId"] == values["session"] for e in replayed)


def recover_with(stpd_bin, key_file: Path, state_dir: Path, *args: str):
    return subprocess.run([str(stpd_bin), "--recover-with-key", str(key_file), "--state-dir", str(state_dir),
                           "--config", "/dev/null", *args], capture_output=True, text=True, timeout=60)


def test_a_recovery_changes_nothing_it_should_not(start_stpd, stpd_bin, tmp_path, stripe_test_server):
    """Issue 32.5: a recovery with an unrelated key re-sealed 0 rows but reset the log's start, and
    `events.wait {since: 0}` then answered -32603 on every call and a subscription from 0 never
    delivered; a recovery with no state key made one; the key file given was read when another
    user owned it, mode 0666. Now a no-op recovery changes nothing, none makes a key, and the key
    file passes the configuration's file-trust rules."""
    directory = tmp_path / "stpd"
    daemon, values = store_secrets(start_stpd, directory, stripe_test_server)
    assert daemon.terminate() == 0
    state = daemon.state_dir
    key = state / "state-key"
    (state / "state-key").write_text(secrets.token_hex(32) + "\n")

    # An unrelated key: nothing re-sealed, and nothing else changed.
    unrelated = tmp_path / "unrelated-key"
    unrelated.write_text(secrets.token_hex(32) + "\n")
    unrelated.chmod(0o600)
    done = recover_with(stpd_bin, unrelated, state)
    assert done.returncode == 0 and "re-sealed 0 objects and 0 events" in done.stdout, done
    restarted = stpd_for(start_stpd, directory, stripe_test_server)
    client = restarted.client()
    kept = re.search(r"the events through seq (\d+) are sealed with another state key: kept", restarted.log())
    latest = int(kept.group(1))
    for _ in range(3):
        with pytest.raises(RpcError) as caught:
            client.call("events.wait", {"since": 0, "timeout": 0})
        assert caught.value.code == CURSOR_EXPIRED and caught.value.data["oldestSeq"] == latest + 1, caught.value
    assert client.call("events.wait", {"since": latest, "timeout": 0})["events"] == []
    with pytest.raises(RpcError) as caught:
        client.call("events.subscribe", {"since": 0})
    assert caught.value.code == CURSOR_EXPIRED, caught.value
    events = Events(restarted.client(), ["customer.*"], since=latest)
    opened = client.call("customer.open", {"adapter": {"kind": "app"}, "prefetch": False})
    assert events.wait("customer.opened", opened["id"])["seq"] > latest
    assert "failed:" not in restarted.log()
    assert restarted.terminate() == 0

    # No key, a wrong one given: refused, and no key file made.
    current = key.read_bytes()
    key.unlink()
    done = recover_with(stpd_bin, unrelated, state)
    assert done.returncode != 0 and "never creates one" in done.stderr, done
    assert not key.exists()
    key.write_bytes(current)
    key.chmod(0o600)

    # A key file others may write to, or that another user owns, is refused, naming why.
    unrelated.chmod(0o666)
    done = recover_with(stpd_bin, unrelated, state)
    assert done.returncode != 0 and "refusing the state key file" in done.stderr and "0666" in done.stderr, done
    unrelated.chmod(0o600)
    os.chown(unrelated, OTHER_UID, OTHER_UID)
    done = recover_with(stpd_bin, unrelated, state)
    assert done.returncode != 0 and f"belongs to uid {OTHER_UID}" in done.stderr, done


def test_a_missing_key_stops_the_start_and_loses_nothing(start_stpd, tmp_path, stripe_test_server):
    """Issue 24.3: with the key file gone, stpd refuses to start (it used to make a new key and
    drop every event); with the key back, everything is there."""
    directory = tmp_path / "stpd"
    daemon, values = store_secrets(start_stpd, directory, stripe_test_server)
    before = daemon.client().call("events.wait", {"since": 0, "limit": 1000, "timeout": 0})["events"]
    assert daemon.terminate() == 0
    key = daemon.state_dir / "state-key"
    saved = key.read_bytes()
    key.unlink()

    output = refused(start_stpd, directory, "--stripe-api-base", stripe_test_server.base_url)
    assert "state key" in output and "is missing" in output and "Put the key back" in output, output
    assert not key.exists(), "no new key was made over the sealed rows"

    key.write_bytes(saved)
    key.chmod(0o600)
    back = stpd_for(start_stpd, directory, stripe_test_server).client()
    assert back.call("customer.get", {"session": values["session"]})["id"] == values["session"]
    after = back.call("events.wait", {"since": 0, "limit": 1000, "timeout": 0})["events"]
    assert [e["seq"] for e in after][:len(before)] == [e["seq"] for e in before]


# -- error replies never echo a URL's query ----------------------------------------------------------

@pytest.mark.parametrize("url", [
    "myshop://stripe redirect?client_secret=zzz_topsecret_123",  # a space: URLComponents refuses it
    "stripe-redirect?client_secret=zzz_topsecret_123",  # no scheme
])
def test_a_malformed_handle_url_is_not_echoed(start_stpd, tmp_path, url):
    daemon = start_stpd(tmp_path / "stpd")
    with pytest.raises(RpcError) as caught:
        daemon.client().call("handle-url", {"url": url})
    assert caught.value.code == INVALID_PARAMS and caught.value.data["parameter"] == "url"
    assert "topsecret" not in json.dumps(caught.value.reply)
    assert "topsecret" not in daemon.log()


# -- configuration ------------------------------------------------------------------------------

def refused(start_stpd, directory: Path, *args: str, env: dict | None = None) -> str:
    """Starts stpd expecting it to stop before READY with exit status 1; returns its output."""
    daemon = start_stpd(directory, *args, env=env, wait_ready=False)
    assert daemon.wait_exit() == 1, daemon.log()
    assert not any("READY=1" in m for m in daemon.notify_messages())
    return daemon.log()


@pytest.mark.parametrize("args, env, expected", [
    (("--max-frame-bytes", "9223372036854775807"), None,
     "STPD_MAX_FRAME_BYTES=9223372036854775807 (from --max-frame-bytes) is not valid: expected a whole number of "
     "bytes from 1024 to 67108864"),
    (("--max-frame-bytes", "-5"), None, "STPD_MAX_FRAME_BYTES=-5 (from --max-frame-bytes) is not valid"),
    (("--event-max-count", "0"), None, "STPD_EVENT_MAX_COUNT=0 (from --event-max-count) is not valid"),
    ((), {"STPD_DEBUG_METHODS": "yes"}, "STPD_DEBUG_METHODS=yes (from the environment) is not valid: expected 1 or 0"),
    ((), {"STPD_REDIRECT_POLL_TIMEOUT": "301"}, "STPD_REDIRECT_POLL_TIMEOUT=301 (from the environment) is not valid"),
    (("--max-fram-bytes", "2048"), None, "unknown option --max-fram-bytes: did you mean --max-frame-bytes?"),
    (("--strict-config",), {"STPD_MAX_FRAM_BYTES": "2048"},
     "unknown key STPD_MAX_FRAM_BYTES in the environment: did you mean STPD_MAX_FRAME_BYTES?"),
])
def test_configuration_mistakes_stop_the_start_naming_setting_and_value(start_stpd, tmp_path, args, env, expected):
    output = refused(start_stpd, tmp_path / "stpd", *args, env=env)
    assert expected in output, output
    assert "Missing value" not in output


def test_a_key_file_that_is_a_directory_is_named_so(start_stpd, tmp_path):
    directory = tmp_path / "not-a-key"
    directory.mkdir()
    output = refused(start_stpd, tmp_path / "stpd", "--stripe-key-file", str(directory))
    assert f"Stripe key from key file {directory}: cannot read it: it is a directory" in output, output
    assert "Domain" not in output and "error 256" not in output


def test_unknown_keys_are_warned_about_with_the_nearest_known_key(start_stpd, tmp_path):
    config = tmp_path / "stpd.conf"
    config.write_text("stpd_max_frame_bytes=2048\nSTPD_LOG_LEVEL=info\n")
    daemon = start_stpd(tmp_path / "stpd", "--config", str(config), env={"STPD_MAX_FRAM_BYTES": "2048"})
    assert daemon.client().call("daemon.ping")["pong"] is True
    log = daemon.log()
    assert "unknown key STPD_MAX_FRAM_BYTES in the environment: did you mean STPD_MAX_FRAME_BYTES?" in log, log
    assert (f"{config}:1: unknown key stpd_max_frame_bytes: keys are upper case: did you mean "
            "STPD_MAX_FRAME_BYTES?") in log, log
