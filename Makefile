# The front door: `make demo` and `make check` do all the set-up on a fresh
# Debian 12 machine (packages, configure, Release build). CMake does the rest.
BUILD      ?= build
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
DEPS       := cmake make gcc pkg-config liblzf-dev libcjson-dev libqhull-dev zlib1g-dev liblbfgs-dev \
              libsuitesparse-dev opencl-c-headers
# POCL, the CPU OpenCL driver, runs every device kernel in the tests.
# The Python package: built with Debian's setuptools and pip, offline; `pip
# install .` of the root goes into a venv (python3-venv: PEP 668).
PYTHON_DEPS := python3 python3-dev python3-numpy python3-pip python3-setuptools python3-venv
# python3-open3d: the Python tests' Open3D inputs (skipped without it).
TEST_DEPS  := $(PYTHON_DEPS) python3-pytest python3-open3d pocl-opencl-icd ocl-icd-libopencl1 libopenmpi-dev \
              openmpi-bin clang clang-format-14 chromium
BENCH_DEPS := g++ libpcl-dev python3-open3d python3-scipy python3-numpy libopenmpi-dev openmpi-bin
PTREG      := $(BUILD)/ptreg
DEMO_DIR   := $(BUILD)/demo
# make check's tests may not skip their real-data or device sections: a
# missing ../shared/data or device (POCL, which test-deps installs) fails
# them, saying so. Without the data: make check PTREG_TEST_REQUIRE_DATA=0
# (those sections then skip, and the skips fail unless tests/skips.txt
# names them: scripts/ctest-check.sh).
export PTREG_TEST_REQUIRE_DATA ?= 1
export PTREG_TEST_REQUIRE_DEVICE ?= 1

.PHONY: all deps test-deps configure build demo check check-release check-sanitize check-tsan check-fuzz check-valgrind \
        fuzz install \
        bench bench-deps clean

all: build

deps:
	@scripts/ensure-deps.sh $(DEPS)
	@scripts/ensure-web.sh --optional

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main job on built-in data: a scan of the built-in shape in a random
# pose, registered back onto the model, with the pose error; its report
# (--html) is the last line: a page to open in any browser, offline.
demo: build
	@mkdir -p $(DEMO_DIR)
	@$(PTREG) synth --shape aircraft --model $(DEMO_DIR)/model.ply --model-points 40000 \
	    -o $(DEMO_DIR)/scan.ply --points 30000 --max-angle 10 --noise 0.002 \
	    --truth-out $(DEMO_DIR)/truth.txt --seed 1
	@$(PTREG) icp $(DEMO_DIR)/scan.ply $(DEMO_DIR)/model.ply --max-iter 100 \
	    --truth $(DEMO_DIR)/truth.txt -o $(DEMO_DIR)/scan_registered.ply --html $(DEMO_DIR)/report.html
	@echo "report: $(abspath $(DEMO_DIR))/report.html (open it in a browser)"

# The CLI tests read --json with Python's json module. POCL goes in before
# configuring: with it present, the device parity suite must find a device.
# Chromium and web/'s npm packages: the HTML reports' browser tests (tests/html).
# clang-format-14: the sources' style (the ctest format, scripts/format.sh).
test-deps:
	@scripts/ensure-deps.sh $(TEST_DEPS)
	@scripts/ensure-web.sh

# The suite twice: the Release build, then again under AddressSanitizer +
# UndefinedBehaviorSanitizer (every test but the two that load the library
# into uninstrumented programs; tests/sanitize/lsan.supp for the OpenCL
# drivers' own memory), a build that also injects allocation failures
# (tests/alloc/sweep.sh). A failed test runs again only when its output
# shows LeakSanitizer's own tracer crashing at exit in a process that loaded
# POCL ("Tracer caught signal 11", a bug of the sanitizer runtime); any other
# failure stands, so an intermittent finding is not retried away
# (scripts/ctest-check.sh, which also fails on a skip not in tests/skips.txt).
# Then the concurrent callers' tests under ThreadSanitizer (check-tsan), and
# every fuzz target for 20 seconds.
check: check-release check-sanitize check-tsan check-fuzz

check-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20

check-release: test-deps
	@$(MAKE) --no-print-directory build
	@scripts/ctest-check.sh $(BUILD) -j $(JOBS)

# Every parser under libFuzzer (clang, ASan, UBSan) for FUZZ_SECONDS each;
# a finding fails it (tests/fuzz/run.sh, tests/fuzz/README.md).
FUZZ_SECONDS ?= 60
fuzz: test-deps deps
	@FUZZ_BUILD=$(BUILD)-fuzz tests/fuzz/run.sh $(FUZZ_SECONDS)

# Its device tests start from the POCL caches of the Release build's tests of
# the same name (the same kernels and POCL settings, when check-release ran
# first): POCL compiles a kernel as it first launches it, half of a device
# test's time, and the sanitizers watch ptreg's host code, which makes the
# same calls whether POCL compiles or loads.
SANITIZE_BUILD ?= $(BUILD)-sanitize
check-sanitize: test-deps deps
	@cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=Release -DPTREG_SANITIZE=ON -DPTREG_FAULT_INJECTION=ON \
	    $(CMAKE_ARGS) >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	@for cache in $(BUILD)/tests/pocl-cache-*; do \
	    [ ! -d "$$cache" ] || cp -an "$$cache" $(SANITIZE_BUILD)/tests/; done
	@LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp \
	    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    scripts/ctest-check.sh --lsan-retry $(SANITIZE_BUILD) -j $(JOBS)

# ThreadSanitizer's build: only what its tests need (the library, the
# programs of tests/CMakeLists.txt's PTREG_TSAN_TESTS, the CUDA stand-in).
TSAN_BUILD ?= $(BUILD)-tsan
check-tsan: test-deps deps
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Release -DPTREG_SANITIZE=thread $(CMAKE_ARGS) >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS) --target tsan_tests
	@scripts/ctest-check.sh $(TSAN_BUILD) -j $(JOBS)

# The CLI tests with every ptreg process under valgrind's memcheck, then the
# test programs (tests/valgrind/run.sh; not part of check: over an hour).
check-valgrind: test-deps
	@scripts/ensure-deps.sh valgrind
	@$(MAKE) --no-print-directory build
	@tests/valgrind/run.sh $(PTREG)

# The library, headers, CLI and man page, then the Python package against
# that library (PREFIX/lib/python3.X/dist-packages).
install: build
	@scripts/ensure-deps.sh $(PYTHON_DEPS)
	@cmake --install $(BUILD)
	@scripts/install-python.sh --prefix $(PREFIX)

bench-deps:
	@scripts/ensure-deps.sh $(DEPS) $(BENCH_DEPS)

# Speed against the peers (Open3D, PCL, NumPy) and the machine (roofline.py): see bench/README.md.
bench: build bench-deps
	@cmake -S bench/peers -B $(BUILD)/peers -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD)/peers -j $(JOBS)
	@/usr/bin/python3 bench/icp_bench.py --ptreg $(PTREG) --pcl $(BUILD)/peers/pcl_icp --work $(BUILD)/bench --index-methods all
	@/usr/bin/python3 bench/emicp_bench.py --ptreg $(PTREG) --work $(BUILD)/bench/emicp
	@/usr/bin/python3 bench/harris_bench.py --ptreg $(PTREG)
	@/usr/bin/python3 bench/features_bench.py
	@/usr/bin/python3 bench/batch_bench.py --ptreg $(PTREG)
	@/usr/bin/python3 bench/lddmm_bench.py --ptreg $(PTREG)
	@/usr/bin/python3 bench/roofline.py --build $(BUILD) --markdown --svg $(BUILD)/bench/roofline.svg

clean:
	@rm -rf $(BUILD)
