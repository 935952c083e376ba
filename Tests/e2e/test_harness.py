"""The contract checker itself must not pass what it should refuse (no daemon needed)."""

from __future__ import annotations

import pytest

from contract import ContractChecker, ContractViolation


def test_refs_resolve_against_the_whole_document(contract):
    checker = ContractChecker(contract)
    schema = next(m for m in contract["methods"] if m["name"] == "daemon.status")["result"]["schema"]
    if "$ref" not in schema:
        pytest.skip("daemon.status no longer uses a $ref")
    with pytest.raises(ContractViolation, match="daemon.status"):
        checker.check_result("daemon.status", {"pid": "not an integer"})


def test_unknown_method_and_notification_are_refused(contract):
    checker = ContractChecker(contract)
    with pytest.raises(ContractViolation):
        checker.check_result("no.such.method", {})
    with pytest.raises(ContractViolation):
        checker.check_notification({"jsonrpc": "2.0", "method": "no.such.notification", "params": {}})
    with pytest.raises(ContractViolation):
        checker.check_notification({"jsonrpc": "2.0", "method": "event", "params": {"seq": 0}})


def test_error_codes_must_be_reserved_or_declared(contract):
    checker = ContractChecker(contract)
    checker.check_error("daemon.ping", {"code": -32602, "message": "Invalid params"})
    declared = next(iter(contract["components"]["errors"].values()))["code"]
    checker.check_error("daemon.ping", {"code": declared, "message": "declared"})
    with pytest.raises(ContractViolation):
        checker.check_error("daemon.ping", {"code": 424242, "message": "undeclared"})
    with pytest.raises(ContractViolation):
        checker.check_error("daemon.ping", {"code": -32500, "message": "reserved but undefined"})
    with pytest.raises(ContractViolation):
        checker.check_error("daemon.ping", {"code": "1", "message": "not an integer"})
