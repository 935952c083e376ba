"""A Python client for stpd: JSON-RPC 2.0 over its Unix socket, standard library only.

    import stpd

    with stpd.Client() as client:               # $STPD_SOCKET, $XDG_RUNTIME_DIR/stpd.sock, /run/stpd/stpd.sock
        client.call("daemon.ping")              # {'pong': True, 'version': '0.1.0'}
        client.daemon.status()                  # the same, typed (stpd.schemas.DaemonStatus)
        try:
            client.call("source.get", id="src_unknown")
        except stpd.errors.NotFound as error:   # one class per error code of the contract
            print(error.code, error.message, error.data)
        for event in client.subscribe(since=0, filter={"types": ["source.*"]}):
            print(event["seq"], event["type"], event["objectId"])

`errors`, `schemas` and `methods` are generated from the contract (proto/stpd.openrpc.json).
"""

from . import errors, schemas
from .client import Client, Observer, encode
from .errors import error_from
from .exceptions import ConnectionClosed, ProtocolError, RpcError
from .socket_path import default_socket_path
from .subscription import Subscription

__version__ = "0.1.0"

__all__ = [
    "Client",
    "ConnectionClosed",
    "Observer",
    "ProtocolError",
    "RpcError",
    "Subscription",
    "default_socket_path",
    "encode",
    "error_from",
    "errors",
    "schemas",
]
