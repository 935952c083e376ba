"""The clients' generated files (scripts/generate-clients: Python errors, schemas and methods, Node's
and Go's errors) are what the committed contract gives, like the contract itself is what the
method declarations give (Tests/ContractTests); and a contract that grows regenerates cleanly."""

from __future__ import annotations

import copy
import importlib.machinery
import importlib.util
import subprocess
import sys
import types

from conftest import REPO_ROOT

GENERATOR = REPO_ROOT / "scripts" / "generate-clients"


def load_generator() -> types.ModuleType:
    loader = importlib.machinery.SourceFileLoader("generate_clients", str(GENERATOR))
    spec = importlib.util.spec_from_loader("generate_clients", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_generated_files_are_up_to_date():
    done = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr + "\n(run `make clients` and commit the result)"


def test_generation_is_deterministic(contract):
    generator = load_generator()
    assert generator.render(copy.deepcopy(contract)) == generator.render(copy.deepcopy(contract))


def test_a_contract_with_a_new_method_and_error_regenerates_cleanly(contract):
    """What another branch adding a method and an error does to the contract: the output still
    compiles, names the new things, and changes nothing else of the old."""
    generator = load_generator()
    before = generator.render(copy.deepcopy(contract))
    grown = copy.deepcopy(contract)
    grown["components"]["errors"]["QuotaExceeded"] = {"code": 1099, "message": "Too much",
                                                      "data": {"description": "`data.limit` says how much."}}
    grown["methods"].append({
        "name": "daemon.counters", "paramStructure": "by-name", "summary": "Counters",
        "params": [{"name": "format", "required": False,
                    "schema": {"type": "string", "enum": ["openmetrics", "json"]}},
                   {"name": "class", "required": True, "schema": {"type": ["string", "null"]}},
                   {"name": "labels", "required": False,
                    "schema": {"type": "object", "properties": {"a-b": {"type": "integer"}}}}],
        "result": {"name": "result", "schema": {"title": "Metrics", "type": "object",
                                                "properties": {"text": {"type": "string"}},
                                                "required": ["text"]}},
        "errors": [{"$ref": "#/components/errors/QuotaExceeded"}]})
    after = generator.render(grown)
    assert before.keys() == after.keys()
    by_name = {path.name: text for path, text in after.items()}
    namespace: dict = {}
    exec(compile(by_name["errors.py"].replace("from .exceptions import RpcError",
                                              "from stpd.exceptions import RpcError"), "errors.py", "exec"),
         namespace)
    assert namespace["ERRORS"][1099].__name__ == "QuotaExceeded"
    schemas = by_name["schemas.py"]
    compile(schemas, "schemas.py", "exec")
    assert "class Metrics(TypedDict):" in schemas  # a title names the type
    assert """"a-b": NotRequired['int']""" in schemas  # a key that is no identifier
    methods = by_name["methods.py"]
    compile(methods, "methods.py", "exec")
    signature = methods[methods.index("    def counters("):methods.index("-> Metrics:")]
    assert "class_: str | None," in signature  # a param named like a Python keyword, required first
    assert 'format: Literal["openmetrics", "json"] = OMITTED,' in signature
    assert "labels: DaemonCountersParamsLabels = OMITTED," in signature
    assert '"class": class_,' in methods
    assert "QuotaExceeded" in by_name["errors.mjs"] and "CodeQuotaExceeded = 1099" in by_name["errors.go"]
    # Everything that was there is still there, unchanged.
    for path, text in before.items():
        old_lines = [line for line in text.splitlines() if line.strip()]
        new_lines = set(after[path].splitlines())
        missing = [line for line in old_lines if line not in new_lines]
        assert not missing, f"{path.name} lost {missing[:5]}"
