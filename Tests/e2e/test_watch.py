"""`stpctl watch` (alias `monitor`) and `stpctl events wait` end to end (design.md sections 3 and 6).

Against a live stpd started with --debug-methods, whose `debug.emit` appends `debug.test` events:
JSON lines as events arrive, filters, resuming across a daemon killed and restarted on the same
socket and state directory with no gap and no duplicate, --no-reconnect, interrupts, a reader
that goes away, and terminal output. Against a scripted stand-in for stpd (`FakeDaemon`): what
the real one does only under load or after retention, i.e. `events.dropped`, CursorExpired and
CursorAhead answers, and the exact subscribe params stpctl sends.

Nothing here sleeps to wait for what can be observed: output is read with select and a
deadline, processes are waited for.
"""

from __future__ import annotations

import errno
import json
import os
import pty
import re
import select
import shlex
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import clean_environment
from rpc import encode

LINE_TIMEOUT = 30.0   # generous: a reconnect waits for a whole daemon start
EXIT_TIMEOUT = 30.0
EVENT_KEYS = ["seq", "type", "time", "objectId", "object"]


# -- helpers -----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def stpctl_bin(bin_dir: Path) -> Path:
    path = bin_dir / "stpctl"
    if not path.is_file():
        pytest.fail(f"no stpctl binary in {bin_dir}: run `swift build` first")
    return path


class LineReader:
    """Lines from a pipe or a pty master, read with select so that nothing blocks past a deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""
        self.eof = False

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no complete line within the deadline; have {self.buffer[-500:]!r}")
        readable, _, _ = select.select([self.fd], [], [], remaining)
        if not readable:
            return
        try:
            chunk = os.read(self.fd, 65536)
        except OSError as error:  # a pty master reads EIO once the child side is closed
            if error.errno != errno.EIO:
                raise
            chunk = b""
        if chunk:
            self.buffer += chunk
        else:
            self.eof = True

    def read_line(self, timeout: float = LINE_TIMEOUT) -> str | None:
        """The next line without its line ending; None at EOF."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            if self.eof:
                if self.buffer:
                    raise AssertionError(f"EOF after a partial line: {self.buffer!r}")
                return None
            self._fill(deadline)
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode().rstrip("\r")

    def read_rest(self, timeout: float = EXIT_TIMEOUT) -> str:
        """Everything up to EOF."""
        deadline = time.monotonic() + timeout
        while not self.eof:
            self._fill(deadline)
        rest, self.buffer = self.buffer, b""
        return rest.decode().replace("\r\n", "\n")


class Watch:
    """A running `stpctl ... watch ...`: stdout and stderr pipes (or pty masters) read by line."""

    def __init__(self, argv: list[str], stdout_pty: bool = False, stderr_pty: bool = False):
        self.argv = argv
        self.masters: list[int] = []
        slaves: list[int] = []

        def terminal() -> int:
            master, slave = pty.openpty()
            self.masters.append(master)
            slaves.append(slave)
            return slave

        out = terminal() if stdout_pty else subprocess.PIPE
        err = terminal() if stderr_pty else subprocess.PIPE
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         env=clean_environment())
        finally:
            for slave in slaves:
                os.close(slave)
        self.out = LineReader(self.masters[0] if stdout_pty else self.proc.stdout.fileno())
        self.err = LineReader(self.masters[-1] if stderr_pty else self.proc.stderr.fileno())

    def line(self, timeout: float = LINE_TIMEOUT) -> str:
        line = self.out.read_line(timeout)
        if line is None:
            raise AssertionError(f"stpctl watch ended (status {self.proc.wait(EXIT_TIMEOUT)}) "
                                 f"instead of printing; stderr:\n{self.err.read_rest()}")
        return line

    def events(self, count: int, checker: Any = None) -> list[dict]:
        """The next COUNT lines, each one compact JSON event with the contract's members."""
        events = []
        for _ in range(count):
            line = self.line()
            event = json.loads(line)
            assert list(event) == EVENT_KEYS, line
            assert line == json.dumps(event, separators=(",", ":"), ensure_ascii=False), "not compact"
            if checker is not None:  # the event notification's shape, less the subscription id
                checker.check_notification({"jsonrpc": "2.0", "method": "event",
                                            "params": dict(event, subscription="sub_0")})
            events.append(event)
        return events

    def wait(self, timeout: float = EXIT_TIMEOUT) -> int:
        return self.proc.wait(timeout)

    def stop(self, signum: int = signal.SIGTERM) -> int:
        self.proc.send_signal(signum)
        return self.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        for master in self.masters:
            os.close(master)
        self.masters = []


@pytest.fixture
def watch(stpctl_bin: Path) -> Callable[..., Watch]:
    """watch(socket_path, *args, stdout_pty=False, stderr_pty=False) -> Watch: starts
    `stpctl --socket SOCKET watch ARGS`; every one still running at teardown is killed."""
    started: list[Watch] = []

    def start(socket_path: Path, *args: str, **kwargs: Any) -> Watch:
        w = Watch([str(stpctl_bin), "--socket", str(socket_path), "watch", *args], **kwargs)
        started.append(w)
        return w

    yield start
    for w in started:
        w.close()


def emit(daemon, count: int = 1, object_id: str | None = None) -> list[int]:
    """Appends COUNT debug.test events (of OBJECT_ID, else a new object); returns their seqs."""
    params: dict[str, Any] = {"count": count}
    if object_id is not None:
        params["objectId"] = object_id
    with daemon.client() as client:
        result = client.call("debug.emit", params)
    return list(range(result["firstSeq"], result["lastSeq"] + 1))


def seqs(events: list[dict]) -> list[int]:
    return [e["seq"] for e in events]


def wait_for_subscriptions(daemon, count: int, timeout: float = LINE_TIMEOUT) -> None:
    """Until daemon.status counts COUNT subscriptions. Nothing pushes that fact, so this polls it."""
    deadline = time.monotonic() + timeout
    with daemon.client() as client:
        while client.call("daemon.status")["subscriptions"] < count:
            assert time.monotonic() < deadline, f"fewer than {count} subscriptions after {timeout} s"
            time.sleep(0.02)


@pytest.fixture
def daemon(start_stpd, tmp_path):
    return start_stpd(tmp_path, "--debug-methods")


# -- against stpd ------------------------------------------------------------------------------

def test_replays_then_streams_live_events_as_json_lines(daemon, watch, checker):
    emit(daemon, 3)
    w = watch(daemon.socket_path, "--since", "0")
    replayed = w.events(3, checker)
    assert seqs(replayed) == [1, 2, 3]
    assert {e["type"] for e in replayed} == {"debug.test"}
    assert [e["object"]["n"] for e in replayed] == [1, 2, 3]

    live = emit(daemon, 2, object_id="dbg_live")
    events = w.events(2, checker)
    assert seqs(events) == live == [4, 5]
    assert {e["objectId"] for e in events} == {"dbg_live"}
    assert w.stop(signal.SIGTERM) == 0


def test_without_since_only_new_events_are_printed(daemon, watch):
    emit(daemon, 2)
    w = watch(daemon.socket_path)
    wait_for_subscriptions(daemon, 1)
    assert emit(daemon) == [3]
    assert seqs(w.events(1)) == [3]
    assert w.stop() == 0


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_resumes_after_a_restart_with_no_gap_and_no_duplicate(start_stpd, tmp_path, watch, checker, how):
    first = start_stpd(tmp_path, "--debug-methods")
    emit(first, 3)
    w = watch(first.socket_path, "--since", "0")
    assert seqs(w.events(3, checker)) == [1, 2, 3]
    assert emit(first, 2) == [4, 5]
    assert seqs(w.events(2, checker)) == [4, 5]

    if how == "SIGKILL":
        first.kill()
    else:
        assert first.terminate() == 0
    # The same socket and state directory: the log continues at 6.
    second = start_stpd(tmp_path, "--debug-methods")
    # Most likely emitted before watch is back (it replays them), maybe after; either way the
    # lines go on at 6, and the one emitted last comes right after: nothing printed twice.
    assert emit(second, 3) == [6, 7, 8]
    assert seqs(w.events(3, checker)) == [6, 7, 8]
    assert emit(second) == [9]
    assert seqs(w.events(1, checker)) == [9]
    assert w.proc.poll() is None
    assert w.stop(signal.SIGINT) == 0


def test_monitor_is_watch(daemon, stpctl_bin):
    emit(daemon, 2)
    w = Watch([str(stpctl_bin), "--socket", str(daemon.socket_path), "monitor", "--since", "1"])
    try:
        assert seqs(w.events(1)) == [2]
        assert w.stop() == 0
    finally:
        w.close()


def test_object_filter(daemon, watch):
    a1 = emit(daemon, 2, object_id="dbg_a")
    emit(daemon, 1, object_id="dbg_b")
    c1 = emit(daemon, 1, object_id="dbg_c")
    w = watch(daemon.socket_path, "--since", "0", "--object", "dbg_a", "--object", "dbg_c")
    emit(daemon, 2, object_id="dbg_b")
    a2 = emit(daemon, 1, object_id="dbg_a")
    expected = [(s, "dbg_a") for s in a1] + [(s, "dbg_c") for s in c1] + [(s, "dbg_a") for s in a2]
    # In seq order, up to the last event emitted: no dbg_b line can hide in between.
    assert [(e["seq"], e["objectId"]) for e in w.events(len(expected))] == expected
    assert w.stop() == 0


def test_type_filter_and_no_reconnect(daemon, watch):
    emit(daemon, 2)
    matching = watch(daemon.socket_path, "--since", "0", "--type", "nomatch.*", "--type", "debug.*",
                     "--no-reconnect")
    other = watch(daemon.socket_path, "--since", "0", "--type", "nomatch.*", "--type", "debug.other",
                  "--no-reconnect")
    assert seqs(matching.events(2)) == [1, 2]
    wait_for_subscriptions(daemon, 2)
    assert emit(daemon) == [3]
    assert seqs(matching.events(1)) == [3]

    assert daemon.terminate() == 0
    for w in (matching, other):
        assert w.wait() == 6
        assert "closed the connection" in w.err.read_rest()
    assert matching.out.read_rest() == ""
    assert other.out.read_rest() == ""  # debug.test matched neither of its types


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_no_reconnect_exits_6_when_the_daemon_stops(daemon, watch, how):
    emit(daemon, 4)
    w = watch(daemon.socket_path, "--since", "2", "--no-reconnect")
    assert seqs(w.events(2)) == [3, 4]
    if how == "SIGKILL":
        daemon.kill()
    else:
        assert daemon.terminate() == 0
    assert w.wait() == 6
    assert "resume with --since 4" in w.err.read_rest()


def test_a_first_connection_that_fails_exits_3(tmp_path, watch):
    w = watch(tmp_path / "nothing-here.sock", "--since", "0")
    assert w.wait() == 3
    assert "nothing-here.sock" in w.err.read_rest()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_exits_0(daemon, watch, signum):
    emit(daemon)
    w = watch(daemon.socket_path, "--since", "0")
    assert seqs(w.events(1)) == [1]
    assert w.stop(signum) == 0
    assert w.out.read_rest() == ""


def test_interrupt_while_reconnecting_exits_0(daemon, watch):
    emit(daemon)
    w = watch(daemon.socket_path, "--since", "0")
    assert seqs(w.events(1)) == [1]
    daemon.kill()
    assert w.proc.poll() is None
    assert w.stop(signal.SIGINT) == 0


def test_first_line_through_head(daemon, stpctl_bin):
    """`stpctl watch | head -1` ends once head has its line, not at the next event."""
    emit(daemon, 3)
    command = (f"{shlex.quote(str(stpctl_bin))} --socket {shlex.quote(str(daemon.socket_path))} "
               f"watch --since 0 | head -1")
    proc = subprocess.Popen(["sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_environment(), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=EXIT_TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err
    lines = out.decode().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["seq"] == 1


def test_terminal_output_and_reconnect_status(start_stpd, tmp_path, watch):
    first = start_stpd(tmp_path, "--debug-methods")
    emit(first, 1, object_id="dbg_tty")
    w = watch(first.socket_path, "--since", "0", stdout_pty=True, stderr_pty=True)
    line = w.line()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  #1  debug\.test +dbg_tty  n=1", line), line

    first.kill()
    status = w.err.read_line()
    assert status == f"stpctl: reconnecting to {first.socket_path}…"
    second = start_stpd(tmp_path, "--debug-methods")
    assert w.err.read_line() == f"stpctl: reconnected to {first.socket_path}; resuming after seq 1"
    emit(second, 1, object_id="dbg_tty")
    assert re.search(r"  #2  debug\.test +dbg_tty  n=1$", w.line())
    assert w.stop() == 0


def test_json_on_a_terminal_is_still_one_compact_line_per_event(daemon, watch):
    emit(daemon, 2)
    w = watch(daemon.socket_path, "--json", "--since", "0", stdout_pty=True)
    assert seqs(w.events(2)) == [1, 2]
    assert w.stop() == 0


# -- events wait ---------------------------------------------------------------------------------

def run_stpctl(stpctl_bin: Path, daemon, *args: str, timeout: float = EXIT_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([str(stpctl_bin), "--socket", str(daemon.socket_path), *args],
                          capture_output=True, text=True, timeout=timeout, env=clean_environment())


def test_events_wait_returns_events_and_next(daemon, stpctl_bin, checker):
    emit(daemon, 2, object_id="dbg_a")
    emit(daemon, 1, object_id="dbg_b")
    done = run_stpctl(stpctl_bin, daemon, "events", "wait", "--since", "0", "--limit", "2")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    checker.check_result("events.wait", result)
    assert seqs(result["events"]) == [1, 2] and result["next"] == 2

    done = run_stpctl(stpctl_bin, daemon, "events", "wait", "--since", "0", "--object", "dbg_b",
                      "--type", "debug.*")
    result = json.loads(done.stdout)
    assert seqs(result["events"]) == [3] and result["next"] == 3

    done = run_stpctl(stpctl_bin, daemon, "events", "wait", "--since", "3", "--timeout-seconds", "0")
    assert json.loads(done.stdout) == {"events": [], "next": 3, "endedEarly": False}


def test_events_wait_is_not_cut_short_by_the_global_timeout(daemon, stpctl_bin):
    emit(daemon)
    start = time.monotonic()
    done = run_stpctl(stpctl_bin, daemon, "--timeout", "0.5", "events", "wait", "--since", "1",
                      "--timeout-seconds", "1.5")
    assert done.returncode == 0, done.stderr  # not 4 (timeout) after 0.5 s
    assert json.loads(done.stdout) == {"events": [], "next": 1, "endedEarly": False}
    assert time.monotonic() - start >= 1.4


def test_events_wait_returns_the_next_event(daemon, stpctl_bin):
    emit(daemon)
    proc = subprocess.Popen([str(stpctl_bin), "--socket", str(daemon.socket_path), "events", "wait",
                             "--since", "1", "--timeout-seconds", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_environment())
    try:
        # Most likely emitted while the call waits; if it comes first, the answer is the same.
        emit(daemon)
        out, err = proc.communicate(timeout=EXIT_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert seqs(json.loads(out)["events"]) == [2]


def test_events_wait_cursor_errors_exit_1(daemon, stpctl_bin):
    emit(daemon)
    done = run_stpctl(stpctl_bin, daemon, "events", "wait", "--since", "5")
    assert done.returncode == 1
    assert json.loads(done.stderr)["code"] == 2003


# -- against a scripted stand-in for stpd --------------------------------------------------------

class Peer:
    """stpctl's side of one connection, as the fake daemon sees it."""

    def __init__(self, conn: socket.socket):
        conn.settimeout(LINE_TIMEOUT)
        self.conn = conn
        self.file = conn.makefile("rb")

    def request(self) -> dict:
        line = self.file.readline()
        assert line, "stpctl closed the connection instead of sending a request"
        return json.loads(line)

    def reply(self, request: dict, result: Any = None, error: dict | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        self.conn.sendall(encode(message))

    def notify(self, method: str, params: dict) -> None:
        self.conn.sendall(encode({"jsonrpc": "2.0", "method": method, "params": params}))

    def wait_closed(self) -> None:
        """Until stpctl closes its end (it exits at the end of the test)."""
        while self.file.readline():
            pass


class FakeDaemon:
    """Listens on PATH; hands the n-th connection accepted to SCRIPT[n] in a thread. What the
    script asserts fails the test in `join`."""

    def __init__(self, path: Path, script: list[Callable[[Peer], None]]):
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(8)
        self.listener.settimeout(LINE_TIMEOUT)
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._serve, args=(script,), daemon=True)
        self.thread.start()

    def _serve(self, script: list[Callable[[Peer], None]]) -> None:
        try:
            for handler in script:
                conn, _ = self.listener.accept()
                with conn:
                    handler(Peer(conn))
        except BaseException as error:  # noqa: BLE001 - re-raised in join
            self.errors.append(error)

    def join(self) -> None:
        self.thread.join(EXIT_TIMEOUT)
        assert not self.thread.is_alive(), "the fake daemon's script did not finish"
        if self.errors:
            raise self.errors[0]

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def fake(tmp_path):
    """fake(script) -> FakeDaemon on tmp_path/fake.sock."""
    fakes: list[FakeDaemon] = []

    def start(script: list[Callable[[Peer], None]]) -> FakeDaemon:
        f = FakeDaemon(tmp_path / "fake.sock", script)
        fakes.append(f)
        return f

    yield start
    for f in fakes:
        f.close()


def event(seq: int, subscription: str, object_id: str = "obj_1") -> dict:
    return {"subscription": subscription, "seq": seq, "type": "debug.test", "time": "2025-01-02T03:04:05Z",
            "objectId": object_id, "object": {"id": object_id, "object": "debug", "n": seq}}


def test_dropped_resumes_from_resume_since_and_skips_duplicates(fake, watch, tmp_path):
    wanted = {"objects": ["obj_1"], "types": ["debug.*"]}

    def first(peer: Peer) -> None:
        request = peer.request()
        assert request["method"] == "events.subscribe"
        assert request["params"] == {"since": 0, "filter": wanted}
        peer.reply(request, {"subscription": "sub_1", "latestSeq": 9})
        peer.notify("event", event(1, "sub_1"))
        peer.notify("event", event(2, "sub_1"))
        peer.notify("event", event(7, "sub_elsewhere"))  # not this subscription's: ignored
        # 3 and 4 did not match: the daemon resumes after them.
        peer.notify("events.dropped", {"subscription": "sub_1", "reason": "slow-consumer", "resumeSince": 4})

    def second(peer: Peer) -> None:
        request = peer.request()
        assert request["params"] == {"since": 4, "filter": wanted}
        peer.reply(request, {"subscription": "sub_2", "latestSeq": 9})
        peer.notify("event", event(2, "sub_2"))  # printed already: not again
        peer.notify("event", event(5, "sub_2"))
        peer.wait_closed()

    f = fake([first, second])
    w = watch(tmp_path / "fake.sock", "--since", "0", "--object", "obj_1", "--type", "debug.*")
    assert seqs(w.events(3)) == [1, 2, 5]
    assert w.stop() == 0
    assert "dropped the subscription (slow-consumer); resuming after seq 4" in w.err.read_rest()
    f.join()


def test_dropped_with_no_reconnect_exits_6_naming_where_to_resume(fake, watch, tmp_path):
    def only(peer: Peer) -> None:
        request = peer.request()
        peer.reply(request, {"subscription": "sub_1", "latestSeq": 3})
        peer.notify("event", event(3, "sub_1"))
        peer.notify("events.dropped", {"subscription": "sub_1", "reason": "slow-consumer", "resumeSince": 3})

    f = fake([only])
    w = watch(tmp_path / "fake.sock", "--since", "2", "--no-reconnect")
    assert seqs(w.events(1)) == [3]
    assert w.wait() == 6
    assert "resume with --since 3" in w.err.read_rest()
    f.join()


def test_cursor_expired_warns_and_continues_from_the_oldest_kept(fake, watch, tmp_path):
    def only(peer: Peer) -> None:
        request = peer.request()
        assert request["params"] == {"since": 3}
        peer.reply(request, error={"code": 2001, "message": "Events after `since` are no longer kept",
                                   "data": {"oldestSeq": 10}})
        request = peer.request()
        assert request["method"] == "events.subscribe" and request["params"] == {"since": 9}
        peer.reply(request, {"subscription": "sub_1", "latestSeq": 11})
        peer.notify("event", event(10, "sub_1"))
        peer.notify("event", event(11, "sub_1"))
        peer.wait_closed()

    f = fake([only])
    w = watch(tmp_path / "fake.sock", "--since", "3")
    assert seqs(w.events(2)) == [10, 11]
    assert w.stop() == 0
    warning = w.err.read_rest()
    assert "data.oldestSeq = 10" in warning and "seq 4 to 9 were missed" in warning, warning
    f.join()


def test_cursor_ahead_on_a_resume_starts_over_with_the_new_log(fake, watch, tmp_path):
    def first(peer: Peer) -> None:
        request = peer.request()
        peer.reply(request, {"subscription": "sub_1", "latestSeq": 3})
        for seq in (1, 2, 3):
            peer.notify("event", event(seq, "sub_1"))

    def second(peer: Peer) -> None:  # a daemon whose state directory was wiped
        request = peer.request()
        assert request["params"] == {"since": 3}
        peer.reply(request, error={"code": 2003, "message": "`since` is past the last event",
                                   "data": {"latestSeq": 1}})
        request = peer.request()
        assert request["params"] == {"since": 1}
        peer.reply(request, {"subscription": "sub_2", "latestSeq": 1})
        peer.notify("event", event(2, "sub_2"))
        peer.wait_closed()

    f = fake([first, second])
    w = watch(tmp_path / "fake.sock", "--since", "0")
    assert seqs(w.events(4)) == [1, 2, 3, 2]
    assert w.stop() == 0
    assert "now ends at seq 1" in w.err.read_rest()
    f.join()


def test_cursor_ahead_from_the_command_line_is_an_error(fake, watch, tmp_path):
    def only(peer: Peer) -> None:
        request = peer.request()
        peer.reply(request, error={"code": 2003, "message": "`since` is past the last event",
                                   "data": {"latestSeq": 1}})
        peer.wait_closed()

    f = fake([only])
    w = watch(tmp_path / "fake.sock", "--since", "5")
    assert w.wait() == 1
    assert json.loads(w.err.read_rest())["code"] == 2003  # stderr is not a terminal: the error as JSON
    f.join()
