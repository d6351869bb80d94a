# ffsim_ros developer entry points. `make test` and `make demo` do all set-up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ffsim-setup-stamp
SETUP_INPUTS := tools/setup_venv.sh $(wildcard requirements/*.txt) setup.py package.xml \
	$(shell find interfaces -type f 2>/dev/null)

.PHONY: setup warmup test demo bench lint clean

setup: $(STAMP)

$(STAMP): $(SETUP_INPUTS)
	PYTHON=$(PYTHON) VENV=$(VENV) bash tools/setup_venv.sh
	touch $@

# Compile the numba kernels once (cached on disk; ~2 s when already cached), so that the
# nodes started by tests and the demo do not each pay the compile time.
warmup: setup
	$(PY) -m ffsim_ros.dynamics.warmup

# The tests without DDS on every core (a test file per worker: module fixtures run once), then
# the DDS tests one at a time (each starts its own nodes; in parallel they would compete for
# the cores they pace in real time). FFSIM_REQUIRE_ORACLES=1: a test oracle (Pinocchio, MuJoCo,
# ...) or rclpy missing from the venv is an error, not a skip (test/conftest.py).
test: warmup
	FFSIM_REQUIRE_ORACLES=1 $(PY) -m pytest -q -n auto --dist loadfile -m 'not ros' --durations=20 test
	FFSIM_REQUIRE_ORACLES=1 $(PY) -m pytest -q -m ros --durations=20 test

demo: warmup
	$(PY) -m ffsim_ros.cli demo

bench: warmup
	$(PY) benchmarks/run.py
	$(PY) benchmarks/simulator.py
	$(PY) benchmarks/methods.py
	$(PY) benchmarks/derivatives.py
	mkdir -p build && $(PY) benchmarks/reach.py --json build/reach.json
	$(PY) benchmarks/reach_gap.py build/reach.json
	$(PY) benchmarks/conservation.py
	$(PY) benchmarks/campaign.py
	$(PY) benchmarks/first_start.py --colcon

lint: setup
	$(PY) -m ruff check .

clean:
	rm -rf $(VENV) build install log demo_output
