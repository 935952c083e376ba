"""Socket activation with the real user units from systemd/user/, under a private systemd user
manager (its own XDG_RUNTIME_DIR and XDG_CONFIG_HOME under tmp_path; nothing of the caller's
session is touched). A second test runs the system unit's sandbox (systemd/stpd.service.in) around
the real binary in the same kind of manager.

The manager is started with `systemd --user --unit=<an empty target>` so that only the units
the test starts run, and it tells the test it is up through NOTIFY_SOCKET (READY=1), as it
would tell user@.service. Everything it starts inherits a marker variable, which lets the
teardown prove that nothing is left running.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import tempfile
import uuid
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT, clean_environment, unit_text
from rpc import Client

SYSTEMD = Path("/lib/systemd/systemd")
UNITS = REPO_ROOT / "systemd" / "user"
TIMEOUT = 60.0


def processes_with(marker: str) -> list[int]:
    """Pids (other than ours) whose environment holds `marker` (a VAR=value line)."""
    needle = marker.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def runs(pid: int, executable: Path) -> bool:
    """Whether `pid` is (still) a live process running `executable`."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z" and os.fsencode(executable) in argv[:2]


class UserManager:
    def __init__(self, root: Path):
        self.root = root
        self.runtime = root / "run"
        self.config = root / "config"
        self.state = root / "state"
        self.unit_dir = self.config / "systemd" / "user"
        self.marker = f"STPD_HARNESS_USER_MANAGER={root}"
        # Every service the test starts goes in a slice of this manager's own (harness_dropin).
        # Where the user manager cannot have a delegated cgroup (a container), each manager puts
        # stpd.service in the same /app.slice/stpd.service cgroup, and one manager stopping its
        # service would SIGTERM every other manager's stpd with it (two test runs at once on one
        # machine, or two xdist workers). Only those services: systemd-exit.service, which
        # `systemctl --user exit` starts, must stay in -.slice, or its shutdown.target stops the
        # slice it is in and the manager refuses to exit.
        self.slice = f"harness{uuid.uuid4().hex}.slice"
        self.log_path = root / "manager.log"
        self.env = clean_environment(
            XDG_RUNTIME_DIR=str(self.runtime), XDG_CONFIG_HOME=str(self.config),
            XDG_STATE_HOME=str(self.state), XDG_DATA_HOME=str(root / "data"),
            XDG_CACHE_HOME=str(root / "cache"))
        self.env.pop("DBUS_SESSION_BUS_ADDRESS", None)  # systemctl must use our manager's private socket
        self.env.pop("XDG_DATA_DIRS", None)
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.runtime.mkdir(mode=0o700)
        self.unit_dir.mkdir(parents=True)
        # An empty target as the default unit: nothing from /usr/lib/systemd/user starts.
        (self.unit_dir / "harness.target").write_text("[Unit]\nDescription=stpd test harness\n")
        notify_path = self.root / "manager-notify.sock"
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        notify.bind(str(notify_path))
        key, _, value = self.marker.partition("=")
        env = dict(self.env, NOTIFY_SOCKET=str(notify_path), **{key: value})
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([str(SYSTEMD), "--user", "--unit=harness.target"], env=env,
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        try:
            self._wait_ready(notify)
        finally:
            notify.close()

    def _wait_ready(self, notify: socket.socket) -> None:
        deadline = time.monotonic() + TIMEOUT
        pidfd = os.pidfd_open(self.proc.pid)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"the user manager sent no READY=1 in {TIMEOUT} s\n{self.log()}")
                readable, _, _ = select.select([notify, pidfd], [], [], remaining)
                if notify in readable:
                    if "READY=1" in notify.recv(65536).decode(errors="replace").split("\n"):
                        return
                elif pidfd in readable:
                    raise RuntimeError(f"the user manager exited with {self.proc.wait()}\n{self.log()}")
        finally:
            os.close(pidfd)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def harness_dropin(self, unit: str = "stpd.service") -> None:
        """UNIT in this manager's slice, its output kept for failure reports (no journald here)."""
        dropin = self.unit_dir / f"{unit}.d"
        dropin.mkdir(exist_ok=True)
        (dropin / "harness.conf").write_text(
            f"[Service]\nSlice={self.slice}\nStandardOutput=append:{self.root / 'stpd-service.log'}\n"
            f"StandardError=inherit\n")

    def systemctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["systemctl", "--user", "--no-pager", *args], env=self.env,
                              capture_output=True, text=True, timeout=TIMEOUT)
        if check and done.returncode != 0:
            raise AssertionError(f"systemctl --user {' '.join(args)} exited {done.returncode}\n"
                                 f"{done.stdout}{done.stderr}\n{self.status_dump()}")
        return done

    def show(self, unit: str, *properties: str) -> dict[str, str]:
        out = self.systemctl("show", unit, "--property=" + ",".join(properties)).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def wait_for(self, unit: str, prop: str, wanted: str, timeout: float = TIMEOUT) -> dict[str, str]:
        """Bounded poll of one unit property (systemd applies READY=1 asynchronously)."""
        deadline = time.monotonic() + timeout
        while True:
            props = self.show(unit, prop, "ActiveState", "SubState", "Result", "MainPID")
            if props.get(prop) == wanted:
                return props
            if time.monotonic() > deadline:
                raise AssertionError(f"{unit}: {prop} is {props.get(prop)!r}, not {wanted!r}, after {timeout} s: "
                                     f"{props}\n{self.status_dump()}")
            time.sleep(0.05)

    def status_dump(self) -> str:
        done = subprocess.run(["systemctl", "--user", "--no-pager", "status", "stpd.socket", "stpd.service"],
                              env=self.env, capture_output=True, text=True, timeout=TIMEOUT)
        service_log = self.root / "stpd-service.log"
        return (f"--- systemctl status:\n{done.stdout}{done.stderr}"
                f"--- stpd output:\n{service_log.read_text(errors='replace') if service_log.exists() else ''}"
                f"--- manager log:\n{self.log()}")

    def stop(self) -> list[str]:
        """Stops the manager and everything it started; returns what went wrong: the manager
        refusing `systemctl --user exit`, processes that had to be killed."""
        if self.proc is None:
            return []
        problems = []
        if self.proc.poll() is None:
            done = subprocess.run(["systemctl", "--user", "exit"], env=self.env, capture_output=True, text=True,
                                  timeout=TIMEOUT)
            try:
                self.proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                problems.append(f"the user manager did not exit on `systemctl --user exit` within {TIMEOUT} s "
                                f"(exit {done.returncode}: {done.stderr.strip()}); killed it")
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        leftovers = processes_with(self.marker)
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if leftovers:
            problems.append(f"processes left running after the user manager stopped: {leftovers}")
        return problems


def require_systemd() -> None:
    if not SYSTEMD.exists():
        pytest.skip(f"{SYSTEMD} is missing: no systemd to run a user manager with")
    if shutil.which("systemctl") is None:
        pytest.skip("systemctl is missing")
    # systemd refuses to act as a user manager unless the system looks booted with systemd.
    marker_dir = Path("/run/systemd/system")
    if not marker_dir.is_dir():
        try:
            marker_dir.mkdir(parents=True, exist_ok=True)  # exist_ok: another xdist worker may be first
        except PermissionError:
            pytest.skip(f"{marker_dir} is missing and cannot be created without root")


@pytest.fixture
def user_manager(tmp_path):
    require_systemd()
    manager = UserManager(tmp_path)
    try:
        manager.start()
        yield manager
    finally:
        problems = manager.stop()
        assert not problems, problems


def install_user_units(manager: UserManager, stpd_bin: Path, *extra_args: str) -> None:
    for name in ("stpd.socket", "stpd.service"):
        text = unit_text(UNITS, name)
        if name == "stpd.service":
            command = " ".join([str(stpd_bin), "--log-level", "debug", *extra_args])
            text, count = re.subn(r"(?m)^ExecStart=.*$", f"ExecStart={command}", text)
            assert count == 1, "systemd/user/stpd.service.in should have exactly one ExecStart="
        (manager.unit_dir / name).write_text(text)
    manager.harness_dropin()
    manager.systemctl("daemon-reload")


def connect_and_status(manager: UserManager, socket_path: Path, checker) -> dict:
    with Client(str(socket_path), timeout=TIMEOUT, checker=checker) as client:
        assert client.call("daemon.ping")["pong"] is True
        return client.call("daemon.status")


def test_socket_activation_with_the_user_units(user_manager, stpd_bin, checker):
    manager = user_manager
    install_user_units(manager, stpd_bin)
    socket_path = manager.runtime / "stpd.sock"

    manager.systemctl("start", "stpd.socket")

    # The socket listens (mode 0600, from SocketMode=) while the service is not running.
    assert manager.show("stpd.socket", "ActiveState", "SubState") == {"ActiveState": "active", "SubState": "listening"}
    assert manager.show("stpd.service", "ActiveState")["ActiveState"] == "inactive"
    info = os.stat(socket_path)
    assert stat.S_ISSOCK(info.st_mode)
    assert stat.S_IMODE(info.st_mode) == 0o600

    # The first client starts the service; it becomes active through Type=notify (READY=1).
    first = connect_and_status(manager, socket_path, checker)
    props = manager.wait_for("stpd.service", "ActiveState", "active")
    assert props["SubState"] == "running"
    assert manager.show("stpd.service", "Type")["Type"] == "notify"
    assert manager.show("stpd.service", "Slice")["Slice"] == manager.slice  # see UserManager.slice
    assert first["activation"] == "socket"
    assert first["socketPath"] == str(socket_path)
    assert first["pid"] == int(props["MainPID"])
    assert runs(first["pid"], stpd_bin)
    # No StateDirectory= in the user unit (see its comment): stpd's default, $XDG_STATE_HOME/stpd.
    assert first["stateDirectory"] == str(manager.state / "stpd")
    assert stat.S_IMODE(os.stat(manager.state / "stpd").st_mode) == 0o700
    status_text = manager.show("stpd.service", "StatusText")["StatusText"]
    assert status_text, "stpd sent no STATUS= line"

    # Stopping the service leaves the socket to systemd; stpd exits 0 on SIGTERM.
    manager.systemctl("stop", "stpd.service")
    props = manager.show("stpd.service", "ActiveState", "Result", "ExecMainStatus", "ExecMainCode")
    assert props == {"ActiveState": "inactive", "Result": "success", "ExecMainStatus": "0", "ExecMainCode": "1"}, \
        f"stpd did not exit 0 on SIGTERM (ExecMainCode 1 = exited): {props}\n{manager.status_dump()}"
    assert not runs(first["pid"], stpd_bin), "the stopped stpd is still running"
    assert manager.show("stpd.socket", "ActiveState", "SubState") == {"ActiveState": "active", "SubState": "listening"}
    assert stat.S_ISSOCK(os.stat(socket_path).st_mode)

    # The next client starts it again: a new process, still socket-activated.
    second = connect_and_status(manager, socket_path, checker)
    props = manager.wait_for("stpd.service", "ActiveState", "active")
    assert second["activation"] == "socket"
    assert second["pid"] == int(props["MainPID"])
    assert second["pid"] != first["pid"]
    assert second["socketPath"] == str(socket_path)

    # Stopping the socket unit stops the service too (Requires=) and removes the node (RemoveOnStop=).
    manager.systemctl("stop", "stpd.socket")
    assert manager.show("stpd.service", "ActiveState")["ActiveState"] == "inactive"
    assert manager.show("stpd.service", "Result")["Result"] == "success"
    assert not socket_path.exists()


def test_exit_on_idle_and_reactivation(user_manager, stpd_bin, checker):
    manager = user_manager
    install_user_units(manager, stpd_bin, "--idle-timeout", "1")
    socket_path = manager.runtime / "stpd.sock"
    manager.systemctl("start", "stpd.socket")

    first = connect_and_status(manager, socket_path, checker)
    # Once the client is gone stpd is idle: after a second it exits by itself, and cleanly,
    # so Restart=on-failure leaves it stopped and the socket waits for the next client.
    props = manager.wait_for("stpd.service", "ActiveState", "inactive")
    props = manager.show("stpd.service", "ActiveState", "Result", "ExecMainStatus", "NRestarts")
    assert props == {"ActiveState": "inactive", "Result": "success", "ExecMainStatus": "0", "NRestarts": "0"}, \
        f"{props}\n{manager.status_dump()}"
    assert not runs(first["pid"], stpd_bin)
    assert manager.show("stpd.socket", "SubState")["SubState"] == "listening"

    second = connect_and_status(manager, socket_path, checker)
    assert second["activation"] == "socket"
    assert second["pid"] != first["pid"]


# --- the system unit's sandbox -------------------------------------------------------------------

SYSTEM_UNITS = REPO_ROOT / "systemd"
# A user manager cannot switch to another uid, and group "stpd" need not exist here.
NOT_IN_A_USER_MANAGER = ("DynamicUser=", "User=", "SocketUser=", "SocketGroup=")


def service_settings(text: str) -> list[str]:
    section, settings = None, []
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip()
        elif section == "[Service]" and line and not line.startswith("#"):
            settings.append(line)
    return settings


@pytest.fixture
def sandbox_manager():
    """A user manager rooted under /var/lib: the sandbox gives the service its own /tmp and
    /var/tmp (PrivateTmp=), hides /home and /root (ProtectHome=) and, where /run is not a
    mount point, mounts an empty /run (MountAPIVFS=, implied by ProtectProc= and others), and the
    service must still reach the manager's notify socket."""
    require_systemd()
    if os.geteuid() != 0:
        pytest.skip("the sandbox's mount namespaces need a user manager running as root")
    root = Path(tempfile.mkdtemp(prefix="stpd-sandbox-test.", dir="/var/lib"))
    manager = UserManager(root)
    try:
        manager.start()
        yield manager
    finally:
        problems = manager.stop()
        shutil.rmtree(root, ignore_errors=True)
        assert not problems, problems


def unusable_here(manager: UserManager, settings: list[str]) -> list[str]:
    """The settings that this machine's kernel/mounts do not let a user manager apply (each is
    tried on its own around /bin/true; a failure is status 226/NAMESPACE or similar)."""
    probes = {}
    for index, setting in enumerate(settings):
        name = f"probe{index}.service"
        (manager.unit_dir / name).write_text(
            f"[Service]\nType=oneshot\nExecStart=/bin/true\nSlice={manager.slice}\n{setting}\n")
        probes[name] = setting
    manager.systemctl("daemon-reload")
    failing = []
    for name, setting in probes.items():
        if manager.systemctl("start", name, check=False).returncode != 0:
            failing.append(setting)
        (manager.unit_dir / name).unlink()
    manager.systemctl("daemon-reload")
    return failing


def test_system_unit_sandbox_runs_stpd(sandbox_manager, stpd_bin, checker):
    manager = sandbox_manager
    if str(stpd_bin).startswith(("/home/", "/root/", "/tmp/", "/var/tmp/", "/run/")):
        pytest.skip(f"{stpd_bin} would be hidden by the sandbox (ProtectHome=/PrivateTmp=)")
    service = unit_text(SYSTEM_UNITS, "stpd.service")
    sandbox = [s for s in service_settings(service)
               if s.startswith(("Protect", "Private", "Proc", "Restrict", "Memory", "Lock", "SystemCall",
                                "Capability", "Keyring", "Device", "NoNew", "RemoveIPC", "UMask",
                                "LoadCredential", "StateDirectory"))]
    dropped = unusable_here(manager, sandbox)
    if dropped:
        print(f"\nnot applicable in a user manager on this machine, so not exercised: {dropped}")
    assert not [s for s in dropped if not s.startswith(("Protect", "Private"))], \
        f"settings refused by the user manager: {dropped}"
    lines = []
    for line in service.splitlines():
        if line.startswith(NOT_IN_A_USER_MANAGER) or line in dropped:
            continue
        if line.startswith("ExecStart="):
            line = f"ExecStart={stpd_bin} --log-level debug"
        lines.append(line)
    (manager.unit_dir / "stpd.service").write_text("\n".join(lines) + "\n")
    socket_unit = unit_text(SYSTEM_UNITS, "stpd.socket")
    socket_path = manager.runtime / "stpd.sock"
    socket_unit = re.sub(r"(?m)^ListenStream=.*$", f"ListenStream={socket_path}", socket_unit)
    socket_unit = "\n".join(l for l in socket_unit.splitlines() if not l.startswith(NOT_IN_A_USER_MANAGER))
    (manager.unit_dir / "stpd.socket").write_text(socket_unit + "\n")
    manager.harness_dropin()
    manager.systemctl("daemon-reload")
    manager.systemctl("start", "stpd.socket")
    assert stat.S_IMODE(os.stat(socket_path).st_mode) == 0o660

    status = connect_and_status(manager, socket_path, checker)
    props = manager.wait_for("stpd.service", "ActiveState", "active")
    pid = int(props["MainPID"])
    assert status["pid"] == pid and status["activation"] == "socket"
    # StateDirectory= is the one writable place under ProtectSystem=strict (in a user manager
    # of systemd 252 it lies under $XDG_CONFIG_HOME, later under $XDG_STATE_HOME).
    assert Path(status["stateDirectory"]).name == "stpd"
    assert Path(status["stateDirectory"]).parent in (manager.config, manager.state)
    proc_status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                       if ":\t" in line)
    assert proc_status["Seccomp"].strip() == "2", "no seccomp filter (SystemCallFilter=)"
    assert proc_status["NoNewPrivs"].strip() == "1"
    assert int(proc_status["CapBnd"], 16) == 0, "CapabilityBoundingSet= is not empty"
    assert manager.show("stpd.service", "StatusText")["StatusText"]

    manager.systemctl("stop", "stpd.service")
    props = manager.show("stpd.service", "ActiveState", "Result", "ExecMainStatus", "ExecMainCode")
    assert props == {"ActiveState": "inactive", "Result": "success", "ExecMainStatus": "0", "ExecMainCode": "1"}, \
        f"sandboxed stpd did not exit 0 on SIGTERM: {props}\n{manager.status_dump()}"
