"""Holds what the daemon sends to the OpenRPC contract (proto/stpd.openrpc.json).

Every result is validated against its method's ``result.schema``, every server notification
against the ``params`` schema of its entry under ``x-notifications``, and every error code is
either one JSON-RPC reserves or one listed under ``components/errors``. ``$ref``s such as
``#/components/schemas/DaemonStatus`` resolve against the whole document.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

CONTRACT_URI = "urn:stpd:contract"

# JSON-RPC 2.0: parse error, invalid request, method not found, invalid params, internal
# error, and the implementation-defined server errors.
RESERVED_CODES = {-32700, -32600, -32601, -32602, -32603}
SERVER_ERROR_RANGE = range(-32099, -32000 + 1)


class ContractViolation(AssertionError):
    pass


class ContractChecker:
    def __init__(self, document: dict):
        self.document = document
        resource = Resource.from_contents(document, default_specification=DRAFT7)
        self.registry = Registry().with_resource(CONTRACT_URI, resource)
        self.methods = {m["name"]: i for i, m in enumerate(document.get("methods", []))}
        self.notifications = {n["name"]: i for i, n in enumerate(document.get("x-notifications", []))}
        self.event_types = {e["name"]: i for i, e in enumerate(document.get("x-event-types", []))}
        self.error_codes = {
            e["code"] for e in document.get("components", {}).get("errors", {}).values() if "code" in e
        }
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self.seen: list[tuple[str, str]] = []  # (kind, name) of everything checked

    @classmethod
    def load(cls, path: Path) -> "ContractChecker":
        return cls(json.loads(Path(path).read_text()))

    def _validator(self, pointer: str) -> jsonschema.protocols.Validator:
        validator = self._validators.get(pointer)
        if validator is None:
            schema = {"$ref": f"{CONTRACT_URI}#{pointer}"}
            validator = jsonschema.Draft7Validator(schema, registry=self.registry)
            self._validators[pointer] = validator
        return validator

    def _validate(self, pointer: str, instance: Any, what: str) -> None:
        errors = sorted(self._validator(pointer).iter_errors(instance), key=lambda e: list(e.absolute_path))
        if errors:
            details = "; ".join(
                f"at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]
            )
            raise ContractViolation(f"{what} does not match the contract ({pointer}): {details}\n"
                                    f"instance: {json.dumps(instance)[:2000]}")

    def check_result(self, method: str, result: Any) -> None:
        if method not in self.methods:
            raise ContractViolation(f"a result arrived for {method!r}, which the contract does not list")
        self._validate(f"/methods/{self.methods[method]}/result/schema", result, f"result of {method}")
        self.seen.append(("result", method))
        if method == "events.wait":
            for event in result.get("events", []):
                self.check_event(event)

    def check_notification(self, message: dict) -> None:
        name = message.get("method")
        if name not in self.notifications:
            raise ContractViolation(f"notification {name!r} is not listed under x-notifications")
        self._validate(f"/x-notifications/{self.notifications[name]}/params", message.get("params"),
                       f"params of notification {name}")
        self.seen.append(("notification", name))
        if name == "event":
            self.check_event(message["params"])

    def check_event(self, event: dict) -> None:
        """An event's type must be listed under x-event-types, and its object match that type's schema."""
        kind = event.get("type")
        if kind not in self.event_types:
            raise ContractViolation(f"event type {kind!r} is not listed under x-event-types")
        self._validate(f"/x-event-types/{self.event_types[kind]}/object", event.get("object"), f"object of event {kind}")
        self.seen.append(("event", kind))

    def check_error(self, method: str | None, error: Any) -> None:
        if not isinstance(error, dict) or not isinstance(error.get("code"), int) \
                or not isinstance(error.get("message"), str):
            raise ContractViolation(f"malformed error object (method {method!r}): {error!r}")
        code = error["code"]
        if code in RESERVED_CODES or code in SERVER_ERROR_RANGE:
            return
        if -32768 <= code <= -32000:
            raise ContractViolation(f"error code {code} is in the range JSON-RPC reserves but is not defined")
        if code not in self.error_codes:
            raise ContractViolation(f"application error code {code} (method {method!r}) is not listed "
                                    f"under components/errors")
