#!/usr/bin/env python3
"""Minimal stpd client, on the repo's Python client package (`pip install ./clients/python`).

Connects, calls daemon.ping and daemon.status, and prints each result as `method: JSON`.

    python3 stpd_client.py [SOCKET]

SOCKET defaults as stpctl's does: $STPD_SOCKET, then $XDG_RUNTIME_DIR/stpd.sock (per-user
instance), then /run/stpd/stpd.sock (system instance).
"""

import json
import sys

import stpd


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else stpd.default_socket_path()
    try:
        client = stpd.Client(path, timeout=10)
    except OSError as error:
        print(f"cannot connect to stpd at {path}: {error}", file=sys.stderr)
        return 2
    with client:
        print(f"daemon.ping: {json.dumps(client.daemon.ping(), sort_keys=True)}")
        print(f"daemon.status: {json.dumps(client.call('daemon.status'), sort_keys=True)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
