"""The committed contract is a valid OpenRPC document, easy to generate from: it passes the
OpenRPC meta-schema (vendored in proto/, with the JSON Schema meta-schema it refers to, so no
network is needed), every component schema has a title, and every result refers to a component."""

from __future__ import annotations

import json
import re

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from conftest import REPO_ROOT

PROTO = REPO_ROOT / "proto"


def meta_schema_validator() -> jsonschema.protocols.Validator:
    openrpc = json.loads((PROTO / "openrpc-meta-schema.json").read_text())
    json_schema = json.loads((PROTO / "json-schema-meta-schema.json").read_text())
    resource = Resource.from_contents(json_schema, default_specification=DRAFT7)
    # The OpenRPC schema refers to it both with and without the trailing slash.
    registry = Registry().with_resources(
        [("https://meta.json-schema.tools", resource), ("https://meta.json-schema.tools/", resource)])
    return jsonschema.Draft7Validator(openrpc, registry=registry)


def test_the_contract_passes_the_openrpc_meta_schema(contract):
    errors = sorted(meta_schema_validator().iter_errors(contract), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10])


def test_the_meta_schema_refuses_a_broken_document(contract):
    """The validation has teeth: a method without a result, or an unknown member, is refused."""
    validator = meta_schema_validator()
    broken = json.loads(json.dumps(contract))
    del broken["methods"][0]["result"]
    broken["methods"][1]["resultt"] = {}
    broken["components"]["schemas"]["Source"] = {"type": "no-such-type"}
    messages = [e.message for e in validator.iter_errors(broken)]
    assert messages, "a broken document passed"
    assert not meta_schema_validator().is_valid({"openrpc": "1.3.2", "info": {"title": "x"}, "methods": []})


def test_every_component_schema_has_a_title(contract):
    schemas = contract["components"]["schemas"]
    assert {name for name, schema in schemas.items() if not schema.get("title")} == set()
    assert all(schema["title"] == name for name, schema in schemas.items())


def test_every_result_refers_to_a_component(contract):
    schemas = contract["components"]["schemas"]
    for method in contract["methods"]:
        ref = method["result"]["schema"].get("$ref", "")
        assert ref.startswith("#/components/schemas/"), f"{method['name']}: inline result schema"
        assert ref.removeprefix("#/components/schemas/") in schemas, f"{method['name']}: {ref} does not resolve"


def test_info_version_is_the_protocols_semantic_version(contract):
    """The protocol's version (StpdAPI.protocolVersion), not the daemon's (daemon.ping's)."""
    assert re.fullmatch(r"[1-9][0-9]*\.[0-9]+\.[0-9]+", contract["info"]["version"])
    assert "protocol" in contract["info"]["description"]
