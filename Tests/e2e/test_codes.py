"""The client package's exception classes, and the names codes.py gives them, carry the contract's
numbers (a renumbered error fails here, once, not in scattered literals)."""

import re

from stpd import errors

import codes

JSONRPC = {"ParseError": -32700, "InvalidRequest": -32600, "MethodNotFound": -32601, "InvalidParams": -32602,
           "InternalError": -32603}


def test_one_exception_class_per_code_of_the_contract(contract):
    declared = {name: e["code"] for name, e in contract["components"]["errors"].items()}
    generated = {cls.__name__: code for code, cls in errors.ERRORS.items()}
    assert generated == {**JSONRPC, **declared}
    for name, code in generated.items():
        cls = getattr(errors, name)
        assert issubclass(cls, errors.RpcError) and cls.code == code
        assert isinstance(errors.error_from({"code": code, "message": "m"}), cls)


def test_every_code_is_the_contracts(contract):
    errors_declared = contract["components"]["errors"]
    for name, value in vars(codes).items():
        if not name.isupper() or name == "INVALID_PARAMS":
            continue
        declared = next((e["code"] for key, e in errors_declared.items()
                         if re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", key).upper() == name), None)
        assert declared == value, f"{name} = {value}, the contract says {declared}"
    assert codes.INVALID_PARAMS == -32602
