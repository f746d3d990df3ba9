# The two commands a person needs: `make demo` and `make test`. Both set the machine up first.
BUILD       ?= build
BENCH_BUILD ?= build-bench
TSAN_BUILD  ?= build-tsan
FUZZ_BUILD  ?= build-fuzz
JOBS        ?= $(shell nproc)

.PHONY: all setup build checks-build demo replay test test-unstable soak bench clean

all: build

setup:
	@./scripts/setup.sh

# $(call configure,DIR,CMAKE ARGS): configures a build directory, quiet unless it fails.
define configure
@mkdir -p $(1)
@cmake -S . -B $(1) $(2) > $(1)/configure.log 2>&1 || { cat $(1)/configure.log; exit 1; }
endef

$(BUILD)/CMakeCache.txt: | setup
	$(call configure,$(BUILD),-DFG_SANITIZE=ON)

build: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The demo prints no build noise: the build's output is shown only when it fails.
demo: setup $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j $(JOBS) > $(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; exit 1; }
	@python3 ./scripts/demo.py $(BUILD)

# The placement experiment on the Alibaba trace (DEMO_SEEDS=42-51 for all ten seeds).
replay: build
	./scripts/replay.sh $(BUILD)

# Every test: first the builds of their own that three kinds need, and those (they are short):
# the multi-threaded parts under ThreadSanitizer (build-tsan, ctest -L threads), each libFuzzer
# target for a few seconds (build-fuzz, clang, ctest -L fuzz; fuzz/README.md), one end-to-end
# scenario with the operator under valgrind (the release build, ctest -L valgrind); then every test
# of the sanitizer build. Tests labelled "unstable" are acceptance scenarios of work still under way
# that do not yet pass every run; `make test-unstable` runs them. None may stay there once its issue
# is resolved.
test: build checks-build
	cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure -j $(JOBS) -L threads
	cd $(FUZZ_BUILD) && ctest --output-on-failure -j $(JOBS) -L fuzz
	cd $(BENCH_BUILD) && ctest --output-on-failure -L valgrind
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900 -LE unstable

# The chaos run of `make test` (e2e_sim_faults, docs/reliability.md) made long: SOAK_SECONDS of
# faults on the sanitizer build. The seed it prints draws the same faults again (FG_FAULTS_SEED=<seed>).
# The test binary runs directly: ctest would hold it to the test's own 600 s limit.
SOAK_SECONDS ?= 1800
soak: build
	cd $(BUILD) && FG_CHAOS_SECONDS=$(SOAK_SECONDS) FG_SOURCE_DIR=$(CURDIR) FG_BIN_DIR=$(CURDIR)/$(BUILD)/bin \
		./tests/e2e_sim_faults

$(TSAN_BUILD)/CMakeCache.txt: | setup
	$(call configure,$(TSAN_BUILD),-DFG_SANITIZE=OFF -DFG_TSAN=ON)

$(FUZZ_BUILD)/CMakeCache.txt: | setup
	$(call configure,$(FUZZ_BUILD),-DCMAKE_C_COMPILER=clang -DFG_SANITIZE=OFF -DFG_FUZZ=ON)

checks-build: $(TSAN_BUILD)/CMakeCache.txt $(FUZZ_BUILD)/CMakeCache.txt $(BENCH_BUILD)/CMakeCache.txt
	@cmake --build $(TSAN_BUILD) -j $(JOBS) --target fg_thread_tests > $(TSAN_BUILD)/build.log 2>&1 || { cat $(TSAN_BUILD)/build.log; exit 1; }
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all > $(FUZZ_BUILD)/build.log 2>&1 || { cat $(FUZZ_BUILD)/build.log; exit 1; }
	@cmake --build $(BENCH_BUILD) -j $(JOBS) --target fracgpu e2e_sched_replay_agree > $(BENCH_BUILD)/build.log 2>&1 || { cat $(BENCH_BUILD)/build.log; exit 1; }

test-unstable: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900 -L unstable

$(BENCH_BUILD)/CMakeCache.txt: | setup
	$(call configure,$(BENCH_BUILD),-DFG_SANITIZE=OFF -DCMAKE_BUILD_TYPE=Release)

bench: setup $(BENCH_BUILD)/CMakeCache.txt
	cmake --build $(BENCH_BUILD) -j $(JOBS)
	./scripts/bench.sh $(BENCH_BUILD)

clean:
	rm -rf $(BUILD) $(BENCH_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
