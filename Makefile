# The two commands of the README's quick start:
#   make run    build stpd and run it on its embedded defaults (SQLite state, a local socket)
#   make test   build everything and run every test (Swift, then the Python end-to-end suite)
# and the benchmarks (docs/performance.md):
#   make bench        release build, then the whole suite: one table, JSON in bench/results/latest.json
#   make bench-smoke  every case for a few seconds at tiny scales on the release build make deb ships (CI)
#   make bench-micro  the hot paths' micro-benchmarks (package-benchmark, bench/micro/)
# the first minute and installing (README, Quick start; docs/installing.md):
#   make demo         stpd against the bundled stripe-test-server: a 3-D Secure page and the loopback return, a server-confirmed 3-D Secure page, a payment context
#   make deb          dist/stpd_<version>_amd64.deb (debhelper); scripts/check-deb checks it (CI)
#   make install      PREFIX=/usr/local DESTDIR= : the same files without a package
.PHONY: run test build e2e contract clients settings-table readme-settings format lint check-imports werror bench bench-build bench-smoke bench-micro demo deb deb-build release-build install

run:
	scripts/bootstrap
	swift build --product stpd
	$$(swift build --show-bin-path)/stpd

build:
	scripts/bootstrap
	swift build --build-tests

# SKIP_BUILD=1: make test, bench-smoke and deb-build take the builds as they are instead of checking
# them first. CI (.ci/run) has just built both and sets it for the steps after: a no-op build there
# still loads the package and checks every file (measured: 12.6 s of CPU for the first no-op
# `swift build --build-tests` after a build, 12.3 for make release-build's, 4.2 for the manual pages).
BUILT_OR = $(if $(SKIP_BUILD),,$(1))

# Both beside a throwaway PostgreSQL cluster (scripts/test-postgres), so the fleet's tests run too.
# The end-to-end files run in parallel (pytest-xdist), then the few marked serial alone: scripts/e2e.
test: $(call BUILT_OR,build)
	scripts/bootstrap test
	scripts/test-postgres swift test --skip-build
	$(MAKE) --no-print-directory e2e

# Only the Python end-to-end suite, on the debug build as it is; E2E_ARGS picks files or tests
# (e.g. E2E_ARGS=Tests/e2e/test_sources.py), E2E_JOBS the number of workers.
e2e:
	STPD_BIN_DIR=$$(swift build --show-bin-path) scripts/test-postgres scripts/e2e $(E2E_ARGS)

# Regenerates proto/stpd.openrpc.json from the method declarations (a test fails when it is stale),
# then the clients' files generated from it.
contract:
	swift build --product stpd
	$$(swift build --show-bin-path)/stpd --print-contract > proto/stpd.openrpc.json
	scripts/generate-clients

# Regenerates the clients' files taken from proto/stpd.openrpc.json (Python's exception classes,
# TypedDicts and typed wrappers, Node's and Go's error codes); a test fails when they are stale.
clients:
	scripts/generate-clients

# Rewrites the settings table in docs/configuration.md from ConfigurationKeys.all (a test fails
# when it is stale). readme-settings is its former name, from when the table was in the README.
settings-table readme-settings:
	swift build --product stpd
	$$(swift build --show-bin-path)/stpd --print-settings-table | scripts/settings-table

# swift format with the checked-in .swift-format (line length 120), and the import check; CI
# fails on a finding of either.
SWIFT_FORMAT_PATHS = Package.swift Sources Tests bench/micro/Package.swift bench/micro/Benchmarks

format:
	swift format format --in-place --recursive --parallel $(SWIFT_FORMAT_PATHS)

lint:
	swift format lint --strict --recursive --parallel $(SWIFT_FORMAT_PATHS)
	scripts/check-imports

# Fails when a target imports a module Package.swift does not declare for it.
check-imports:
	scripts/check-imports

# The project's own targets with warnings as errors, as every build is unless STPD_WERROR=0
# (Package.swift reads it). Switching it rebuilds the own targets.
werror:
	scripts/bootstrap
	STPD_WERROR=1 swift build --build-tests

# The benchmark suite's driver is standard-library Python: the venv's if there is one.
PYTHON ?= $(shell test -x .venv/bin/python && echo .venv/bin/python || echo python3)
RELEASE = swift build -c release --scratch-path .build-release

# BENCH_ARGS passes cases and options to bench/run.py (e.g. BENCH_ARGS="ping fanout",
# BENCH_ARGS="--compare old.json"); BENCH_SCALES=100,10000 skips the 100,000-session scale.
# Beside a throwaway PostgreSQL cluster when PostgreSQL is installed (scripts/bootstrap test), for
# the fleet case, which is skipped without one.
BESIDE_POSTGRES = $(shell test -x /usr/lib/postgresql/15/bin/initdb && echo scripts/test-postgres)

# make bench's cluster commits durably (fsync on, as PostgreSQL ships): the fleet case measures commits.
bench: bench-build
	STPD_TEST_PG_DURABLE=1 $(BESIDE_POSTGRES) $(PYTHON) bench/run.py --bin-dir $$($(RELEASE) --show-bin-path) $(BENCH_ARGS)

bench-build:
	scripts/bootstrap
	$(RELEASE) --product stpd
	$(RELEASE) --product stripe-test-server

# On the release stpd that make deb packages (release-build), beside the debug Stripe stand-in that
# make test built (compiling Hummingbird again in release would cost CI minutes and tell nothing:
# the smoke run asserts only that every case runs and gives figures).
bench-smoke: $(call BUILT_OR,release-build)
	$(call BUILT_OR,swift build --product stripe-test-server)
	$(BESIDE_POSTGRES) $(PYTHON) bench/run.py --smoke --bin-dir $$($(DEB_BUILD) --show-bin-path) \
		--stand-in $$(swift build --show-bin-path)/stripe-test-server --out bench/results/smoke.json

bench-micro:
	scripts/bootstrap
	cd bench/micro && swift package --disable-sandbox benchmark $(BENCH_MICRO_ARGS)

# Builds what it needs in debug (make test's build), then walks through scripts/demo.
demo:
	scripts/bootstrap
	swift build --product stpd
	swift build --product stpctl
	swift build --product stripe-test-server
	STPD_BIN_DIR=$$(swift build --show-bin-path) scripts/demo

# stpd and stpctl for installing: release, with the Swift runtime linked in so that they need only
# Debian's libraries, in their own scratch path; then their manual pages (ArgumentParser's
# generate-manual) in .build-deb/man. scripts/install lays them out with the rest.
# Without debug information (-debug-info-format none: swiftc's -gnone, and clang's -g0 for the C
# and C++ of the dependencies, BoringSSL twice, which -Xswiftc -gnone left at -g): the package and
# make install strip it anyway, and leaving it out saves ~8% of the compilers' time (Swift and C
# alike) and a third of the link's input (stpd 200 MB -> 141 MB before stripping). Profiles use
# make bench's build (RELEASE), which keeps it.
DEB_BUILD = swift build -c release --static-swift-stdlib --scratch-path .build-deb -debug-info-format none
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc

# The binaries alone: what bench-smoke runs (beside check-deb's make deb in CI, which regenerates
# the manual pages: two writers of them at once could package a page cut short).
release-build:
	scripts/bootstrap
	$(DEB_BUILD) --product stpd
	$(DEB_BUILD) --product stpctl

# The one release build CI makes (.ci/run, beside the debug build and the tests): what make deb
# packages, with its manual pages, and what bench-smoke runs.
deb-build: $(call BUILT_OR,release-build)
	$(call BUILT_OR,scripts/generate-manuals)

deb:
	scripts/bootstrap deb
	scripts/build-deb

install: deb-build
	scripts/install --strip --prefix "$(PREFIX)" --sysconfdir "$(SYSCONFDIR)" --destdir "$(DESTDIR)"
