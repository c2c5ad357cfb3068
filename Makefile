# SwiftKVO — the front door. `make help` lists the targets.
#
# Every target that needs Concurrency Kit depends on `deps`, which installs
# Debian's libck-dev when pkg-config cannot find `ck`: on a fresh machine
# `make test` works with nothing installed by hand.

SHELL      := /bin/bash
SWIFT      ?= swift
CC         ?= cc
PREFIX     ?= /usr/local
BUILD      := build
VERSION    := $(shell sed -n 's/^\#define CKVO_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$$/\2/p' Sources/CKVOCore/include/ckvo_version.h | paste -sd.)
SOVERSION  := $(firstword $(subst ., ,$(VERSION)))

ENGINE_SRC := $(wildcard Sources/CKVOCore/*.c)
ENGINE_HDR := $(wildcard Sources/CKVOCore/*.h Sources/CKVOCore/include/*.h)
ENGINE_CFLAGS := -std=c11 -O2 -g -fPIC -fvisibility=hidden -D_GNU_SOURCE \
	-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Werror \
	-ISources/CKVOCore/include

# The package trait that builds the @KeyValueObservable macro (and swift-syntax for it). Every
# command using the default .build folder passes it, so they share one build (a trait is a
# compilation condition of every target: toggling it would rebuild them all); the sanitizer,
# release and perf scratch folders never enable it, so none of them builds swift-syntax.
MACRO_TRAITS := --traits Macros

# Sanitizer runs: their own scratch folders so they never rebuild the plain one.
TSAN_OPTIONS_RUN := halt_on_error=1 second_deadlock_stack=1
ASAN_OPTIONS_RUN := detect_leaks=1 halt_on_error=1
LSAN_OPTIONS_RUN := suppressions=$(CURDIR)/.lsan-suppressions print_suppressions=0
UBSAN_OPTIONS_RUN := halt_on_error=1 print_stacktrace=1

.PHONY: help deps build lint unit unit-fallback unit-fenced unit-near-end tsan asan unit-release test install example quickstart bench fuzz soak soak-tsan clean

help:
	@echo "make deps     install Concurrency Kit (libck-dev) if missing"
	@echo "make build    build the package (debug)"
	@echo "make lint     compile the C engine with -Wall -Wextra -Werror (gcc)"
	@echo "make test     the whole suite: plain, fenced-reader C suite, ThreadSanitizer, AddressSanitizer + UBSan, release checks"
	@echo "make unit | unit-fallback | unit-fenced | unit-near-end | tsan | asan | unit-release   one of those runs (unit-fallback: the Swift"
	@echo "              suites with the layout self-check forced to fail; unit-fenced: the C"
	@echo "              suite with readers forced onto ck_epoch_begin; unit-near-end: the C suite with counters started near their ends; asan: Address + Leak +"
	@echo "              UndefinedBehavior on C; unit-release: allocations, 10M memory bounds and key path resolution, -c release)"
	@echo "make install  PREFIX=...: libckvo.a, libckvo.so, headers, ckvo.pc"
	@echo "make example  build examples/ with plain cc against a temporary install, run it"
	@echo "make quickstart  run the README's Swift quick start, by hand and with @KeyValueObservable (examples/)"
	@echo "make bench    SwiftKVO against its peers: swift run -c release Benchmarks $$BENCH_ARGS, then relay-bench"
	@echo "make fuzz     FUZZ_SECONDS=60: libFuzzer on the C API against a model, corpus in Tests/Fuzz"
	@echo "make soak     SOAK_SECONDS=60: every workload at once, exact accounting, memory back to baseline"
	@echo "make soak-tsan  SOAK_TSAN_SECONDS=20: the soak in the ThreadSanitizer build of make tsan"
	@echo "make engine-graph  which engine files call which, and the cycles among them (Tools/engine_graph.py)"
	@echo "make memory-breakdown  heap bytes per live C API observation, structure by structure"
	@echo "make perf-check  instructions and allocations per hot operation (callgrind) against the baseline"
	@echo "make perf-baseline  measure again and rewrite Tests/PerfCheck/baseline.tsv (commit it, saying why)"
	@echo "make relay-test   SwiftKVORelay and SwiftKVOMetrics (trait Relay) against a private PostgreSQL it starts and stops"
	@echo "make relay-tsan   the relay's concurrent-writer and isolation tests under ThreadSanitizer"
	@echo "make relay-bench  relay against raw PostgresNIO LISTEN/NOTIFY (RELAY_BENCH_ARGS=--quick)"
	@echo "make relay-fuzz   RELAY_FUZZ_SECONDS=60: hostile input through the relay's receive path (RELAY_FUZZ_SEED=)"
	@echo "make relay-example  the README's two-terminal example, scripted (two processes, one server)"
	@echo "make consumer-check  an outside package naming this one by file:// URL, with and without the trait Relay"
	@echo "make service-example  examples/InventoryService (Hummingbird 2): two instances, concurrent writes, SSE, SIGTERM (SERVICE_EXAMPLE_N=500)"
	@echo "make docs     the DocC catalogs (SwiftKVO, SwiftKVORelay, SwiftKVOMetrics) as static sites, warnings as errors"
	@echo "make pg-start | pg-stop   the private PostgreSQL cluster on 127.0.0.1:$(PG_PORT)"

deps:
	@echo "== deps: Concurrency Kit"
	@if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists ck; then \
		echo "installing libck-dev and pkg-config"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libck-dev pkg-config; \
	fi
	@echo "ck $$(pkg-config --modversion ck)"

build: deps
	@echo "== build"
	$(SWIFT) build $(MACRO_TRAITS)

# Compiled, not only parsed: warnings the optimizer finds (-Wclobbered around the
# release runner's cleanup handlers, for one) are errors here as in make install.
lint: deps
	@echo "== lint: C engine, warnings are errors"
	@for f in $(ENGINE_SRC); do $(CC) $(ENGINE_CFLAGS) -c -o /dev/null $$f || exit 1; done

unit: deps
	@echo "== test: plain, with the @KeyValueObservable macro (trait Macros)"
	$(SWIFT) test $(MACRO_TRAITS)

# The Swift suites again with the layout self-check forced to fail (SWIFTKVO_RUNTIME_SELF_CHECK=fail,
# Runtime/LayoutSelfCheck.swift): every key path is decided from tables and public key path API
# alone, and the tests marked .needsLayout expect the documented refusal. Same build as make unit.
unit-fallback: deps
	@echo "== test: Swift suites, layout self-check forced to fail (SWIFTKVO_RUNTIME_SELF_CHECK=fail)"
	SWIFTKVO_RUNTIME_SELF_CHECK=fail $(SWIFT) test $(MACRO_TRAITS) --skip CKVOCoreTests

# The C suite again with readers forced onto ck_epoch_begin (CKVO_FENCED_READERS=1): the path
# taken where membarrier(2) is missing, which the plain run never takes on this kind of machine.
unit-fenced: deps
	@echo "== test: C suite, fenced readers (CKVO_FENCED_READERS=1)"
	CKVO_FENCED_READERS=1 $(SWIFT) test $(MACRO_TRAITS) --filter CKVOCoreTests

# The C suite again with every growing counter started 2^16 increments before its 64-bit wrap
# (CKVO_COUNTERS_NEAR_END=1, counters.h): generations and release tickets cross their end
# during the run, so nothing a process could spend in centuries goes untested.
unit-near-end: deps
	@echo "== test: C suite, counters near their ends (CKVO_COUNTERS_NEAR_END=1)"
	CKVO_COUNTERS_NEAR_END=1 $(SWIFT) test $(MACRO_TRAITS) --filter CKVOCoreTests

# One ThreadSanitizer build for the core and the relay (trait Relay): make tsan runs every
# suite that needs no server in it, make relay-tsan the relay's concurrency tests against
# PostgreSQL, make soak-tsan the soak; PostgresNIO is instrumented once per build folder.
TSAN_BUILD := --sanitize=thread --traits Relay --scratch-path $(CURDIR)/.build-tsan

tsan: deps
	@echo "== test: ThreadSanitizer"
	SWIFTKVO_SANITIZER=thread TSAN_OPTIONS="$(TSAN_OPTIONS_RUN)" $(SWIFT) test $(TSAN_BUILD)
	@echo "== test: ThreadSanitizer, C suite with fenced readers (CKVO_FENCED_READERS=1)"
	CKVO_FENCED_READERS=1 SWIFTKVO_SANITIZER=thread TSAN_OPTIONS="$(TSAN_OPTIONS_RUN)" \
		$(SWIFT) test $(TSAN_BUILD) --filter CKVOCoreTests
	@echo "== test: ThreadSanitizer, Swift suites with the layout self-check forced to fail"
	SWIFTKVO_RUNTIME_SELF_CHECK=fail SWIFTKVO_SANITIZER=thread TSAN_OPTIONS="$(TSAN_OPTIONS_RUN)" \
		$(SWIFT) test $(TSAN_BUILD) --filter SwiftKVOTests

# UBSan instruments the C targets (engine and test helpers) through -Xcc: swiftc rejects
# --sanitize=undefined on Linux, and the ASan runtime it links carries UBSan's handlers.
# halt_on_error makes every UBSan report fail the run.
ASAN_BUILD := --sanitize=address -Xcc -fsanitize=undefined --scratch-path .build-asan

asan: deps
	@echo "== test: AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer (C targets)"
	SWIFTKVO_SANITIZER=address ASAN_OPTIONS="$(ASAN_OPTIONS_RUN)" LSAN_OPTIONS="$(LSAN_OPTIONS_RUN)" \
		UBSAN_OPTIONS="$(UBSAN_OPTIONS_RUN)" \
		$(SWIFT) test $(ASAN_BUILD)
	@echo "== test: AddressSanitizer, Swift suites with the layout self-check forced to fail"
	SWIFTKVO_RUNTIME_SELF_CHECK=fail SWIFTKVO_SANITIZER=address ASAN_OPTIONS="$(ASAN_OPTIONS_RUN)" \
		LSAN_OPTIONS="$(LSAN_OPTIONS_RUN)" UBSAN_OPTIONS="$(UBSAN_OPTIONS_RUN)" \
		$(SWIFT) test $(ASAN_BUILD) --filter SwiftKVOTests

# What only an optimized build shows: the allocation tests (a debug build allocates where
# the optimizer does not), the memory bounds at full size (10 million short-lived
# observed objects; 1 million in the debug run), and key path resolution and key-value coding,
# whose key path literals get thunks of their own there: their suites, and the tests of that
# kind filed with the behaviour they exercise.
RELEASE_KEY_PATH_TESTS := --filter KeyPathShapeTests --filter OptionalLinkShapeTests \
	--filter KeyValueCodingTests --filter ComputedPropertyTests --filter SubscriptTests \
	--filter OverrideTests --filter OptionalLinkTests --filter OptionalLinkByNameTests \
	--filter KeyPathChainTests --filter GenericKeyPathTests \
	--filter 'ConcurrentResolutionTests/(concurrentFirstResolutionOfFreshClass|concurrentFirstRegistrationsAgree|concurrentRegistrationsOnGenericSpecializations)' \
	--filter 'KeyPathResolutionTests/(structTupleOptionalAndExistentialPathsRefused|tuplesSelfStructsAndExistentialsAreRefused)' \
	--filter 'PropertyIdentityTests/nestedGenericPrivateAndLocalClassesObservable' \
	--filter 'DependentKeyTests/(aComputedDependentSourceDoesNotTrapAPlainAssignment|aComputedDependentSourceIsNeverRun|dependentTablesWithForeignChainedForcedOrSelfSourcesNeverTrap)' \
	--filter 'ObservedSetTests/(setMutationsCarryMembersAndPriorObserverReentrancy|setValuesYieldWholeSets|concurrentSetMutatorsExactlyOnce)' \
	--filter 'ObservedArrayMutatorTests/arrayPriorObserverEmptiesArrayThenMutatorsNoTrap' \
	--filter 'TokenValidityTests/(tokenValidityAfterDeath|hubTokenValidityAfterSenderDeath)' \
	--filter 'IntrospectionTests/introspectionWhileMutating' \
	--filter 'ObservationBridgeTests/(bridgedObservationTrackingWithConcurrentMutation|bridgedSetMutatorNotifiesObservation|bridgedSubclassOfBridgedBase)' \
	--filter 'AsyncValuesTests/(valuesStreamEndsWhenObjectDies|valuesStreamWithConcurrentDeath)' \
	--filter 'KVOControllerTests/(controllerNotRetainingForgetsDeadObjects|reentrantUnobserveAndReregisterFromCallback)' \
	--filter 'ConcurrencyTests/(noCallAfterInvalidateUnderConcurrency|exactlyOnceWhileOthersChurnSameKey)'

unit-release: deps
	@echo "== test: release build (allocations per notification, memory bounds at 10 million, key paths)"
	SWIFTKVO_LONG_TESTS=1 $(SWIFT) test -c release -Xswiftc -enable-testing \
		--scratch-path .build-release-tests --filter AllocationTests --filter MemoryBoundTests \
		$(RELEASE_KEY_PATH_TESTS)

test: lint unit unit-fallback unit-fenced unit-near-end tsan asan unit-release relay-test relay-tsan

# ------------------------------------------------------------ embedding

$(BUILD)/obj/%.o: Sources/CKVOCore/%.c $(ENGINE_HDR) | deps
	@mkdir -p $(dir $@)
	$(CC) $(ENGINE_CFLAGS) -c $< -o $@

ENGINE_OBJ := $(patsubst Sources/CKVOCore/%.c,$(BUILD)/obj/%.o,$(ENGINE_SRC))

$(BUILD)/lib/libckvo.a: $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/lib/libckvo.so.$(VERSION): $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libckvo.so.$(SOVERSION) -o $@ $^ $$(pkg-config --libs ck) -lpthread

$(BUILD)/ckvo.pc: Makefile Sources/CKVOCore/include/ckvo_version.h
	@mkdir -p $(dir $@)
	@printf '%s\n' \
		'prefix=$(PREFIX)' \
		'libdir=$${prefix}/lib' \
		'includedir=$${prefix}/include' \
		'' \
		'Name: ckvo' \
		'Description: CKVOCore, lock-free key-value observing on Concurrency Kit' \
		'Version: $(VERSION)' \
		'Requires.private: ck' \
		'Cflags: -I$${includedir}' \
		'Libs: -L$${libdir} -lckvo' \
		'Libs.private: -lck -lpthread' > $@

install: deps $(BUILD)/lib/libckvo.a $(BUILD)/lib/libckvo.so.$(VERSION)
	@echo "== install into $(PREFIX)"
	@rm -f $(BUILD)/ckvo.pc && $(MAKE) --no-print-directory $(BUILD)/ckvo.pc PREFIX=$(PREFIX)
	install -d $(PREFIX)/lib/pkgconfig $(PREFIX)/include
	install -m 644 $(BUILD)/lib/libckvo.a $(PREFIX)/lib/
	install -m 755 $(BUILD)/lib/libckvo.so.$(VERSION) $(PREFIX)/lib/
	ln -sf libckvo.so.$(VERSION) $(PREFIX)/lib/libckvo.so.$(SOVERSION)
	ln -sf libckvo.so.$(SOVERSION) $(PREFIX)/lib/libckvo.so
	install -m 644 Sources/CKVOCore/include/ckvo.h Sources/CKVOCore/include/ckvo_probe.h Sources/CKVOCore/include/ckvo_version.h $(PREFIX)/include/
	install -m 644 $(BUILD)/ckvo.pc $(PREFIX)/lib/pkgconfig/

EXAMPLE_PREFIX := $(CURDIR)/$(BUILD)/example-prefix

example: deps
	@echo "== example: plain cc against a temporary install"
	@rm -rf $(EXAMPLE_PREFIX)
	@$(MAKE) --no-print-directory install PREFIX=$(EXAMPLE_PREFIX)
	PKG_CONFIG_PATH=$(EXAMPLE_PREFIX)/lib/pkgconfig; export PKG_CONFIG_PATH; \
	$(CC) -std=c11 -Wall -Wextra -Werror -o $(BUILD)/thermostat examples/thermostat.c \
		$$(pkg-config --cflags --libs ckvo) -Wl,-rpath,$(EXAMPLE_PREFIX)/lib
	./$(BUILD)/thermostat

quickstart: deps
	@echo "== quickstart: the README's Swift example, by hand and with the macro"
	$(SWIFT) run $(MACRO_TRAITS) QuickStart
	$(SWIFT) run $(MACRO_TRAITS) QuickStartMacro

# BENCH_ARGS="--quick" for a smoke run; see `swift run -c release Benchmarks --help`.
BENCH_ARGS ?=
bench: deps
	@echo "== bench: swift run -c release Benchmarks $(BENCH_ARGS)"
	$(SWIFT) run -c release Benchmarks $(BENCH_ARGS)
	@$(MAKE) --no-print-directory relay-bench RELAY_BENCH_ARGS="$(filter --quick,$(BENCH_ARGS))"

# The heap bytes of live C API observations, structure by structure (docs/benchmarks.md).
MEMORY_N ?= 100000
$(BUILD)/memory_breakdown: Tools/memory_breakdown.c $(ENGINE_SRC) $(ENGINE_HDR) | deps
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=c11 -D_GNU_SOURCE -ISources/CKVOCore/include \
		$(ENGINE_SRC) Tools/memory_breakdown.c $$(pkg-config --libs ck) -lpthread -o $@

.PHONY: memory-breakdown
memory-breakdown: $(BUILD)/memory_breakdown
	@echo "== memory-breakdown: $(MEMORY_N) observations, bytes per structure"
	./$(BUILD)/memory_breakdown $(MEMORY_N)

# ----------------------------------------------------------- reliability

FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang

$(BUILD)/fuzz_api: Tests/Fuzz/fuzz_api.c $(ENGINE_SRC) $(ENGINE_HDR) | deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -ISources/CKVOCore/include \
		$(ENGINE_SRC) Tests/Fuzz/fuzz_api.c $$(pkg-config --libs ck) -lpthread -o $@

fuzz: $(BUILD)/fuzz_api
	@echo "== fuzz: $(FUZZ_SECONDS) s of C API operations checked against a model"
	@mkdir -p $(BUILD)/fuzz-corpus
	./$(BUILD)/fuzz_api $(BUILD)/fuzz-corpus Tests/Fuzz/corpus \
		-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 2>&1 | \
		grep -E "^(stat::|Done|INFO: seed|==|fuzz_api:)|SUMMARY|invariant" ; \
		exit $${PIPESTATUS[0]}

# The soak (Tests/Soak): C API and Swift layer under concurrent churn — threads
# changing values, observing and unobserving, observers and observed objects
# dying on other threads, named notifications, threads starting and exiting —
# with exact accounting of deliveries, removals, releases and lifetimes, RSS
# back to its baseline at the end, and the release backlog's peak under its bound;
# it reports the slowest ckvo_unobserve. Both run with the engine's counters
# started near their ends (CKVO_COUNTERS_NEAR_END=1). It stops by itself; see
# `swift run -c release Soak --help`. soak-tsan reuses make tsan's build folder
# (debug), so after make tsan only the soak itself is compiled.
SOAK_SECONDS      ?= 60
SOAK_TSAN_SECONDS ?= 20

soak: deps
	@echo "== soak: $(SOAK_SECONDS) s of every workload at once, counters near their ends"
	CKVO_COUNTERS_NEAR_END=1 $(SWIFT) run -c release Soak --seconds $(SOAK_SECONDS)

soak-tsan: deps
	@echo "== soak under ThreadSanitizer: $(SOAK_TSAN_SECONDS) s, counters near their ends"
	CKVO_COUNTERS_NEAR_END=1 TSAN_OPTIONS="$(TSAN_OPTIONS_RUN)" $(SWIFT) run $(TSAN_BUILD) \
		Soak --seconds $(SOAK_TSAN_SECONDS)

# ----------------------------------------------------------- performance gate

# The engine's file-level call graph: an edge A -> B when A.c calls a non-static function of B.c.
.PHONY: engine-graph
engine-graph:
	@echo "== engine-graph: calls between Sources/CKVOCore/*.c"
	python3 Tools/engine_graph.py Sources/CKVOCore

# make perf-check (Tests/PerfCheck/README.md): fixed-iteration fixtures of the hot operations,
# counted under callgrind (instructions and heap allocations per operation, which repeat exactly
# for the same binary), against Tests/PerfCheck/baseline.tsv. Fails on more than +3%
# instructions or any rise in allocations; make perf-baseline rewrites the baseline. The
# fixture binary is a release build in a scratch folder of its own.
PERF_SCRATCH  := .build-perf
PERF_BASELINE := Tests/PerfCheck/baseline.tsv
PERF_CHECK    := python3 Tests/PerfCheck/perf_check.py --binary $(PERF_SCRATCH)/release/PerfCheck \
	--baseline $(PERF_BASELINE)

.PHONY: perf-deps perf-build perf-check perf-baseline perf-clean

perf-deps:
	@echo "== perf-deps: valgrind, strip, python3"
	@if ! command -v valgrind >/dev/null 2>&1 || ! command -v strip >/dev/null 2>&1 \
		|| ! command -v python3 >/dev/null 2>&1; then \
		echo "installing valgrind, binutils and python3"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind binutils python3; \
	fi
	@valgrind --version

perf-build: deps
	@echo "== perf-build: PerfCheck, -c release, in $(PERF_SCRATCH)"
	$(SWIFT) build -c release --scratch-path $(PERF_SCRATCH) --product PerfCheck

perf-check: perf-deps perf-build
	@echo "== perf-check: instructions and allocations per operation against $(PERF_BASELINE)"
	$(PERF_CHECK)

perf-baseline: perf-deps perf-build
	@echo "== perf-baseline: rewriting $(PERF_BASELINE)"
	$(PERF_CHECK) --update

perf-clean:
	rm -rf $(PERF_SCRATCH)

clean: perf-clean

clean:
	rm -rf $(BUILD) .build .build-tsan .build-asan .build-release-tests
	@$(MAKE) --no-print-directory relay-clean

# ----------------------------------------------------------------- relay
#
# SwiftKVORelay is built only with the package trait Relay (which enables
# Metrics, for SwiftKVOMetrics), in .build-relay, so the suites above never build
# PostgresNIO, swift-nio or swift-metrics: without the trait they are not even
# resolved. Its tests and benchmark run against a real PostgreSQL: Debian's server, installed when missing, in a private
# cluster (data under .build-relay/postgres, owned by the postgres user since
# initdb refuses root), listening on 127.0.0.1:$(PG_PORT) only, trust auth on
# loopback. relay-test and relay-bench start it and stop it afterwards.

PG_PORT       ?= 54329
PG_SOCKETS    := /tmp/swiftkvo-pg-$(PG_PORT)
# The postgres user must reach the data folder: under the build folder when it can
# traverse the checkout's path, else (a checkout under /root, say) under $(PG_SOCKETS).
PG_DATA        = $$(runuser -u postgres -- test -x "$(CURDIR)" 2>/dev/null \
	&& echo "$(CURDIR)/.build-relay/postgres" || echo "$(PG_SOCKETS)/data")
PG_BIN         = $$(dirname "$$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")
PG_AS_OWNER   := runuser -u postgres --
RELAY_SCRATCH := --traits Relay --scratch-path $(CURDIR)/.build-relay
# The suites of the Relay and Metrics traits (the core's run in make unit).
RELAY_SUITES  := --filter SwiftKVORelayTests --filter SwiftKVOMetricsTests
# What the relay tests connect with, and how the restart test stops and starts the server.
RELAY_ENV     := PGHOST=127.0.0.1 PGPORT=$(PG_PORT) PGUSER=postgres PGDATABASE=postgres \
	RELAY_PG_STOP="$(MAKE) --no-print-directory -C $(CURDIR) pg-stop" \
	RELAY_PG_START="$(MAKE) --no-print-directory -C $(CURDIR) pg-start"

.PHONY: pg-install pg-start pg-stop relay-build relay-test relay-tsan relay-bench relay-fuzz relay-example relay-clean consumer-check \
	service-example

pg-install:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		echo "installing Debian's postgresql"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	fi

pg-start: pg-install
	@echo "== pg-start: private PostgreSQL cluster on 127.0.0.1:$(PG_PORT)"
	@mkdir -p $(PG_DATA) $(PG_SOCKETS) && chmod 700 $(PG_DATA) && chown postgres:postgres $(PG_DATA) $(PG_SOCKETS)
	@if [ ! -f $(PG_DATA)/PG_VERSION ]; then \
		$(PG_AS_OWNER) $(PG_BIN)/initdb -D $(PG_DATA) -U postgres --auth=trust -E UTF8 --no-sync >/dev/null; \
	fi
	@if ! $(PG_AS_OWNER) $(PG_BIN)/pg_ctl -D $(PG_DATA) status >/dev/null 2>&1; then \
		$(PG_AS_OWNER) $(PG_BIN)/pg_ctl -D $(PG_DATA) -l $(PG_DATA)/server.log -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $(PG_PORT) -k $(PG_SOCKETS) -c fsync=off" start >/dev/null; \
	fi

pg-stop:
	@echo "== pg-stop"
	@if [ -f $(PG_DATA)/PG_VERSION ] && $(PG_AS_OWNER) $(PG_BIN)/pg_ctl -D $(PG_DATA) status >/dev/null 2>&1; then \
		$(PG_AS_OWNER) $(PG_BIN)/pg_ctl -D $(PG_DATA) -m fast -w stop >/dev/null; \
	fi

relay-build: deps
	@echo "== relay: build (trait Relay: PostgresNIO, the relay and the metrics, in .build-relay)"
	$(SWIFT) build $(RELAY_SCRATCH) --build-tests

# The server is stopped whether the tests pass or not; the tests' status is kept.
relay-test: relay-build
	@$(MAKE) --no-print-directory pg-start
	@echo "== test: relay against PostgreSQL"
	@$(RELAY_ENV) $(SWIFT) test $(RELAY_SCRATCH) --skip-build $(RELAY_SUITES); status=$$?; \
		$(MAKE) --no-print-directory pg-stop; exit $$status

# The relay's concurrent writers, and remote writes under a service's lock and on its
# actor, against PostgreSQL under ThreadSanitizer, in make tsan's build.
RELAY_TSAN_TESTS := --filter 'RelayTests/(concurrentIncrements|writesOfDifferentKeys|remoteWritesAndLoads|setMembers)'
relay-tsan: deps
	@echo "== relay under ThreadSanitizer: build (make tsan's, in .build-tsan)"
	$(SWIFT) build $(TSAN_BUILD) --build-tests
	@$(MAKE) --no-print-directory pg-start
	@echo "== test: relay under ThreadSanitizer against PostgreSQL"
	@$(RELAY_ENV) SWIFTKVO_SANITIZER=thread TSAN_OPTIONS="$(TSAN_OPTIONS_RUN)" $(SWIFT) test $(TSAN_BUILD) \
		--skip-build $(RELAY_TSAN_TESTS); status=$$?; \
		$(MAKE) --no-print-directory pg-stop; exit $$status

# Relay against raw PostgresNIO NOTIFY/LISTEN in one run; skipped when no server starts.
# --quick (what CI's make bench passes) reuses relay-test's debug build, so CI does not
# build PostgresNIO a second time in release; the benchmark prints a debug banner then.
RELAY_BENCH_ARGS ?=
RELAY_BENCH_CONFIG = $(if $(filter --quick,$(RELAY_BENCH_ARGS)),,-c release)
relay-bench: deps
	@echo "== bench: relay over PostgreSQL LISTEN/NOTIFY against raw PostgresNIO (RelayBenchmarks $(RELAY_BENCH_ARGS))"
	@if ! $(MAKE) --no-print-directory pg-start; then \
		echo "relay benchmark skipped: no PostgreSQL server could be started"; exit 0; \
	fi; \
	$(RELAY_ENV) $(SWIFT) run $(RELAY_SCRATCH) $(RELAY_BENCH_CONFIG) RelayBenchmarks $(RELAY_BENCH_ARGS); status=$$?; \
		$(MAKE) --no-print-directory pg-stop; exit $$status

# A seeded generator (Tests/RelayFuzz) feeds random bytes, mutated messages and message
# sequences at the edges of every field into an unsigned and a signed relay; it fails on a trap
# or on a message not accounted for exactly once. No server needed. The seed is printed: pass it
# back as RELAY_FUZZ_SEED to replay a run.
RELAY_FUZZ_SECONDS ?= 60
RELAY_FUZZ_SEED    ?=
relay-fuzz: deps
	@echo "== relay fuzz: $(RELAY_FUZZ_SECONDS) s of hostile input through the receive path"
	$(SWIFT) run $(RELAY_SCRATCH) RelayFuzz --seconds $(RELAY_FUZZ_SECONDS) $(if $(RELAY_FUZZ_SEED),--seed $(RELAY_FUZZ_SEED))

# The README's two-terminal example, scripted: two RelayExample processes on one channel,
# each fed commands on standard input; checks that each printed what the other did.
relay-example: relay-build
	@$(MAKE) --no-print-directory pg-start
	@echo "== relay example: two instances of examples/RelayExample"
	@$(RELAY_ENV) scripts/relay-example.sh $(CURDIR)/.build-relay/debug/RelayExample; status=$$?; \
		$(MAKE) --no-print-directory pg-stop; exit $$status

# examples/InventoryService: a Hummingbird 2 service, a package of its own that names this one by
# path with the traits Relay and Macros (so no user of SwiftKVO fetches Hummingbird), built once in
# its own examples/InventoryService/.build. Two instances against the private server: concurrent
# writes to both must converge with no update lost, an SSE client must see the other's changes,
# SIGTERM must not wait for an open stream, a restarted instance must load what the other holds
# (scripts/service-example.sh). SERVICE_EXAMPLE_N scales the writes (500: 1,200 POSTs).
SERVICE_EXAMPLE_N ?= 500
service-example: deps
	@$(MAKE) --no-print-directory pg-start
	@echo "== service example: two instances of examples/InventoryService"
	@$(RELAY_ENV) SERVICE_EXAMPLE_N=$(SERVICE_EXAMPLE_N) SWIFT=$(SWIFT) scripts/service-example.sh; status=$$?; \
		$(MAKE) --no-print-directory pg-stop; exit $$status

# A package outside the repository that names a file:// clone of it by URL: with the trait
# Relay it builds and runs the relay example against the private server; without it, its
# build log must show no PostgresNIO, swift-nio, BoringSSL or swift-metrics (scripts/consumer-check.sh).
consumer-check: deps
	@$(MAKE) --no-print-directory pg-start
	@echo "== consumer check: SwiftKVO by URL, with and without the trait Relay"
	@$(RELAY_ENV) scripts/consumer-check.sh "$(CURDIR)" "$(CURDIR)/$(BUILD)/consumer"; status=$$?; \
		$(MAKE) --no-print-directory pg-stop; exit $$status

# ------------------------------------------------------------------ docs
#
# The DocC catalogs as static sites, through swift-docc-plugin, warnings as errors: a broken
# symbol link or an undocumented parameter fails the build. Built with the trait Relay in the
# relay's scratch folder (.build-relay), so after relay-build only the symbol graphs are new.
# SWIFTKVO_DOCS=1 makes the manifest add swift-docc-plugin (Package.swift says why only then).
DOCS_OUT     := $(CURDIR)/$(BUILD)/docs
DOCS_MODULES := SwiftKVO SwiftKVORelay SwiftKVOMetrics

.PHONY: docs
docs: deps
	@echo "== docs: DocC for $(DOCS_MODULES), warnings as errors, static sites in $(DOCS_OUT)"
	@mkdir -p $(DOCS_OUT)
	@for module in $(DOCS_MODULES); do \
		echo "-- $$module"; \
		SWIFTKVO_DOCS=1 $(SWIFT) package $(RELAY_SCRATCH) --allow-writing-to-directory $(DOCS_OUT)/$$module \
			generate-documentation --target $$module --warnings-as-errors \
			--transform-for-static-hosting --hosting-base-path $$module \
			--output-path $(DOCS_OUT)/$$module || exit 1; \
	done

relay-clean:
	@-$(MAKE) --no-print-directory pg-stop
	rm -rf .build-relay $(PG_SOCKETS) examples/InventoryService/.build
