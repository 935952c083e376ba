"""Fixtures for the end-to-end tests of stpd (run: .venv/bin/pytest -q tests).

The stpd binary comes from $STPD_BIN_DIR, else from `swift build --show-bin-path` run in the
repository root (nothing is built here: run `swift build` first). Daemons are started with
their socket and state directory under the test's tmp_path, and are known to be ready when
they send READY=1 to a notify socket the test owns, exactly as systemd would see it.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from contract import ContractChecker
from rpc import Client
from stripe_check import RequestCheck

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTRACT_PATH = REPO_ROOT / "proto" / "stpd.openrpc.json"

READY_TIMEOUT = float(os.environ.get("STPD_TEST_READY_TIMEOUT", "60"))
STOP_TIMEOUT = 30.0

# Variables that would change how stpd starts if they leaked in from the caller's environment.
_SCRUBBED_PREFIXES = ("STPD_", "LISTEN_", "WATCHDOG_")
_SCRUBBED = {"NOTIFY_SOCKET", "STATE_DIRECTORY", "CREDENTIALS_DIRECTORY", "RUNTIME_DIRECTORY"}


def unit_text(directory: Path, name: str) -> str:
    """A unit file of systemd/ as `make install` (PREFIX=/usr/local) writes it: the services are
    templates (stpd.service.in) with @BINDIR@ and @SYSCONFDIR@ in them."""
    template = directory / f"{name}.in"
    if not template.exists():
        return (directory / name).read_text()
    return template.read_text().replace("@BINDIR@", "/usr/local/bin").replace("@SYSCONFDIR@", "/etc")


def clean_environment(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in _SCRUBBED and not k.startswith(_SCRUBBED_PREFIXES)}
    env.update(overrides)
    return env


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    configured = os.environ.get("STPD_BIN_DIR")
    if configured:
        path = Path(configured)
    else:
        try:
            out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO_ROOT, check=True,
                                 capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as error:
            pytest.fail(f"cannot find the build directory (set STPD_BIN_DIR or install swift): {error}")
        path = Path(out.stdout.strip().splitlines()[-1])
    if not (path / "stpd").is_file():
        pytest.fail(f"no stpd binary in {path}: run `swift build` in {REPO_ROOT} first "
                    f"(or point STPD_BIN_DIR at a directory holding stpd)")
    return path


@pytest.fixture(scope="session")
def stpd_bin(bin_dir: Path) -> Path:
    return bin_dir / "stpd"


@pytest.fixture(scope="session")
def contract_path() -> Path:
    return Path(os.environ.get("STPD_CONTRACT", CONTRACT_PATH))


@pytest.fixture(scope="session")
def contract(contract_path: Path) -> dict:
    return json.loads(contract_path.read_text())


@pytest.fixture(scope="session")
def checker(contract: dict) -> ContractChecker:
    return ContractChecker(contract)


class Daemon:
    """One stpd process started by a test, with the notify socket it reports to."""

    def __init__(self, proc: subprocess.Popen, socket_path: Path, state_dir: Path,
                 notify: socket.socket, log_path: Path, checker: ContractChecker):
        self.proc = proc
        self.socket_path = socket_path
        self.state_dir = state_dir
        self.notify = notify
        self.log_path = log_path
        self.checker = checker
        self.notifications: list[str] = []  # sd_notify datagrams received, in order
        self.command: list[str] = [str(a) for a in proc.args]
        self.listeners: list[socket.socket] = []  # sockets passed by activation, held like PID 1

    @property
    def pid(self) -> int:
        return self.proc.pid

    def client(self, **kwargs: Any) -> Client:
        """A connected client whose every reply is checked against the contract."""
        kwargs.setdefault("checker", self.checker)
        return Client(str(self.socket_path), **kwargs)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def _drain_notify(self) -> None:
        while True:
            try:
                data = self.notify.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            self.notifications.append(data.decode(errors="replace"))

    def wait_notify(self, assignment: str, timeout: float = READY_TIMEOUT) -> str:
        """Blocks until a notify datagram holds the line `assignment` (e.g. "READY=1").
        Wakes on the datagram or on the process exiting (pidfd), never on a timer."""
        deadline = time.monotonic() + timeout
        try:
            pidfd = os.pidfd_open(self.proc.pid)
        except ProcessLookupError:  # already exited and reaped
            pidfd = None
        try:
            while True:
                self._drain_notify()
                for message in self.notifications:
                    if assignment in message.split("\n"):
                        return message
                if pidfd is None:
                    raise RuntimeError(f"stpd exited ({self.proc.poll()}) without sending {assignment}; "
                                       f"notifications: {self.notifications}\n--- log:\n{self.log()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"stpd sent no {assignment} within {timeout} s; "
                                       f"notifications so far: {self.notifications}\n--- log:\n{self.log()}")
                readable, _, _ = select.select([self.notify, pidfd], [], [], remaining)
                if pidfd in readable and self.notify not in readable:
                    self._drain_notify()
                    if any(assignment in m.split("\n") for m in self.notifications):
                        continue
                    code = self.proc.wait()
                    raise RuntimeError(f"stpd exited with {code} before sending {assignment}; "
                                       f"notifications: {self.notifications}\n--- log:\n{self.log()}")
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def notify_messages(self) -> list[str]:
        self._drain_notify()
        return list(self.notifications)

    def wait_exit(self, timeout: float = STOP_TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"stpd (pid {self.pid}) did not exit within {timeout} s; killed it\n"
                                 f"--- log:\n{self.log()}")

    def terminate(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, wait, and SIGKILL if it does not exit; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def close(self) -> None:
        self.notify.close()
        for listener in self.listeners:
            listener.close()


# Runs in the child: moves the passed sockets to fds 3, 4, ..., sets LISTEN_PID to its own pid
# and execs stpd, which keeps that pid.
_ACTIVATE_SHIM = """
import os, sys
fds = [int(fd) for fd in sys.argv[1].split(",")]
for index, fd in enumerate(fds):
    os.dup2(fd, 3 + index)
for fd in fds:
    os.close(fd)
os.environ["LISTEN_PID"] = str(os.getpid())
os.execv(sys.argv[2], sys.argv[2:])
"""


def launch_stpd(stpd_bin: Path, checker: ContractChecker, directory: Path, *args: str,
                env: dict[str, str | None] | None = None, wait_ready: bool = True,
                default_args: bool = True, activate: list[tuple[Path, str]] | None = None) -> Daemon:
    """Starts stpd with its socket at DIRECTORY/stpd.sock and state in DIRECTORY/state
    (unless ARGS name --socket / --state-dir, or default_args is false: then ENV must say
    where) and waits for READY=1 unless told not to.

    ACTIVATE, a list of (socket path, fd name), socket-activates stpd instead: the test binds
    and keeps those listening sockets (as PID 1 would) and passes them as fds 3, 4, ..."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    socket_path = directory / "stpd.sock"
    state_dir = directory / "state"
    argv = [str(stpd_bin)]
    if activate:
        socket_path = Path(activate[-1][0])
        env = dict(env or {}, LISTEN_FDS=str(len(activate)),
                   LISTEN_FDNAMES=":".join(name for _, name in activate))
    if "--socket" in args:
        socket_path = Path(args[args.index("--socket") + 1])
    elif default_args and not activate:
        argv += ["--socket", str(socket_path)]
    elif env and env.get("STPD_SOCKET"):
        socket_path = Path(env["STPD_SOCKET"])
    if "--state-dir" in args:
        state_dir = Path(args[args.index("--state-dir") + 1])
    elif default_args:
        argv += ["--state-dir", str(state_dir)]
    elif env and env.get("STPD_STATE_DIR"):
        state_dir = Path(env["STPD_STATE_DIR"])
    if "--config" not in args:
        # An empty config file, so that no /etc/stpd/stpd.conf of the machine leaks in.
        config = directory / "stpd.conf"
        config.touch()
        argv += ["--config", str(config)]
    argv += list(args)
    command = list(argv)

    listeners: list[socket.socket] = []
    pass_fds: list[int] = []
    if activate:
        # Socket activation as PID 1 does it: the listening sockets at fds 3, 4, ... with
        # LISTEN_FDS, LISTEN_FDNAMES and LISTEN_PID, which the shim sets to its own pid
        # before it execs stpd.
        for path, _ in activate:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            listener.listen(64)
            listeners.append(listener)
            pass_fds.append(fcntl.fcntl(listener.fileno(), fcntl.F_DUPFD_CLOEXEC, 100))
        argv = [sys.executable, "-c", _ACTIVATE_SHIM, ",".join(map(str, pass_fds))] + argv

    notify_path = directory / "notify.sock"
    if notify_path.exists():
        notify_path.unlink()
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    notify.bind(str(notify_path))

    # The Stripe stand-ins (stripe-test-server, localstripe) speak plain http on loopback, which
    # stpd takes only when told it is a test stand-in.
    full_env = clean_environment(XDG_STATE_HOME=str(directory / "xdg-state"),
                                 NOTIFY_SOCKET=str(notify_path), STPD_ALLOW_INSECURE_STRIPE_BASE="1")
    for key, value in (env or {}).items():  # None removes a variable
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    log_path = directory / "stpd.log"
    with open(log_path, "ab") as log:
        try:
            proc = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True, pass_fds=pass_fds)
        finally:
            for fd in pass_fds:
                os.close(fd)
    daemon = Daemon(proc, socket_path, state_dir, notify, log_path, checker)
    daemon.listeners = listeners
    daemon.command = command
    if wait_ready:
        try:
            daemon.wait_notify("READY=1")
        except BaseException:
            daemon.kill()
            daemon.close()
            raise
    return daemon


def _daemons(stpd_bin: Path, checker: ContractChecker):
    """Yields start(directory, *args, env=None, wait_ready=True, default_args=True, activate=None) -> Daemon.

    At the end every daemon still running gets SIGTERM and must exit 0 (then SIGKILL if it
    hangs); nothing is left running."""
    daemons: list[Daemon] = []

    def start(directory: Path, *args: str, env: dict[str, str | None] | None = None,
              wait_ready: bool = True, default_args: bool = True,
              activate: list[tuple[Path, str]] | None = None) -> Daemon:
        daemon = launch_stpd(stpd_bin, checker, directory, *args, env=env, wait_ready=wait_ready,
                             default_args=default_args, activate=activate)
        daemons.append(daemon)
        return daemon

    yield start

    failures = []
    for daemon in daemons:
        if daemon.proc.poll() is None:
            try:
                code = daemon.terminate()
            except AssertionError as error:
                failures.append(str(error))
            else:
                if code != 0:
                    failures.append(f"{' '.join(daemon.command)} exited {code} on SIGTERM "
                                    f"(expected 0)\n--- log:\n{daemon.log()}")
        daemon.kill()
        daemon.close()
    assert not failures, "\n".join(failures)


@pytest.fixture
def start_stpd(stpd_bin: Path, checker: ContractChecker) -> Callable[..., Daemon]:
    """start_stpd(directory, *args, env=None, wait_ready=True, default_args=True, activate=None) -> Daemon,
    stopped (and required to exit 0) at the test's end."""
    yield from _daemons(stpd_bin, checker)


@pytest.fixture(scope="module")
def module_start_stpd(stpd_bin: Path, checker: ContractChecker) -> Callable[..., Daemon]:
    """start_stpd for a daemon that every test of a module shares, stopped at the module's end."""
    yield from _daemons(stpd_bin, checker)


# -- running in parallel (pytest-xdist; docs/development.md, "The end-to-end suite in parallel") ---

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slowest", type=int, default=0, metavar="N",
                     help="list the N test files and the N tests that took longest (setup, call and teardown "
                          "added up), here and, with --slowest-to=PATH, at the end of PATH")
    parser.addoption("--slowest-to", default=None, metavar="PATH", help="see --slowest")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "serial: the test stops or holds something every other test shares (the PostgreSQL "
                   "cluster of scripts/test-postgres, a fixed path): a run with -n leaves it out and "
                   "scripts/e2e runs it afterwards, alone (pytest -m serial)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A worker of a -n run: the serial tests are not for it (every worker collects the same set).
    if not hasattr(config, "workerinput"):
        return
    serial = [item for item in items if item.get_closest_marker("serial")]
    if serial:
        config.hook.pytest_deselected(items=serial)
        items[:] = [item for item in items if not item.get_closest_marker("serial")]


_test_seconds: dict[str, float] = {}  # node id -> setup + call + teardown


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _test_seconds[report.nodeid] = _test_seconds.get(report.nodeid, 0.0) + report.duration


def _report_slowest(terminalreporter, config: pytest.Config) -> None:
    count = config.getoption("slowest")
    if count <= 0 or not _test_seconds:
        return
    files: dict[str, list] = {}
    for nodeid, seconds in _test_seconds.items():
        entry = files.setdefault(nodeid.split("::", 1)[0], [0.0, 0])
        entry[0] += seconds
        entry[1] += 1
    lines = [f"slowest {count} test files (their tests' seconds added up):"]
    lines += [f"{seconds:8.1f}s {tests:4d} tests  {path}"
              for path, (seconds, tests) in sorted(files.items(), key=lambda kv: -kv[1][0])[:count]]
    lines += [f"slowest {count} tests (setup + call + teardown):"]
    lines += [f"{seconds:8.1f}s  {nodeid}"
              for nodeid, seconds in sorted(_test_seconds.items(), key=lambda kv: -kv[1])[:count]]
    terminalreporter.section("slowest")
    for line in lines:
        terminalreporter.line(line)
    if config.getoption("slowest_to"):
        with open(config.getoption("slowest_to"), "a") as out:
            out.write("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def postgres_cluster():
    """The PostgreSQL cluster of scripts/test-postgres (fleet.Postgres), shared by every test of
    the run: tests make databases of their own in it and never stop it. A module whose tests stop
    their cluster overrides this fixture with one of its own (test_fleet_faults.py)."""
    from fleet import Postgres

    return Postgres()


# -- Stripe stand-ins (see stripe_servers.py) ----------------------------------------------------

# Every request stpd sent to a stripe-test-server this session, checked against the stripe
# package's types once the tests are done (stripe_check.py): a request Stripe would refuse fails the run.
_stripe_requests = RequestCheck()
_stripe_findings: list[str] = []


def _stand_in(bin_dir: Path, directory: Path, request: pytest.FixtureRequest):
    from stripe_servers import start_stripe_test_server

    server = start_stripe_test_server(bin_dir / "stripe-test-server", directory)
    yield server
    try:
        _stripe_requests.collect(request.node.nodeid, server.every_request())
    finally:
        server.stop()


@pytest.fixture
def stripe_test_server(bin_dir: Path, tmp_path: Path, request: pytest.FixtureRequest):
    """The project's stripe-test-server on 127.0.0.1 (ephemeral port), stopped at teardown.
    Its keys are stripe_servers.TEST_SECRET_KEY / TEST_PUBLISHABLE_KEY (`.secret_key`,
    `.publishable_key`); `.base_url` is what STPD_STRIPE_API_BASE takes."""
    yield from _stand_in(bin_dir, tmp_path / "stripe-test-server", request)


@pytest.fixture(scope="module")
def module_stripe_test_server(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory,
                              request: pytest.FixtureRequest):
    """stripe_test_server shared by every test of a module (its requests are checked at the end)."""
    yield from _stand_in(bin_dir, tmp_path_factory.mktemp("stripe-test-server"), request)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Under pytest-xdist each worker checks the requests its own tests caused and hands the
    # findings to the controller (pytest_testnodedown), whose exit status is the run's.
    _stripe_findings.extend(_stripe_requests.findings())
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["stripe_findings"] = list(_stripe_findings)
    if _stripe_findings:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: a worker finished (or died)
def pytest_testnodedown(node, error) -> None:
    _stripe_findings.extend(getattr(node, "workeroutput", {}).get("stripe_findings", []))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if _stripe_findings:
        terminalreporter.section("requests stpd sent that Stripe's API types refuse (stripe_check.py)", red=True)
        for finding in _stripe_findings:
            terminalreporter.line(finding)
    _report_slowest(terminalreporter, config)


@pytest.fixture
def localstripe_server(tmp_path: Path):
    """localstripe's app bound to 127.0.0.1 (ephemeral port), working directory (and pickle)
    under tmp_path, stopped at teardown. Skips only when localstripe cannot be imported."""
    from stripe_servers import localstripe_available, start_localstripe

    reason = localstripe_available()
    if reason:
        pytest.skip(reason)
    server = start_localstripe(tmp_path / "localstripe")
    yield server
    server.stop()
