"""Issue 32.7: a schema-driven fuzz of every method of the contract, in CI and bounded.

For each method, params are made from its params schema (every keyword the contract uses: types,
properties, required, enum, const, pattern, minimum/maximum, items, minItems/maxItems, oneOf,
`$ref`), some as the schema wants them and the rest broken one way each (a required member
dropped, an unknown one added, a wrong type, a pattern with a newline after it, a huge number, a
long string, deep nesting, too many items). Every method runs on a connection of its own, all at
once, each call pipelined. Every reply must be a well-formed reply to its id that the contract
allows (a result of the declared schema, or a declared error) and never -32603; the daemon must
stay up and answer a ping after each round. Unanswered calls when the round's time is up (a call
may legitimately wait, e.g. for an app's answer) are counted, then cancelled by closing.

STPD_SCHEMA_FUZZ_CALLS (default 64) calls per method, STPD_SCHEMA_FUZZ_SEED a seed to replay (the
seed is printed). Run without a Stripe key: the Stripe-bound methods are fuzzed up to their check
of the key; the secret-key cross-uid suite is test_client_secret.py.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import threading
import time

import pytest


CALLS = int(os.environ.get("STPD_SCHEMA_FUZZ_CALLS", "64"))
ROUND_SECONDS = 30.0
INTERNAL_ERROR = -32603


class Maker:
    """Values for a JSON schema of the contract, valid or broken."""

    def __init__(self, rng: random.Random, document: dict):
        self.rng = rng
        self.schemas = document["components"]["schemas"]

    def resolve(self, schema: dict) -> dict:
        while "$ref" in schema:
            schema = self.schemas[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    def valid(self, schema: dict, depth: int = 0):
        schema = self.resolve(schema)
        rng = self.rng
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return rng.choice(schema["enum"])
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return self.valid(rng.choice(schema[key]), depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = rng.choice(kind)
        if kind == "object" or "properties" in schema:
            properties = schema.get("properties", {})
            required = set(schema.get("required", []))
            out = {}
            for name, member in properties.items():
                if name in required or (depth < 4 and rng.random() < 0.3):
                    out[name] = self.valid(member, depth + 1)
            return out
        if kind == "array":
            low = schema.get("minItems", 0)
            high = min(schema.get("maxItems", low + 3), low + 3)
            return [self.valid(schema.get("items", {}), depth + 1) for _ in range(rng.randint(low, high))]
        if kind == "string":
            return self.string(schema)
        if kind == "integer":
            low, high = schema.get("minimum", 0), schema.get("maximum", 10_000)
            return rng.randint(int(low), int(high))
        if kind == "number":
            low, high = schema.get("minimum", 0), min(schema.get("maximum", 5), 5)
            return round(rng.uniform(low, high), 3)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        return rng.choice([1, "x", None, {}, []])

    def string(self, schema: dict) -> str:
        pattern = schema.get("pattern")
        if pattern:
            return sample(pattern, self.rng)
        if schema.get("format") == "uri":
            return self.rng.choice(["myapp://done", "http://127.0.0.1:9/return", "x"])
        return self.rng.choice(["", "x", "pi_1", "src_1", "ünïcödé", "a" * 300])

    def broken(self, schema: dict):
        """A value the schema refuses in one way (or tries to)."""
        schema = self.resolve(schema)
        value = self.valid(schema)
        rng = self.rng
        if isinstance(value, dict):
            choice = rng.randrange(5)
            required = schema.get("required", [])
            properties = schema.get("properties", {})
            if choice == 0 and required:
                value.pop(rng.choice(required), None)
            elif choice == 1:
                value["unknownMember"] = 1
            elif choice == 2 and properties:
                name = rng.choice(list(properties))
                value[name] = self.broken(properties[name])
            elif choice == 3 and properties:
                value[rng.choice(list(properties))] = rng.choice([None, [], {}, 1e308, -(2**70), "\u0000"])
            else:
                nested: object = 1
                for _ in range(rng.choice([20, 100])):
                    nested = {"a": [nested]}
                value[rng.choice(list(properties) or ["deep"])] = nested
            return value
        if isinstance(value, list):
            return value + [self.valid(schema.get("items", {}))] * rng.choice([1, 1200])
        if isinstance(value, str):
            return rng.choice([value + "\n", value + "\r\n", value + "\u2028", "\n" + value, value * 200, 5])
        if isinstance(value, bool):
            return "true"
        if isinstance(value, (int, float)):
            return rng.choice([-1, 2**63, -(2**63) - 1, 1.5, "1", 10**30])
        return {"not": "null"}


def sample(pattern: str, rng: random.Random) -> str:
    """A string the contract's pattern matches (its subset: anchors, classes, groups, quantifiers)."""
    out: list[str] = []
    body, i = pattern.strip("^$"), 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            choices, i = [body[i + 1]], i + 2
        elif c == "[":
            end = body.index("]", i)
            choices, i = list(expand(body[i + 1:end])), end + 1
        elif c == "(":
            end = closing(body, i)
            choices, i = [sample(rng.choice(split_top(body[i + 1:end])), rng)], end + 1
        else:
            choices, i = [c], i + 1
        low, high, i = quantifier(body, i)
        out.extend(rng.choice(choices) for _ in range(rng.randint(low, high)))
    return "".join(out)


def closing(body: str, start: int) -> int:
    depth = 0
    for index in range(start, len(body)):
        depth += body[index] == "("
        depth -= body[index] == ")"
        if depth == 0:
            return index
    raise ValueError(f"unbalanced group in {body!r}")


def expand(chars: str) -> str:
    out, i = [], 0
    while i < len(chars):
        if i + 2 < len(chars) and chars[i + 1] == "-":
            out.extend(chr(c) for c in range(ord(chars[i]), ord(chars[i + 2]) + 1))
            i += 3
        else:
            out.append(chars[i])
            i += 1
    return "".join(out)


def split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if c == "|" and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    return parts + [text[start:]]


def quantifier(body: str, i: int) -> tuple[int, int, int]:
    if i < len(body) and body[i] in "+*?":
        return {"+": (1, 12), "*": (0, 6), "?": (0, 1)}[body[i]] + (i + 1,)
    match = re.match(r"\{(\d+)(?:,(\d*))?\}", body[i:])
    if match:
        low = int(match.group(1))
        high = low if match.group(2) is None else int(match.group(2) or low + 5)
        return low, high, i + match.end()
    return 1, 1, i


def params_schema(method: dict) -> dict:
    members = {p["name"]: p["schema"] for p in method["params"]}
    required = [p["name"] for p in method["params"] if p.get("required")]
    return {"type": "object", "properties": members, "required": required, "additionalProperties": False}


class Lines:
    """Lines read from a socket with a timeout (a file object from `makefile` is unusable after one)."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buffer = sock, b""

    def next(self) -> bytes | None:
        """The next line; b"" at EOF; None when nothing came within the socket's timeout."""
        while b"\n" not in self.buffer:
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                return None
            if not chunk:
                return b""
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line


def fuzz_method(path, method: dict, maker: Maker, checker, deadline: float, report: dict) -> None:
    name = method["name"]
    schema = params_schema(method)
    frames = {}
    for number in range(1, CALLS + 1):
        params = maker.valid(schema) if number % 3 == 0 else maker.broken(schema)
        if name == "events.wait":
            params["timeout"] = 0  # a wait is a legitimate long call, not a hang
        frames[number] = json.dumps({"jsonrpc": "2.0", "id": number, "method": name, "params": params}).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    try:
        sock.sendall(b"\n".join(frames.values()) + b"\n")
        sock.settimeout(1.0)
        lines = Lines(sock)
        answered: set[int] = set()
        # A frame the parser refuses (nesting past 128) is answered with `id: null`.
        unattributed = 0
        while len(answered) + unattributed < len(frames) and time.monotonic() < deadline:
            line = lines.next()
            if line is None:
                continue
            if not line:
                break
            message = json.loads(line)
            if "id" not in message:  # a notification (a subscription's event)
                checker.check_notification(message)
                continue
            number = message["id"]
            if number is None:
                assert message["error"]["code"] in (-32700, -32600), (name, message)
                unattributed += 1
                continue
            assert number in frames and number not in answered, (name, message)
            answered.add(number)
            if "error" in message:
                error = message["error"]
                assert error["code"] != INTERNAL_ERROR, (name, frames[number][:500], error)
                checker.check_error(name, error)
            else:
                checker.check_result(name, message["result"])
        report[name] = (len(answered) + unattributed, len(frames))
    finally:
        sock.close()


@pytest.mark.parametrize("round_number", range(2))
def test_every_method_fuzzed_from_its_schema(start_stpd, tmp_path, contract, checker, round_number):
    seed = int(os.environ.get("STPD_SCHEMA_FUZZ_SEED", random.randrange(1 << 30))) + round_number
    print(f"\n[fuzz] schema fuzz: {len(contract['methods'])} methods x {CALLS} calls, seed {seed}")
    # No Stripe key: a Stripe-bound call ends with StripeNotConfigured before any request, so no
    # fuzzed field reaches a stand-in (whose requests the session checks against Stripe's types).
    daemon = start_stpd(tmp_path / "stpd", "--debug-methods")
    deadline = time.monotonic() + ROUND_SECONDS
    report: dict[str, tuple[int, int]] = {}
    failures: list[BaseException] = []

    def run(method: dict, index: int) -> None:
        try:
            fuzz_method(daemon.socket_path, method, Maker(random.Random(seed * 1000 + index), contract), checker,
                        deadline, report)
        except BaseException as failure:  # noqa: BLE001 (reported below, with the method)
            failures.append(failure)

    threads = [threading.Thread(target=run, args=(method, index), daemon=True)
               for index, method in enumerate(contract["methods"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(ROUND_SECONDS + 30)
    assert not failures, failures[:3]
    assert daemon.proc.poll() is None, daemon.log()[-3000:]
    with daemon.client() as client:
        assert client.call("daemon.ping")["pong"] is True
    unanswered = {name: total - got for name, (got, total) in report.items() if got < total}
    print(f"[fuzz] {sum(got for got, _ in report.values())} replies; unanswered when the round ended: "
          f"{unanswered or 'none'}")
    assert len(report) == len(contract["methods"])
    log = daemon.log()
    assert "Fatal error" not in log and " failed: " not in log, log[-3000:]
