#!/usr/bin/env python3
"""Minimal stpd client: standard library only.

stpd speaks JSON-RPC 2.0 over a Unix socket, one compact JSON text per line. This connects,
calls daemon.ping and daemon.status, and prints each result as `method: JSON`.

    python3 stpd_client.py [SOCKET]

SOCKET defaults to $STPD_SOCKET, then $XDG_RUNTIME_DIR/stpd.sock (per-user instance), then
/run/stpd/stpd.sock (system instance).
"""

import json
import os
import socket
import sys


def default_socket():
    if os.environ.get("STPD_SOCKET"):
        return os.environ["STPD_SOCKET"]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.exists(os.path.join(runtime, "stpd.sock")):
        return os.path.join(runtime, "stpd.sock")
    return "/run/stpd/stpd.sock"


class StpdClient:
    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.reader = self.sock.makefile("rb")
        self.next_id = 1

    def call(self, method, params=None):
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            request["params"] = params
        self.next_id += 1
        self.sock.sendall(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        while True:
            line = self.reader.readline()
            if not line:
                raise ConnectionError("stpd closed the connection")
            message = json.loads(line)
            if message.get("id") != request["id"]:
                continue  # a server notification (no id); this example does not subscribe
            if "error" in message:
                error = message["error"]
                raise RuntimeError(f"{method} failed: {error['code']} {error['message']}")
            return message["result"]

    def close(self):
        self.reader.close()
        self.sock.close()


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else default_socket()
    try:
        client = StpdClient(path)
    except OSError as error:
        print(f"cannot connect to stpd at {path}: {error}", file=sys.stderr)
        return 2
    try:
        for method in ("daemon.ping", "daemon.status"):
            print(f"{method}: {json.dumps(client.call(method), sort_keys=True)}")
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
