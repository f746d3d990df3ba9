# The two commands a person needs: `make demo` and `make test`. Both set the machine up first.
BUILD      ?= build
BENCH_BUILD ?= build-bench
JOBS       ?= $(shell nproc)

.PHONY: all setup build demo test bench clean

all: build

setup:
	@./scripts/setup.sh

$(BUILD)/CMakeCache.txt: | setup
	cmake -S . -B $(BUILD) -DFG_SANITIZE=ON

build: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./scripts/demo.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

$(BENCH_BUILD)/CMakeCache.txt: | setup
	cmake -S . -B $(BENCH_BUILD) -DFG_SANITIZE=OFF -DCMAKE_BUILD_TYPE=Release

bench: setup $(BENCH_BUILD)/CMakeCache.txt
	cmake --build $(BENCH_BUILD) -j $(JOBS)
	./scripts/bench.sh $(BENCH_BUILD)

clean:
	rm -rf $(BUILD) $(BENCH_BUILD)
