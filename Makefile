# The two commands a person needs: `make demo` and `make test`. Both set the machine up first.
BUILD      ?= build
BENCH_BUILD ?= build-bench
JOBS       ?= $(shell nproc)

.PHONY: all setup build demo replay test test-unstable bench clean

all: build

setup:
	@./scripts/setup.sh

$(BUILD)/CMakeCache.txt: | setup
	@mkdir -p $(BUILD)
	@cmake -S . -B $(BUILD) -DFG_SANITIZE=ON > $(BUILD)/configure.log 2>&1 || { cat $(BUILD)/configure.log; exit 1; }

build: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The demo prints no build noise: the build's output is shown only when it fails.
demo: setup $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j $(JOBS) > $(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; exit 1; }
	@python3 ./scripts/demo.py $(BUILD)

# The placement experiment on the Alibaba trace (DEMO_SEEDS=42-51 for all ten seeds).
replay: build
	./scripts/replay.sh $(BUILD)

# Tests labelled "unstable" are acceptance scenarios of work still under way that do not yet pass
# every run; `make test-unstable` runs them. None may stay there once its issue is resolved.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900 -LE unstable

test-unstable: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900 -L unstable

$(BENCH_BUILD)/CMakeCache.txt: | setup
	cmake -S . -B $(BENCH_BUILD) -DFG_SANITIZE=OFF -DCMAKE_BUILD_TYPE=Release

bench: setup $(BENCH_BUILD)/CMakeCache.txt
	cmake --build $(BENCH_BUILD) -j $(JOBS)
	./scripts/bench.sh $(BENCH_BUILD)

clean:
	rm -rf $(BUILD) $(BENCH_BUILD)
