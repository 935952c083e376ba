"""scripts/check-imports finds a target's import that Package.swift does not declare for it, and a
layer that declares one it must not (the domain the contract)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "check-imports"

# C-tool reaches A through B (which re-exports it), so SwiftPM builds it without declaring A.
MANIFEST = """// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "fixture",
    targets: [
        .target(name: "A"),
        .target(name: "B", dependencies: ["A"]),
        .executableTarget(name: "C-tool", dependencies: [{c_tool}]),
        .testTarget(name: "BTests", dependencies: ["B"]),
    ]
)
"""

SOURCES = {
    "Sources/A/A.swift": "public struct Thing {}\n",
    "Sources/B/B.swift": "import Foundation\n@_exported import A\npublic let b = Thing()\n",
    "Sources/C-tool/main.swift": "import B\nimport struct A.Thing\nprint(b)\n",
    # Toolchain modules need no declaration; a commented-out import is no import.
    "Tests/BTests/BTests.swift": "@testable import B\nimport Testing\n#if canImport(Glibc)\n    import Glibc\n#endif\n"
    "// import Hidden\n",
}


def fixture(directory: Path, c_tool_dependencies: str) -> Path:
    (directory / "Package.swift").write_text(MANIFEST.replace("{c_tool}", c_tool_dependencies))
    for name, text in SOURCES.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    return directory


def check(directory: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), str(directory)], capture_output=True, text=True, timeout=120)


def test_an_import_reachable_only_indirectly_is_reported(tmp_path):
    done = check(fixture(tmp_path, '"B"'))
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == [
        "Sources/C-tool/main.swift:2: C-tool imports A, which Package.swift does not declare for it",
        "check-imports: 1 problem(s): undeclared imports or crossed layers",
    ]


def test_declared_imports_pass(tmp_path):
    done = check(fixture(tmp_path, '"B", "A"'))
    assert done.returncode == 0, done
    assert done.stdout == "check-imports: 4 targets import only what they declare\n"


LAYERED = """// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "layers",
    targets: [
        .target(name: "StpdProtocol"),
        .target(name: "StpdCore", dependencies: ["StpdProtocol"]),
    ]
)
"""


def test_the_domain_declaring_the_contract_is_reported(tmp_path):
    (tmp_path / "Package.swift").write_text(LAYERED)
    for target in ("StpdProtocol", "StpdCore"):
        (tmp_path / "Sources" / target).mkdir(parents=True)
        (tmp_path / "Sources" / target / f"{target}.swift").write_text("public struct Thing {}\n")
    done = check(tmp_path)
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == [
        "Package.swift: StpdCore depends on StpdProtocol, across its layer (docs/architecture.md)",
        "check-imports: 1 problem(s): undeclared imports or crossed layers",
    ]
