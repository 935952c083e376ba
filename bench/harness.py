"""Processes and clients of the benchmark suite, standard library only.

- ``build_c``: compiles bench/*.c with ``cc -O2`` into the output directory (only when stale);
- ``Daemon``: stpd started as systemd would (its own socket and state directory, a NOTIFY_SOCKET
  it reports READY=1 on), timed from just before the exec;
- ``StripeServer``, ``Tap``, ``LineServer``: stripe-test-server, the timing relay (tap.c), and
  the ping peers (echo.c, peer.py), each stopped by its own pid;
- ``Client``: a blocking JSON-RPC client for one connection (replies matched by id);
- ``cpu_seconds``, ``rss_bytes``: a process's figures from /proc.

stpd is reached only through its public interface (a few command-line flags, JSON-RPC on its
socket, READY=1 on NOTIFY_SOCKET), so the suite keeps measuring as stpd's insides change.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
C_PROGRAMS = ("loadgen", "echo", "tap")

STRIPE_SECRET_KEY = "sk_test_stpdBenchSecretKey000000001"
STRIPE_PUBLISHABLE_KEY = "pk_test_stpdBenchPublishableKey0001"
START_TIMEOUT = 300.0  # a daemon with 100,000 sessions may take a while to start today
CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(RuntimeError):
    pass


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def raise_nofile() -> int:
    """Raises this process's open-file limit to its hard limit (children inherit it): fan-out
    and poll runs hold thousands of sockets. Returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def build_c(out_dir: Path) -> dict[str, Path]:
    """Compiles each C program of bench/ into OUT_DIR unless its binary is newer than its source."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cc = os.environ.get("CC", "cc")
    binaries = {}
    for name in C_PROGRAMS:
        source, binary = BENCH_DIR / f"{name}.c", out_dir / name
        if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
            subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(binary), str(source)], check=True)
        binaries[name] = binary
    return binaries


def stop_process(proc: subprocess.Popen, timeout: float = 30.0) -> int:
    """SIGTERM, then SIGKILL after TIMEOUT; returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def _first_line(proc: subprocess.Popen, what: str, timeout: float = 60.0) -> str:
    """The child's first stdout line (it prints one once ready)."""
    assert proc.stdout is not None
    fd, buffer, deadline = proc.stdout.fileno(), b"", time.monotonic() + timeout
    while b"\n" not in buffer:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BenchError(f"{what} printed nothing within {timeout} s")
        if select.select([fd], [], [], remaining)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise BenchError(f"{what} exited ({proc.wait()}) before it was ready")
            buffer += chunk
    return buffer.split(b"\n", 1)[0].decode().strip()


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (as loadgen computes its own)."""
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(p / 100 * len(ordered)))) - 1]


# -- /proc --------------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14 and 15)


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise BenchError(f"no VmRSS for pid {pid}")


def machine() -> dict[str, Any]:
    """What the figures came from: CPU model, cores, memory, kernel, load."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory = int(line.split()[1]) * 1024
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(memory / 2**30, 1),
            "kernel": os.uname().release, "loadavg": list(os.getloadavg())}


# -- JSON-RPC client ----------------------------------------------------------------------------

class RpcError(Exception):
    def __init__(self, error: dict):
        super().__init__(f"{error.get('code')}: {error.get('message')} {error.get('data', '')}")
        self.code = error.get("code")
        self.error = error


class Client:
    """One connection; ``call`` sends a request and waits for the reply with its id (other lines,
    such as event notifications, are skipped). ``last_reply_bytes`` is the size of that reply."""

    def __init__(self, path: Path | str, timeout: float = 120.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.ids = itertools.count(1)
        self.buffer = b""
        self.last_reply_bytes = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def send(self, method: str, params: Any = None) -> int:
        request_id = next(self.ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        return request_id

    def read_line(self) -> bytes:
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line, self.buffer = self.buffer[:newline], self.buffer[newline + 1:]
                return line
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise BenchError("stpd closed the connection")
            self.buffer += chunk

    def reply(self, request_id: int) -> Any:
        while True:
            line = self.read_line()
            message = json.loads(line)
            if isinstance(message, dict) and message.get("id") == request_id:
                self.last_reply_bytes = len(line) + 1
                if "error" in message:
                    raise RpcError(message["error"])
                return message["result"]

    def call(self, method: str, params: Any = None) -> Any:
        return self.reply(self.send(method, params))


# -- stpd ---------------------------------------------------------------------------------------

class Daemon:
    """stpd on its own socket and state directory, with NOTIFY_SOCKET pointing at a datagram
    socket of ours (as systemd would). ``started`` is time.monotonic() just before the exec;
    ``ready_s`` the seconds to READY=1 and ``ping_s`` the seconds to the first answered
    daemon.ping, each measured from ``started``."""

    def __init__(self, stpd: Path, directory: Path, state_dir: Path, *args: str, env: dict[str, str] | None = None,
                 stripe_api_base: str | None = None):
        self.directory = directory
        self.socket_path = directory / "stpd.sock"
        self.state_dir = state_dir
        directory.mkdir(parents=True, exist_ok=True)
        config = directory / "stpd.conf"
        config.touch()  # so that no /etc/stpd/stpd.conf of the machine leaks in
        argv = [str(stpd), "--socket", str(self.socket_path), "--state-dir", str(state_dir), "--config", str(config)]
        full_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("STPD_", "LISTEN_", "WATCHDOG_")) and k not in (
                        "NOTIFY_SOCKET", "STATE_DIRECTORY", "CREDENTIALS_DIRECTORY", "RUNTIME_DIRECTORY")}
        if stripe_api_base:
            argv += ["--stripe-api-base", stripe_api_base]
            full_env["STPD_STRIPE_KEY"] = STRIPE_PUBLISHABLE_KEY
            # stripe-test-server speaks plain http on loopback: a stand-in, which stpd must be told.
            full_env["STPD_ALLOW_INSECURE_STRIPE_BASE"] = "1"
        argv += list(args)
        full_env.update(env or {})
        notify_path = directory / "notify.sock"
        if notify_path.exists():
            notify_path.unlink()
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.notify.bind(str(notify_path))
        full_env["NOTIFY_SOCKET"] = str(notify_path)
        if self.socket_path.exists():
            self.socket_path.unlink()
        self.log_path = directory / "stpd.log"
        self.ready_s: float | None = None
        self.ping_s: float | None = None
        with open(self.log_path, "ab") as log_file:
            self.started = time.monotonic()
            self.proc = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL, stdout=log_file,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_started(self, timeout: float = START_TIMEOUT) -> "Daemon":
        """Waits for both READY=1 and a first answered daemon.ping, noting when each came. The
        socket is tried every millisecond or so, while the notify socket is watched."""
        deadline = self.started + timeout
        while self.ready_s is None or self.ping_s is None:
            if self.proc.poll() is not None:
                raise BenchError(f"stpd exited with {self.proc.returncode} while starting; log:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"stpd was not ready within {timeout} s; log:\n{self.log_tail()}")
            if self.ready_s is None and select.select([self.notify], [], [], 0.001)[0]:
                data = self.notify.recv(65536).decode(errors="replace")
                if "READY=1" in data.split("\n"):
                    self.ready_s = time.monotonic() - self.started
            if self.ping_s is None:
                self._try_ping()
            elif self.ready_s is None:
                select.select([self.notify], [], [], 0.01)
        return self

    def _try_ping(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(self.socket_path))
        except OSError:
            sock.close()
            time.sleep(0.001)
            return
        sock.settimeout(START_TIMEOUT)
        try:
            sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon.ping"}\n')
            data = b""
            while b"\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    return  # closed while starting: try again
                data += chunk
            if b'"result"' in data:
                self.ping_s = time.monotonic() - self.started
        except OSError:
            pass
        finally:
            sock.close()

    def client(self, timeout: float = 120.0) -> Client:
        return Client(self.socket_path, timeout)

    def log_tail(self, limit: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return "(no log)"

    def stop(self) -> int:
        code = stop_process(self.proc, 60.0)
        self.notify.close()
        return code

    def kill(self) -> None:
        """SIGKILL: a crash, nothing flushed or closed."""
        self.proc.kill()
        self.proc.wait()
        self.notify.close()


# -- the other processes ------------------------------------------------------------------------

class StripeServer:
    """The project's stripe-test-server on 127.0.0.1 (ephemeral port)."""

    def __init__(self, binary: Path, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / "stripe-test-server.log", "ab") as log_file:
            self.proc = subprocess.Popen(
                [str(binary), "--port", "0", "--host", "127.0.0.1", "--secret-key", STRIPE_SECRET_KEY,
                 "--publishable-key", STRIPE_PUBLISHABLE_KEY],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log_file, start_new_session=True)
        try:
            line = _first_line(self.proc, "stripe-test-server")
        except BaseException:
            stop_process(self.proc)
            raise
        if not line.startswith("listening on "):
            stop_process(self.proc)
            raise BenchError(f"stripe-test-server printed {line!r}")
        self.base_url = line[len("listening on "):].rstrip("/")
        self.port = int(self.base_url.rsplit(":", 1)[1])

    def stop(self) -> None:
        stop_process(self.proc)


class Tap:
    """tap.c between stpd and stripe-test-server: logs when each GET /v1/sources/ID passes."""

    def __init__(self, binary: Path, upstream_port: int, log_path: Path):
        self.log_path = log_path
        self.proc = subprocess.Popen([str(binary), str(upstream_port), str(log_path)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, start_new_session=True)
        line = _first_line(self.proc, "tap")
        self.base_url = f"http://127.0.0.1:{int(line.rsplit(' ', 1)[1])}"

    def requests(self) -> list[tuple[int, str]]:
        """(monotonic ns, source id) of each source retrieval so far."""
        entries = []
        with open(self.log_path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    entries.append((int(parts[0]), parts[1]))
        return entries

    def stop(self) -> None:
        stop_process(self.proc)


class LineServer:
    """A ping peer (echo.c or peer.py) on its own socket; it prints "ready" once it listens."""

    def __init__(self, argv: list[str], socket_path: Path, name: str):
        self.name = name
        self.socket_path = socket_path
        self.proc = subprocess.Popen(argv + [str(socket_path)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     start_new_session=True)
        line = _first_line(self.proc, name)
        if line != "ready":
            stop_process(self.proc)
            raise BenchError(f"{name} printed {line!r}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        stop_process(self.proc)


def scratch_dir(prefix: str) -> Path:
    """A new directory under /tmp: short enough for Unix socket paths."""
    return Path(tempfile.mkdtemp(prefix=f"stpd-bench-{prefix}-"))


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def python_executable() -> str:
    """The interpreter itself (not a version manager's shim, whose pid would not be Python's)."""
    return os.path.realpath(sys.executable)
