# `make demo`: install keras_elmo (no test extras) into .venv and embed
#              sentences with the shipped model.
# `make test`: install keras_elmo with the test extras into .venv and run
#              every test on $(PYTEST_WORKERS) pytest-xdist workers
#              (tests/xdist_plan.py), then print the 20 slowest tests and
#              write build/test-durations.{md,json} (tools/test_durations.py;
#              CI: .ci/run).
# `make test-fast`: the same without the `large`, `crash_sweep` and
#              `engine` tests (pyproject.toml): day-to-day work, minutes.
# `make test-torch`: add torch's CPU build (tools/install_torch_cpu.sh)
#              and the `torch` extra to .venv and run the PyTorch backend
#              tests (`-m torch_backend`, which `test` and `test-fast`
#              deselect; CI: .ci/run).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
export TF_CPP_MIN_LOG_LEVEL ?= 2
# pytest-xdist workers (`make test PYTEST_WORKERS=0`: one process, no
# xdist). Each file runs on one worker, the Spark and Beam folders each
# on one, the slowest first: tests/xdist_plan.py.
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile
BUILD ?= build
# `make test-fast`: no end-to-end (`large`), crash-sweep or engine tests.
FAST_TESTS := not large and not crash_sweep and not engine and not torch_backend
# pip keeps its download and wheel cache (~/.cache/pip, or $$PIP_CACHE_DIR)
# between runs: a second fresh clone on the same machine installs from it.

.PHONY: demo test test-fast test-torch lint clean

# `$(call pytest_with_report,NAME,PYTEST ARGUMENTS)`: runs pytest with a
# JUnit XML file, then (pass or fail) prints the 20 slowest tests and
# writes $(BUILD)/NAME.{md,json}; pytest's exit status is the target's.
define pytest_with_report
	@mkdir -p $(BUILD)
	@rm -f $(BUILD)/$(1).xml
	$(PY) -m pytest -q $(2) --junitxml=$(BUILD)/$(1).xml \
	    -o junit_duration_report=total; status=$$?; \
	if [ -f $(BUILD)/$(1).xml ]; then \
	    $(PY) tools/test_durations.py $(BUILD)/$(1).xml $(BUILD)/$(1) \
	        --top 20 --command "make $(MAKECMDGOALS)" || true; \
	fi; \
	exit $$status
endef

$(VENV)/bin/python:
	@echo "== creating the virtual environment $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# What the demo needs: keras_elmo and its runtime dependencies only.
$(VENV)/.installed-demo: setup.cfg pyproject.toml | $(VENV)/bin/python
	@echo "== installing keras_elmo and its runtime dependencies" \
	    "(TensorFlow, tensorflow-text, Keras, h5py)"
	$(PIP) install -e .
	touch $@

# The tests also need the test extras (Beam, TF Hub, matplotlib, ...).
$(VENV)/.installed-test: setup.cfg pyproject.toml | $(VENV)/bin/python
	@echo "== installing keras_elmo with the test extras"
	$(PIP) install -e ".[test]"
	touch $(VENV)/.installed-demo $@

# The PyTorch backend: the CPU build of setup.cfg's torch pin first
# (tools/install_torch_cpu.sh; never PyPI's torch wheel, the multi-GB
# CUDA build), then the torch extra, which it already satisfies.
$(VENV)/.installed-torch: setup.cfg pyproject.toml tools/install_torch_cpu.sh \
    $(VENV)/.installed-test
	@echo "== installing torch's CPU build (setup.cfg's torch==X as X+cpu):" \
	    "the wheel in /opt/wheels or \$$PIP_FIND_LINKS if one fits this" \
	    "Python, else the PyTorch CPU index (download.pytorch.org/whl/cpu)," \
	    "never PyPI; then keras_elmo with the torch extra"
	bash tools/install_torch_cpu.sh $(PY)
	$(PIP) install -e ".[test,torch]"
	touch $@

demo: $(VENV)/.installed-demo
	@echo "== keras-elmo demo: embedding example sentences with the" \
	    "shipped elmo_small_en (offline)"
	TF_CPP_MIN_LOG_LEVEL=3 $(VENV)/bin/keras-elmo demo

test: $(VENV)/.installed-test
	$(call pytest_with_report,test-durations,$(XDIST) -m "not torch_backend" tests)

test-fast: $(VENV)/.installed-test
	$(call pytest_with_report,test-fast-durations,$(XDIST) \
	    -m "$(FAST_TESTS)" tests)

test-torch: $(VENV)/.installed-torch
	$(PY) -m pytest -q -m torch_backend tests/backends

# Lint needs ruff only: it runs before (and without) the test install.
$(VENV)/.installed-lint: | $(VENV)/bin/python
	$(PIP) install --quiet ruff==0.17.6
	touch $@

lint: $(VENV)/.installed-lint
	$(VENV)/bin/ruff format --check keras_elmo tests examples benchmarks tools
	$(VENV)/bin/ruff check keras_elmo tests examples benchmarks tools

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
