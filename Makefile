# bloomkit: the two commands a new user types are `make demo` and `make check`.
BUILD      ?= build
BUILD_SAN  ?= build-asan
BUILD_TSAN ?= build-tsan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps build demo check test test-asan test-tsan bench plots install clean

all: build

deps:
	@sh scripts/deps.sh

build:
	@cmake -S . -B $(BUILD) -DBK_WERROR=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: deps build
	@$(BUILD)/examples/demo

# Every test, then the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, then the
# concurrency tests under ThreadSanitizer.
check: deps build
	@$(MAKE) --no-print-directory test test-asan test-tsan

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

bench: deps build
	$(BUILD)/bench/bench

# The README's charts: FPR against bits per key, and throughput, for every filter type.
plots: deps build
	sh scripts/plots.sh $(BUILD) docs/img 1000000

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_TSAN)
