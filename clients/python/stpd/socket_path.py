"""Where the daemon's socket is, found as stpctl finds it (Sources/StpctlKit/SocketPath.swift)."""

from __future__ import annotations

import os
from collections.abc import Mapping

#: The variable naming the socket, for stpd, stpctl and every client alike.
ENVIRONMENT_VARIABLE = "STPD_SOCKET"
#: The system instance's socket (systemd/stpd.socket).
SYSTEM_PATH = "/run/stpd/stpd.sock"
#: The per-user instance's socket, under $XDG_RUNTIME_DIR (systemd/user/stpd.socket: %t/stpd.sock).
USER_SOCKET_NAME = "stpd.sock"


def default_socket_path(environ: Mapping[str, str] | None = None, uid: int | None = None,
                        exists=os.path.exists) -> str:
    """``$STPD_SOCKET`` if set (and not empty); else, as root, the system socket (where stpd binds as
    root, even when ``sudo -i`` set XDG_RUNTIME_DIR); else the per-user socket
    ``$XDG_RUNTIME_DIR/stpd.sock`` when it exists; else the system socket, ``/run/stpd/stpd.sock``."""
    environ = os.environ if environ is None else environ
    uid = os.getuid() if uid is None else uid
    given = environ.get(ENVIRONMENT_VARIABLE)
    if given:
        return given
    if uid == 0:
        return SYSTEM_PATH
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and exists(os.path.join(runtime, USER_SOCKET_NAME)):
        return os.path.join(runtime, USER_SOCKET_NAME)
    return SYSTEM_PATH
