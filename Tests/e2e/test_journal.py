"""Under systemd, stpd logs to the journal with structured fields (design brief section 5).

journald is not running on the test machines, so the test plays it: it binds the journal's
socket and reads the native-protocol datagrams stpd sends when JOURNAL_STREAM says its stderr
is the journal."""

import os
import select
import socket
import struct
import time
from pathlib import Path

import pytest

JOURNAL_SOCKET = Path("/run/systemd/journal/socket")

# The journal's socket is one fixed path, and a user manager of another test would log to it.
pytestmark = pytest.mark.serial


@pytest.fixture
def fake_journald():
    if os.geteuid() != 0:
        pytest.skip("binding /run/systemd/journal/socket needs root")
    if JOURNAL_SOCKET.exists():
        pytest.skip("a real journald owns /run/systemd/journal/socket")
    created_dir = not JOURNAL_SOCKET.parent.exists()
    JOURNAL_SOCKET.parent.mkdir(parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(JOURNAL_SOCKET))
    try:
        yield sock
    finally:
        sock.close()
        JOURNAL_SOCKET.unlink()
        if created_dir:
            JOURNAL_SOCKET.parent.rmdir()


def parse_entry(datagram: bytes) -> dict[str, str]:
    """The journal's native protocol: KEY=VALUE lines, or KEY, newline, 64-bit length, value."""
    fields, rest = {}, datagram
    while rest:
        line, _, rest = rest.partition(b"\n")
        if b"=" in line:
            key, _, value = line.partition(b"=")
        else:
            (length,) = struct.unpack("<Q", rest[:8])
            key, value, rest = line, rest[8:8 + length], rest[8 + length + 1:]
        fields[key.decode()] = value.decode(errors="replace")
    return fields


def read_until(sock: socket.socket, predicate, timeout: float = 15.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    seen = []
    while (remaining := deadline - time.monotonic()) > 0:
        if not select.select([sock], [], [], remaining)[0]:
            break
        entry = parse_entry(sock.recv(1 << 20))
        seen.append(entry)
        if predicate(entry):
            return entry
    raise AssertionError(f"no matching journal entry; got {seen}")


def test_logs_go_to_the_journal_with_structured_fields(start_stpd, tmp_path, fake_journald):
    log = tmp_path / "stpd.log"  # what the harness connects stderr to
    log.touch()
    info = os.stat(log)
    daemon = start_stpd(tmp_path, env={"JOURNAL_STREAM": f"{info.st_dev}:{info.st_ino}"})

    ready = read_until(fake_journald, lambda e: "ready" in e.get("MESSAGE", ""))
    assert ready["SYSLOG_IDENTIFIER"] == "stpd"
    assert ready["PRIORITY"] == "5"  # notice
    assert ready["SOCKET"] == str(daemon.socket_path)
    assert ready["ACTIVATION"] == "bound"
    assert ready["CODE_FILE"] and ready["CODE_LINE"]
    assert "ready" not in log.read_text(), "with the journal attached, nothing goes to stderr"


def test_logs_go_to_stderr_when_it_is_not_the_journal(start_stpd, tmp_path, fake_journald):
    daemon = start_stpd(tmp_path, env={"JOURNAL_STREAM": "1:1"})  # someone else's stream
    assert "ready" in daemon.log()
    fake_journald.setblocking(False)
    with pytest.raises(BlockingIOError):
        fake_journald.recv(1 << 20)
