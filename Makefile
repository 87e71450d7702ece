# `make demo`: install into .venv and embed sentences.
# `make test`: install into .venv (with test extras) and run the tests.
# `make test-fast`: the same without the `large` tests (day-to-day work).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test test-fast lint clean

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

demo: $(VENV)/.installed
	TF_CPP_MIN_LOG_LEVEL=3 $(VENV)/bin/keras-elmo demo

test: $(VENV)/.installed
	$(PY) -m pytest -q tests

test-fast: $(VENV)/.installed
	$(PY) -m pytest -q -m "not large" tests

lint: $(VENV)/.installed
	$(PY) -m pip install --quiet ruff
	$(VENV)/bin/ruff format --check keras_elmo tests examples benchmarks
	$(VENV)/bin/ruff check keras_elmo tests examples benchmarks

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
