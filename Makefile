# make demo  -- builds plait into .venv and runs examples/demo.py
# make test  -- C++ unit tests (ctest), kernels built by clang, kernels under
#              the sanitizers, the fuzzer, then the Python tests (pytest)
#
# Works on a fresh Debian machine: missing Debian packages are installed when
# running as root, Python packages come from PyPI into .venv.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
JOBS ?= 2
# clang with its OpenMP runtime (libomp) and sanitizer/libFuzzer runtimes
# (libclang-rt): the second system compiler and the fuzzer's compiler.
DEBIAN_PACKAGES := g++ cmake ninja-build libgtest-dev clang libomp-dev libclang-rt-dev libopenblas0-openmp
CLANGXX ?= clang++
BUILD_DEPS := scikit-build-core nanobind "numpy>=2" pytest pytest-xdist scipy hypothesis

export CMAKE_BUILD_PARALLEL_LEVEL := $(JOBS)

PLAIT_SOURCES := $(shell find src python tools cmake -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.def' \
                   -o -name '*.py' -o -name '*.txt' -o -name '*.cmake' \) 2>/dev/null) CMakeLists.txt pyproject.toml

.NOTPARALLEL:
.PHONY: all demo test test-cpp test-python test-clang test-sanitize fuzz bench clean system-deps

all: $(VENV)/.plait-installed

# Debian packages, installed only when missing (and only as root).
system-deps:
	@missing=""; \
	for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	$(PYTHON) -c "import ensurepip" >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	$(PYTHON) -c "import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
	  || missing="$$missing python3-dev"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "missing Debian packages:$$missing (run as root or install them)"; exit 1; fi; \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

$(VENV)/.deps-installed: pyproject.toml Makefile | system-deps
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	@echo "installing Python build and test dependencies into $(VENV)"
	@$(VPY) -m pip install -q --disable-pip-version-check --upgrade pip
	@$(VPY) -m pip install -q --disable-pip-version-check $(BUILD_DEPS)
	@touch $@

# A plain (non-editable) install. Its CMake build directory, build/python,
# persists, so rebuilds are incremental, and also builds the C++ unit tests:
# one build of the compiler core serves the package, plaitc and ctest.
BUILD_DIR := build/python

$(VENV)/.plait-installed: $(VENV)/.deps-installed $(PLAIT_SOURCES) $(wildcard tests/unit/*.cpp)
	@echo "building and installing plait into $(VENV)"
	@$(VPY) -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall \
	  -Cbuild-dir=$(BUILD_DIR) -Ccmake.define.PLAIT_BUILD_TESTS=ON .
	@touch $@

demo: $(VENV)/.plait-installed
	$(VPY) examples/demo.py

# ctest prints one line per test, of which only failures and the summary are
# kept.
test-cpp: $(VENV)/.plait-installed
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS) 2>&1 | grep -v -E '^ *([0-9]+/[0-9]+ Test +#[0-9]+: .* Passed|Start +[0-9]+: )'

# tests/cli drives the plaitc that the wheel installed into .venv/bin. The
# tests run in $(JOBS) processes (pytest-xdist): most of their time is the
# system compiler building one kernel at a time. The slowest are listed, to
# keep CI's time in view.
test-python: $(VENV)/.plait-installed
	PLAIT_PLAITC=$(CURDIR)/$(VENV)/bin/plaitc $(VPY) -m pytest tests -q --tb=short -p no:cacheprovider -n $(JOBS) \
	  --durations=20

# Kernels built by clang instead of g++: the code generator's unit tests
# (warnings as errors) and the differential tests of loops and parallel loops
# (docs/testing.md, "A second system compiler"), less the NaN reductions' two
# largest parametrisations.
CLANG_TESTS := tests/python/test_loops_parallel.py tests/python/test_loops_statements.py
test-clang: $(VENV)/.plait-installed
	@PLAIT_CXX=$(CLANGXX) $(BUILD_DIR)/plait_unit_tests --gtest_brief=1 --gtest_filter='CodegenCpu.*:CodegenCuda.*'
	PLAIT_CXX=$(CLANGXX) $(VPY) -m pytest $(CLANG_TESTS) -k "not time_loop and not reversed" -q --tb=short \
	  -p no:cacheprovider -n $(JOBS)

# Kernels built with -fsanitize=address,undefined (PLAIT_SANITIZE=1) and run
# in a Python with g++'s ASan runtime preloaded (docs/testing.md, "Kernels
# under AddressSanitizer and UBSan").
SANITIZE_TESTS := tests/python/test_loops_runtime_errors.py
test-sanitize: $(VENV)/.plait-installed
	LD_PRELOAD=$$(g++ -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 PLAIT_SANITIZE=1 \
	  $(VPY) -m pytest $(SANITIZE_TESTS) -q --tb=short -p no:cacheprovider -n $(JOBS)

# The fuzzer (tools/fuzz/README.md) for FUZZ_SECONDS, inputs up to 4 KiB.
FUZZ_SECONDS ?= 30
fuzz: system-deps
	CLANGXX=$(CLANGXX) tools/fuzz.sh $(FUZZ_SECONDS) -max_len=4096

# pytest runs last so that its summary line closes the log.
test: test-cpp test-clang test-sanitize fuzz test-python

bench: $(VENV)/.plait-installed
	$(VPY) benchmarks/call_overhead.py
	$(VPY) benchmarks/omp_overhead.py

clean:
	rm -rf build $(VENV)
