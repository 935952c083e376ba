# The two commands of the README's quick start:
#   make run    build stpd and run it on its embedded defaults (SQLite state, a local socket)
#   make test   build everything and run every test (Swift, then the Python end-to-end suite)
.PHONY: run test build swift-test py-test contract

run:
	scripts/bootstrap
	swift build --product stpd
	$$(swift build --show-bin-path)/stpd

build:
	scripts/bootstrap
	swift build --build-tests

test: build
	scripts/bootstrap test
	swift test --skip-build
	STPD_BIN_DIR=$$(swift build --show-bin-path) .venv/bin/python -m pytest -q Tests/e2e

# Regenerates proto/stpd.openrpc.json from the method declarations (a test fails when it is stale).
contract:
	swift build --product stpd
	$$(swift build --show-bin-path)/stpd --print-contract > proto/stpd.openrpc.json
