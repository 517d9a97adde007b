# xsprof front end. Two commands on a fresh Debian 12 machine (as root):
#   make demo   install what is missing, build, profile a 4-rank MPI example, merge, show the report
#   make test   install what is missing, build, run the whole CTest suite
# Both are idempotent and quick when nothing changed.

BUILD   ?= build
PREFIX  ?= /usr/local
JOBS    ?= 2
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
DEMO_DIR ?= $(BUILD)/demo-run
DEMO_OUT ?= $(BUILD)/demo-merged

# Debian packages the build, the tests and the demo need.
PKGS := cmake make gcc g++ gfortran clang pkg-config python3 \
        libopenmpi-dev openmpi-bin libhdf5-dev hdf5-tools libhwloc-dev libdeflate-dev \
        python3-h5py python3-mpi4py python3-numpy python3-pandas python3-pytest protobuf-compiler python3-protobuf gcovr chromium libclang-rt-14-dev hpcc \
        libdw-dev libotf2-trace-dev otf2-tools python3-otf2 \
        libmicrohttpd-dev libjs-chart.js curl lammps lammps-examples

export OMPI_ALLOW_RUN_AS_ROOT = 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM = 1
export OMPI_MCA_rmaps_base_oversubscribe = 1

.PHONY: all deps build demo test install clean check-all

all: build

# Installs only what is missing; the stamp makes the next run instant.
deps: $(BUILD)/.deps-ok
$(BUILD)/.deps-ok: Makefile
	@missing=$$(for p in $(PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "xsprof: installing Debian packages:" $$missing; \
	  if [ "$$(id -u)" != 0 ]; then echo "xsprof: run as root (or install: $$missing)"; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	fi
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/CMakeCache.txt: $(BUILD)/.deps-ok
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DCMAKE_INSTALL_PREFIX=$(PREFIX)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	@rm -rf $(DEMO_DIR) $(DEMO_OUT)
	mpirun -np 4 --oversubscribe --mca mpi_yield_when_idle 1 -x XSPROF_OUTPUT=$(DEMO_DIR) $(BUILD)/bin/xsprof-demo
	$(BUILD)/bin/xsmerge $(DEMO_DIR) -o $(DEMO_OUT)
	@echo
	@echo "trace (open in https://ui.perfetto.dev): $(DEMO_OUT)/trace.pftrace"
	@echo "trace (chrome://tracing):                $(DEMO_OUT)/trace.json"
	@echo "report:                                  $(DEMO_OUT)/report.txt  $(DEMO_OUT)/report.html"

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 600

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Everything CI runs: the suite, sanitizers, coverage, fuzzing (tests/ci/).
check-all: test
	bash tests/ci/check-all.sh

clean:
	rm -rf $(BUILD)
