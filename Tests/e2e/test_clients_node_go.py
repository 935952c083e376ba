"""The Node (clients/node) and Go (clients/go) clients against the real stpd.

Each client's own tests (`node --test`, `go test`) run against a daemon started here: ping, calls
pipelined and answered out of order, typed errors, handle-url, a subscription that is dropped for
reading too slowly and resumes without a gap. Then each example program, as a user runs it: ping,
an error reply, handle-url, and `watch` across a daemon restart. Go builds offline: the module has
no requirements, GOPROXY=off and GOTOOLCHAIN=local.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import REPO_ROOT, clean_environment
from rpc import Client

NODE_DIR = REPO_ROOT / "clients" / "node"
GO_DIR = REPO_ROOT / "clients" / "go"
RUN_TIMEOUT = 300


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        # Not a skip: CI installs both (scripts/bootstrap test), and a client nobody tests rots.
        pytest.fail(f"`{name}` is not installed: run scripts/bootstrap test")
    return path


def go_environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = clean_environment(GOTOOLCHAIN="local", GOPROXY="off", GOFLAGS="", GO111MODULE="on",
                            GOPATH=str(tmp_path / "gopath"), **extra)
    env.setdefault("GOCACHE", str(Path(env.get("HOME", str(tmp_path))) / ".cache" / "go-build"))
    return env


@pytest.fixture
def daemon(start_stpd, tmp_path):
    return start_stpd(tmp_path / "stpd", "--debug-methods", "--max-outbound-bytes", "65536")


def test_node_client_suite(daemon):
    done = subprocess.run([tool("node"), "--test", "test/"], cwd=NODE_DIR, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=clean_environment(STPD_SOCKET=str(daemon.socket_path)))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    counts = dict(re.findall(r"^# (tests|pass|fail|skipped|todo) (\d+)$", output, re.M))
    assert counts.get("fail") == "0" and counts.get("skipped") == "0", output
    assert int(counts.get("pass", "0")) >= 8, output


def test_go_client_suite(daemon, tmp_path):
    env = go_environment(tmp_path, STPD_SOCKET=str(daemon.socket_path))
    done = subprocess.run([tool("go"), "test", "-count=1", "-v", "./..."], cwd=GO_DIR, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "--- SKIP" not in output, output
    passed = set(re.findall(r"^--- PASS: (\w+)", output, re.M))
    assert {"TestPing", "TestPipelinedCallsAreAnsweredOutOfOrder", "TestErrorRepliesAreTyped", "TestHandleURL",
            "TestSubscriptionReplaysThenFollows",
            "TestSlowSubscriptionIsDroppedAndResumesWithoutLoss"} <= passed, output


def test_go_sources_are_gofmt_clean_and_vet_clean(tmp_path):
    done = subprocess.run([str(Path(tool("go")).with_name("gofmt")), "-l", "."], cwd=GO_DIR, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", f"not gofmt-formatted: {done.stdout}{done.stderr}"
    done = subprocess.run([tool("go"), "vet", "./..."], cwd=GO_DIR, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=go_environment(tmp_path))
    assert done.returncode == 0, done.stderr


# -- the example programs, as a user runs them ---------------------------------------------------------

@pytest.fixture(scope="module")
def go_example(tmp_path_factory) -> Path:
    tmp_path = tmp_path_factory.mktemp("go-example")
    binary = tmp_path / "stpd-example"
    done = subprocess.run([tool("go"), "build", "-o", str(binary), "./cmd/stpd-example"], cwd=GO_DIR,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT, env=go_environment(tmp_path))
    assert done.returncode == 0, done.stderr
    return binary


@pytest.fixture(params=["node", "go"])
def example(request) -> list[str]:
    """The command line that runs one client's example program (options go after it)."""
    if request.param == "node":
        return [tool("node"), str(NODE_DIR / "example.mjs")]
    return [str(request.getfixturevalue("go_example"))]


def run(command: list[str], *args: str, socket: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=clean_environment(STPD_SOCKET=str(socket)))


def test_example_ping_pipelines_ping_and_status(example, daemon):
    done = run(example, "ping", socket=daemon.socket_path)
    assert done.returncode == 0, done.stderr
    pong, status = [json.loads(line) for line in done.stdout.splitlines()]
    daemon.checker.check_result("daemon.ping", pong)
    assert pong["pong"] is True and status == {"pid": daemon.pid, "activation": "bound"}


def test_example_reports_an_error_reply_with_code_message_and_data(example, daemon):
    done = run(example, "call", "events.wait", '{"since": "zero"}', socket=daemon.socket_path)
    assert done.returncode == 1, (done.stdout, done.stderr)
    error = json.loads(done.stderr.strip().splitlines()[-1])
    assert error["name"] == "InvalidParams" and error["code"] == -32602
    assert error["data"]["parameter"] == "since" and error["message"]
    done = run(example, "call", "events.unsubscribe", '{"subscription": "sub_none"}', socket=daemon.socket_path)
    assert done.returncode == 1 and json.loads(done.stderr)["name"] == "SubscriptionNotFound"


def test_example_handle_url(example, daemon):
    done = run(example, "handle-url", "myshop://stripe-redirect?order=1", socket=daemon.socket_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"handled": False, "session": None}


def test_example_cannot_connect(example, tmp_path):
    done = run(example, "ping", socket=tmp_path / "nobody.sock")
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "cannot connect" in done.stderr


def test_example_watch_resumes_across_a_restart(example, start_stpd, tmp_path):
    directory = tmp_path / "stpd"
    daemon = start_stpd(directory, "--debug-methods")
    with Client(str(daemon.socket_path), checker=daemon.checker) as client:
        client.call("debug.emit", {"count": 3, "objectId": "dbg_watch"})
    watcher = subprocess.Popen([*example, "watch", "--since", "1", "--count", "6"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               env=clean_environment(STPD_SOCKET=str(daemon.socket_path)))
    lines_read: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines_read.put(line) for line in watcher.stdout], daemon=True).start()
    try:
        lines = [json.loads(lines_read.get(timeout=60)) for _ in range(2)]
        assert [e["seq"] for e in lines] == [2, 3]
        assert daemon.terminate() == 0
        restarted = start_stpd(directory, "--debug-methods")
        with Client(str(restarted.socket_path), checker=restarted.checker) as client:
            client.call("debug.emit", {"count": 4, "objectId": "dbg_watch"})
        assert watcher.wait(60) == 0, watcher.stderr.read()
        err = watcher.stderr.read()
        lines += [json.loads(lines_read.get(timeout=10)) for _ in range(4)]
        assert [e["seq"] for e in lines] == [2, 3, 4, 5, 6, 7]
        assert {e["type"] for e in lines} == {"debug.test"} and {e["objectId"] for e in lines} == {"dbg_watch"}
        assert "reconnects 1" in err, err
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()


def test_go_module_has_no_requirements():
    module = (GO_DIR / "go.mod").read_text()
    assert "require" not in module and not (GO_DIR / "go.sum").exists(), module
    assert os.path.exists(GO_DIR / "errors.go")
