# bloomkit: the two commands a new user types are `make demo` and `make check`.
BUILD      ?= build
BUILD_SAN  ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
# make install PREFIX=/usr DESTDIR=/tmp/stage: the usual two knobs, handed to cmake --install.
PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: all deps build demo check test test-asan test-tsan fuzz bench bench-blocked plots install deb abi-record clean

all: build

deps:
	@sh scripts/deps.sh

build:
	@cmake -S . -B $(BUILD) -DBK_WERROR=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# A made-up crawl of a million URLs through the bloomkit command: build, info, filter (scripts/demo.sh).
# Builds only what it runs, the bloomkit command (and the library inside it); `make` builds the rest
# into the same folder later.
demo: deps
	@cmake -S . -B $(BUILD) -DBK_WERROR=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target bloomkit
	@sh scripts/demo.sh $(BUILD)

# Every test, then the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, then the
# concurrency tests under ThreadSanitizer, then the fuzzers for FUZZ_SECONDS in all.
check: deps build
	@$(MAKE) --no-print-directory test test-asan test-tsan fuzz

test:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan:
	@cmake -S . -B $(BUILD_SAN) -DBK_WERROR=ON -DBK_SANITIZE=address,undefined -DBK_BUILD_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD_SAN) -j $(JOBS)
	cd $(BUILD_SAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS) -LE nosan

test-tsan:
	@cmake -S . -B $(BUILD_TSAN) -DBK_WERROR=ON -DBK_SANITIZE=thread -DBK_BUILD_BENCH=OFF \
	  -DBK_BUILD_REDIS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD_TSAN) -j $(JOBS)
	cd $(BUILD_TSAN) && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L concurrency --no-tests=ignore

# libFuzzer (clang, ASan+UBSan) on every untrusted input, FUZZ_SECONDS in all: the file loader for half
# of it (seeded with valid files of every type), the Redis module's RDB loader and its commands (argument
# parsing, the chunk protocol, BK.IMPORT payloads) for a quarter each, when the module can be built.
# Fails on any crash, leak or sanitizer report. New interesting inputs accumulate in
# $(BUILD_FUZZ)/corpus-{load,rdb,cmd}; crashing inputs are written to $(BUILD_FUZZ)/ (crash-*): copy them
# into fuzz/corpus/<target>/.
FUZZ_FLAGS = -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
FUZZ_ENV = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fuzz:
	@cmake -S . -B $(BUILD_FUZZ) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DBK_BUILD_FUZZ=ON \
	  -DBK_SANITIZE=address,undefined -DBK_WERROR=ON -DBK_BUILD_TESTS=OFF -DBK_BUILD_BENCH=OFF \
	  -DBK_BUILD_CLI=OFF -DBK_BUILD_REDIS=ON -DBK_BUILD_EXAMPLES=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_load gen_corpus
	@mkdir -p $(BUILD_FUZZ)/corpus-load $(BUILD_FUZZ)/seed-load
	@$(BUILD_FUZZ)/fuzz/gen_corpus $(BUILD_FUZZ)/seed-load
	@if cmake --build $(BUILD_FUZZ) --target help | grep -q fuzz_cmd; then \
	  load_s=$$(( $(FUZZ_SECONDS) / 2 )); redis_s=$$(( $(FUZZ_SECONDS) / 4 )); \
	else \
	  load_s=$(FUZZ_SECONDS); redis_s=0; \
	  echo "fuzz: the Redis module is not built here (no redismodule.h: run scripts/deps.sh); loader only"; \
	fi; \
	cd $(BUILD_FUZZ) && $(FUZZ_ENV) fuzz/fuzz_load -max_total_time=$$load_s $(FUZZ_FLAGS) \
	  corpus-load seed-load $(CURDIR)/fuzz/corpus/load $(CURDIR)/tests/golden || exit 1; \
	[ $$redis_s -gt 0 ] || exit 0; \
	cmake --build . -j $(JOBS) --target fuzz_rdb fuzz_cmd fuzz_rdb_seeds fuzz_cmd_seeds || exit 1; \
	mkdir -p corpus-rdb seed-rdb corpus-cmd seed-cmd && \
	fuzz/fuzz_rdb_seeds --write-seeds seed-rdb && fuzz/fuzz_cmd_seeds --write-seeds seed-cmd || exit 1; \
	$(FUZZ_ENV) fuzz/fuzz_rdb -max_total_time=$$redis_s $(FUZZ_FLAGS) corpus-rdb seed-rdb $(CURDIR)/fuzz/corpus/rdb || exit 1; \
	$(FUZZ_ENV) fuzz/fuzz_cmd -max_total_time=$$redis_s -max_len=65536 $(FUZZ_FLAGS) corpus-cmd seed-cmd

bench: deps build
	$(BUILD)/bench/bench

# The blocked filter's figures: both key kinds, in cache and ~1 GiB, with the memory floor.
bench-blocked: deps build
	sh bench/blocked.sh $(BUILD)

# The README's charts: FPR against bits per key, and throughput, for each of the nine filter types
# (scripts/plots.sh; builds only the bench program).
plots: deps
	@cmake -S . -B $(BUILD) -DBK_WERROR=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target bench
	sh scripts/plots.sh $(BUILD) docs/img 1000000

install: build
	DESTDIR='$(DESTDIR)' cmake --install $(BUILD) --prefix '$(PREFIX)'

# Debian packages (libbloomkit1, libbloomkit-dev, bloomkit, redis-bloomkit, python3-bloomkit) into $(BUILD)/deb, checked by
# lintian (scripts/deb.sh).
deb: deps
	@sh scripts/deb.sh $(BUILD)/deb $(JOBS)

# Record the shared library's ABI in abi/ (scripts/abi.sh); make check compares every build with it.
abi-record: build
	@sh scripts/abi.sh record $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_TSAN)
