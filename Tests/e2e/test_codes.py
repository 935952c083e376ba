"""codes.py names the contract's errors with the contract's numbers."""

import re

import codes


def test_every_code_is_the_contracts(contract):
    errors = contract["components"]["errors"]
    for name, value in vars(codes).items():
        if not name.isupper() or name == "INVALID_PARAMS":
            continue
        declared = next((e["code"] for key, e in errors.items()
                         if re.sub(r"(?<!^)(?=[A-Z])", "_", key).upper() == name), None)
        assert declared == value, f"{name} = {value}, the contract says {declared}"
