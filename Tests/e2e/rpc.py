"""The end-to-end suite's client is the repo's Python client package (clients/python, `import stpd`),
as Core Lightning's tests use pyln-client; this module keeps the names the tests use.

`Client(path, timeout, checker=...)` is `stpd.Client` with every result, error and notification it
reads handed to the contract checker (Tests/e2e/contract.py), and without reconnecting: a test that
sees the daemon close a connection wants to see it. `RpcError` is the base of the package's
per-code exception classes (`stpd.errors.NotFound`...), so `pytest.raises(RpcError)` catches them.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable

import stpd
from stpd import ConnectionClosed, RpcError, encode  # noqa: F401 (re-exported)


def check(checker: Any, item: dict, method: str | None) -> None:
    """Holds one message item read to the contract: a result to its method's schema, an error
    code to the declared ones, a notification to its params schema (and an event's object)."""
    if "id" not in item and "method" in item:
        checker.check_notification(item)
    elif "result" in item:
        if method is not None:
            checker.check_result(method, item["result"])
    elif "error" in item:
        checker.check_error(method, item["error"])


def contract_observer(checker: Any) -> stpd.Observer:
    """An observer for any `stpd.Client` (and the subscriptions it opens) that checks what it reads."""
    return functools.partial(check, checker)


class Client(stpd.Client):
    def __init__(self, path: str, timeout: float = 30.0, checker: Any = None, connect: bool = True):
        self.checker = checker
        super().__init__(path, timeout, connect=connect, observer=self._check, reconnect=False)

    def _check(self, item: dict, method: str | None) -> None:
        if self.checker is not None:
            check(self.checker, item, method)


def batch(client: Client, calls: Iterable[tuple[str, Any]]) -> list[dict]:
    """Builds batch members (requests with fresh ids) for ``client.send``."""
    return [client.request_message(method, params) for method, params in calls]
