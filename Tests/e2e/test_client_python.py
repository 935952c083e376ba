"""The Python client package (clients/python, `import stpd`) against the real stpd: calls by
keyword and typed wrapper, pipelining from one thread and from many, one exception class per error
code, and subscriptions that survive `events.dropped`, a restart, a `kill -9` and socket
activation with no gap and no duplicate. Every reply and event is checked against the contract
(the clients here get the contract checker as their observer)."""

from __future__ import annotations

import ast
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

import stpd
from stpd import errors

from conftest import REPO_ROOT
from rpc import contract_observer
from test_idle_exit import wait_until_inactive
from test_systemd_user import TIMEOUT, install_user_units, user_manager  # noqa: F401 (fixture)
from test_watch import FakeDaemon, Peer, event

READ_TIMEOUT = 30.0
BLOB = "x" * 4000


def client(daemon, **kwargs) -> stpd.Client:
    """A package Client on DAEMON whose every reply and notification is checked against the contract."""
    return stpd.Client(str(daemon.socket_path), observer=contract_observer(daemon.checker), **kwargs)


@pytest.fixture
def daemon(start_stpd, tmp_path):
    return start_stpd(tmp_path, "--debug-methods")


def latest(c: stpd.Client) -> int:
    return c.daemon.status()["store"]["latestSeq"]


def take(subscription: stpd.Subscription, count: int) -> list[dict]:
    return [subscription.next(READ_TIMEOUT) for _ in range(count)]


def seqs(events: list[dict]) -> list[int]:
    return [e["seq"] for e in events]


# -- the socket ------------------------------------------------------------------------------

def test_finds_the_socket_as_stpctl_does(tmp_path):
    runtime = tmp_path / "run"
    runtime.mkdir()
    find = stpd.default_socket_path
    assert find({"STPD_SOCKET": "/x.sock", "XDG_RUNTIME_DIR": str(runtime)}, uid=1000) == "/x.sock"
    assert find({"XDG_RUNTIME_DIR": str(runtime)}, uid=0) == "/run/stpd/stpd.sock"  # root: the system's
    assert find({"XDG_RUNTIME_DIR": str(runtime)}, uid=1000) == "/run/stpd/stpd.sock"  # no per-user socket
    (runtime / "stpd.sock").touch()
    assert find({"XDG_RUNTIME_DIR": str(runtime)}, uid=1000) == str(runtime / "stpd.sock")
    assert find({"STPD_SOCKET": "", "XDG_RUNTIME_DIR": str(runtime)}, uid=1000) == str(runtime / "stpd.sock")
    assert find({}, uid=1000) == "/run/stpd/stpd.sock"


def test_client_without_a_path_uses_stpd_socket(daemon, monkeypatch):
    monkeypatch.setenv("STPD_SOCKET", str(daemon.socket_path))
    with stpd.Client() as c:
        assert c.path == str(daemon.socket_path)
        assert c.call("daemon.ping")["pong"] is True


# -- calls -------------------------------------------------------------------------------------

def test_call_by_keyword_by_mapping_and_by_typed_wrapper(daemon):
    with client(daemon) as c:
        assert c.call("daemon.ping") == c.daemon.ping()
        first = c.call("debug.emit", count=2, objectId="dbg_kw")
        second = c.call("debug.emit", {"count": 2}, objectId="dbg_kw")
        third = c.debug.emit(count=2, objectId="dbg_kw")
        assert [first, second, third] == [{"firstSeq": 1, "lastSeq": 2}, {"firstSeq": 3, "lastSeq": 4},
                                          {"firstSeq": 5, "lastSeq": 6}]
        # An argument left out is not sent (null would be refused): limit and filter here.
        waited = c.events.wait(since=0, timeout=0)
        assert seqs(waited["events"]) == [1, 2, 3, 4, 5, 6] and waited["next"] == 6
        assert c.handle_url(url="myshop://stripe-redirect?order=1") == {"handled": False, "session": None}
        # A member named like a keyword of call() itself: source.create's `params`.
        with pytest.raises(errors.InvalidParams):
            c.call("source.create", params={"nothing": {}})


def test_each_error_code_raises_its_class(daemon):
    with client(daemon) as c:
        with pytest.raises(errors.SubscriptionNotFound) as caught:
            c.events.unsubscribe(subscription="sub_none")
        assert caught.value.code == 2002 and isinstance(caught.value, stpd.RpcError)
        assert caught.value.message and caught.value.reply["error"]["code"] == 2002
        with pytest.raises(errors.InvalidParams) as caught:
            c.call("events.wait", since="zero")
        assert caught.value.data["parameter"] == "since"
        with pytest.raises(errors.MethodNotFound):
            c.call("no.such.method")
        with pytest.raises(errors.InvalidParams):
            c.handle_url(url="not a url")
        with pytest.raises(errors.CursorAhead) as caught:
            c.events.wait(since=10_000, timeout=0)
        assert caught.value.data["latestSeq"] == 0
        assert c.daemon.ping()["pong"] is True  # the connection survived every error


def test_pipelined_requests_are_answered_out_of_order(daemon):
    with client(daemon) as c:
        waiting = c.request("events.wait", {"since": 0, "timeout": 2})  # held: nothing to return
        pinging = c.request("daemon.ping")
        assert c.result(c.wait_reply(pinging, 1.5))["pong"] is True, "the ping waited behind events.wait"
        c.call("debug.emit", count=1)  # releases the wait
        assert seqs(c.result(c.wait_reply(waiting))["events"]) == [1]
        # A batch: one frame out, one array back, each result in its call's place.
        results = c.batch([("daemon.ping", None), ("events.unsubscribe", {"subscription": "sub_x"}),
                           ("debug.emit", {"count": 3})])
        assert results[0]["pong"] is True
        assert isinstance(results[1], errors.SubscriptionNotFound)
        assert results[2] == {"firstSeq": 2, "lastSeq": 4}


def test_threads_share_one_connection(daemon):
    with client(daemon) as shared, client(daemon) as emitter:
        emitter.debug.emit(count=200, objectId="dbg_threads")
        failures: list[BaseException] = []

        def worker(offset: int) -> None:
            try:
                for since in range(offset, 200, 8):
                    # events.wait since N, limit 1 is exactly event N+1: a reply given to another
                    # thread's call would show.
                    result = shared.events.wait(since=since, limit=1, timeout=0)
                    assert seqs(result["events"]) == [since + 1], (since, result)
            except BaseException as error:  # noqa: BLE001 - reported below
                failures.append(error)

        # One more thread holds a long wait on the same connection meanwhile; its reply comes last.
        held = shared.request("events.wait", {"since": 200, "timeout": 5})
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not failures, failures[0]
        assert not any(t.is_alive() for t in threads)
        emitter.debug.emit(count=1)
        assert seqs(shared.result(shared.wait_reply(held))["events"]) == [201]


def test_a_client_whose_socket_is_past_fd_setsize_works(daemon):
    """An app may hold many files: the client's socket can get a descriptor above select()'s 1024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"RLIMIT_NOFILE's hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = []
    try:
        while len(held) < 1100:
            held.append(os.open("/dev/null", os.O_RDONLY))
        with client(daemon) as c:
            assert c.sock.fileno() > 1024
            assert c.daemon.ping()["pong"] is True
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_call_after_a_restart_reconnects(daemon, start_stpd, tmp_path):
    with client(daemon) as c:
        first_pid = c.daemon.status()["pid"]
        daemon.terminate()
        restarted = start_stpd(tmp_path, "--debug-methods")
        assert c.daemon.status()["pid"] == restarted.pid != first_pid
    with client(restarted, reconnect=False) as c:
        restarted.terminate()
        with pytest.raises(stpd.ConnectionClosed):
            c.daemon.ping()


def test_a_call_in_flight_when_the_daemon_dies_fails(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path, "--debug-methods")
    with client(daemon) as c:
        request = c.request("events.wait", {"since": 0, "timeout": 30})
        os.kill(daemon.pid, signal.SIGKILL)
        daemon.wait_exit()
        with pytest.raises(stpd.ConnectionClosed):
            c.wait_reply(request)


# -- subscriptions -------------------------------------------------------------------------------

def test_subscribe_replays_then_follows(daemon):
    with client(daemon) as c:
        c.debug.emit(count=3, objectId="dbg_a")
        with c.subscribe(since=1, filter={"objects": ["dbg_a"]}) as events:
            assert events.latest_seq == 3
            c.debug.emit(count=1, objectId="dbg_b")  # filtered out
            c.debug.emit(count=2, objectId="dbg_a")
            got = take(events, 4)
            assert seqs(got) == [2, 3, 5, 6]
            assert {e["type"] for e in got} == {"debug.test"} and {e["objectId"] for e in got} == {"dbg_a"}
            with pytest.raises(TimeoutError):
                events.next(0.2)
        with c.subscribe() as live:  # no since: only what comes after
            c.debug.emit(count=1)
            assert seqs(take(live, 1)) == [7]


def test_subscribe_survives_events_dropped(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path, "--debug-methods", "--max-outbound-bytes", "65536")
    with client(daemon) as c, c.subscribe(since=0) as events:
        # Batches of ~42 KB while the iterator takes none, until the daemon drops the subscription
        # (past the socket buffers and the 64 KiB budget). It is read at once after that: the
        # daemon closes a dropped connection that stays unread for 30 s without flushing it.
        emitted = 0
        while c.daemon.status()["subscriptions"] != 0:
            assert emitted < 1000, "the stalled subscription was never dropped"
            emitted = c.debug.emit(count=10, objectId="dbg_flood", payload={"blob": BLOB})["lastSeq"]
        assert seqs(take(events, emitted)) == list(range(1, emitted + 1))
        assert events.drops == 1 and events.reconnects == 1
        c.debug.emit(count=1)
        assert seqs(take(events, 1)) == [emitted + 1]


@pytest.mark.parametrize("how", ["restart", "kill"])
def test_subscribe_survives_a_restart(start_stpd, tmp_path, how):
    daemon = start_stpd(tmp_path, "--debug-methods")
    with client(daemon) as c, c.subscribe(since=0, filter={"types": ["debug.*"]}) as events:
        c.debug.emit(count=5)
        assert seqs(take(events, 3)) == [1, 2, 3]  # 4 and 5 are read later, from the new daemon
        if how == "kill":
            os.kill(daemon.pid, signal.SIGKILL)
            daemon.wait_exit()
        else:
            assert daemon.terminate() == 0
        restarted = start_stpd(tmp_path, "--debug-methods")
        with client(restarted) as again:
            again.debug.emit(count=3)
        assert seqs(take(events, 5)) == [4, 5, 6, 7, 8]
        assert events.reconnects == 1 and events.drops == 0


def test_subscribe_survives_socket_activation(user_manager, stpd_bin, checker):
    """Under a real systemd user manager: the service is stopped while subscribed (the socket
    stays), and the subscription's reconnection starts it again."""
    install_user_units(user_manager, stpd_bin, "--debug-methods")
    user_manager.systemctl("start", "stpd.socket")
    path = str(user_manager.runtime / "stpd.sock")
    with stpd.Client(path, TIMEOUT, observer=contract_observer(checker)) as c, c.subscribe(since=0) as events:
        first = c.daemon.status()
        assert first["activation"] == "socket"
        c.debug.emit(count=2)
        assert seqs(take(events, 1)) == [1]
        user_manager.systemctl("stop", "stpd.service")
        wait_until_inactive(user_manager)
        # The next call starts it again (the client reconnects through the socket systemd holds).
        assert c.debug.emit(count=2) == {"firstSeq": 3, "lastSeq": 4}
        assert c.daemon.status()["pid"] != first["pid"]
        assert seqs(take(events, 3)) == [2, 3, 4]
        assert events.reconnects == 1


def test_subscription_position_rules_against_a_scripted_daemon(tmp_path):
    """Against a fake daemon: resumeSince past the last event read is where it resumes; an event
    at or below the position is not yielded again; other subscriptions' events are ignored; a
    CursorExpired on a resume is raised."""

    def first(peer: Peer) -> None:
        request = peer.request()
        assert request["method"] == "events.subscribe" and request["params"] == {"since": 0}
        peer.reply(request, {"subscription": "sub_1", "latestSeq": 9})
        peer.notify("event", event(1, "sub_1"))
        peer.notify("event", event(7, "sub_elsewhere"))
        peer.notify("events.dropped", {"subscription": "sub_1", "reason": "slow-consumer", "resumeSince": 4})

    def second(peer: Peer) -> None:
        request = peer.request()
        assert request["params"] == {"since": 4}
        peer.reply(request, {"subscription": "sub_2", "latestSeq": 9})
        peer.notify("event", event(3, "sub_2"))  # at or below the position: not again
        peer.notify("event", event(5, "sub_2"))

    def third(peer: Peer) -> None:  # the connection above ended: a restart with pruned events
        request = peer.request()
        assert request["params"] == {"since": 5}
        peer.reply(request, error={"code": 2001, "message": "Events after `since` are no longer kept",
                                   "data": {"oldestSeq": 8}})
        peer.wait_closed()

    fake = FakeDaemon(tmp_path / "fake.sock", [first, second, third])
    try:
        events = stpd.Subscription(str(tmp_path / "fake.sock"), since=0, max_delay=0.1)
        assert seqs(take(events, 2)) == [1, 5]
        assert events.drops == 1 and events.position == 5
        with pytest.raises(errors.CursorExpired) as caught:
            events.next(READ_TIMEOUT)
        assert caught.value.data == {"oldestSeq": 8}
        events.close()
        fake.join()
    finally:
        fake.close()


def test_wait_events_retries_across_a_restart(start_stpd, tmp_path):
    daemon = start_stpd(tmp_path, "--debug-methods")
    with client(daemon) as c:
        assert c.wait_events(0, timeout=0) == {"events": [], "next": 0, "endedEarly": False}
        outcome: list = []
        waiter = threading.Thread(target=lambda: outcome.append(c.wait_events(0, {"types": ["debug.*"]}, timeout=20)))
        waiter.start()
        deadline = time.monotonic() + READ_TIMEOUT
        while "events.wait" not in c._methods.values():  # sent, and not answered: nothing to return yet
            assert time.monotonic() < deadline and waiter.is_alive(), outcome
            time.sleep(0.01)
        os.kill(daemon.pid, signal.SIGKILL)  # the wait in flight loses its connection...
        daemon.wait_exit()
        restarted = start_stpd(tmp_path, "--debug-methods")
        with client(restarted) as other:
            other.debug.emit(count=1)
        waiter.join(READ_TIMEOUT)  # ...and is asked again of the new daemon
        assert not waiter.is_alive()
        assert seqs(outcome[0]["events"]) == [1] and outcome[0]["next"] == 1


# -- the package -------------------------------------------------------------------------------

def test_pip_installs_the_package_offline(tmp_path):
    """`pip install ./clients/python`, as a user would, but without an index: setuptools from the
    test environment builds it. The installed copy has the generated modules and works alone."""
    source, target = tmp_path / "source", tmp_path / "site"
    shutil.copytree(REPO_ROOT / "clients" / "python", source,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           "--no-build-isolation", "--no-index", "--no-deps", "--target", str(target), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    installed = {p.name for p in (target / "stpd").iterdir()}
    assert {"__init__.py", "client.py", "errors.py", "schemas.py", "methods.py", "py.typed"} <= installed
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import stpd; "
             "assert stpd.__file__.startswith(sys.argv[1]), stpd.__file__; "
             "print(stpd.errors.NotFound.code, len(stpd.schemas.EventType.__args__))")
    done = subprocess.run([sys.executable, "-I", "-c", probe, str(target)], capture_output=True, text=True,
                          timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "1001"


def test_the_package_uses_the_standard_library_only():
    imported = set()
    for source in (REPO_ROOT / "clients" / "python" / "stpd").glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported - set(sys.stdlib_module_names)


def test_every_typed_wrapper_and_typeddict_resolves():
    import inspect
    import typing

    from stpd import methods, schemas

    typed_dicts = [v for v in vars(schemas).values() if isinstance(v, type) and hasattr(v, "__required_keys__")]
    assert len(typed_dicts) > 50
    for cls in typed_dicts:
        typing.get_type_hints(cls)
    wrapped = 0
    for holder in [v for v in vars(methods).values() if isinstance(v, type) and v.__name__.endswith("Methods")]:
        for name, function in inspect.getmembers(holder, inspect.isfunction):
            if not name.startswith("_") and name != "call":
                typing.get_type_hints(function)
                wrapped += 1
    contract = json.loads((REPO_ROOT / "proto" / "stpd.openrpc.json").read_text())
    assert wrapped == len(contract["methods"])


def test_readme_example_runs(daemon, tmp_path):
    """The README's Python example, as printed there, against a live stpd."""
    readme = (REPO_ROOT / "README.md").read_text()
    start = readme.index("```python\nimport stpd")
    code = readme[start + len("```python\n"):readme.index("```", start + 10)]
    script = tmp_path / "readme_example.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STPD_")}
    env["STPD_SOCKET"] = str(daemon.socket_path)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "'pong': True" in done.stdout
