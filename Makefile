# fastkafka — the two commands a newcomer types are `make serve` and `make test`.
# Every step installs what it needs, so both work on a fresh machine.

PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: all install build test bench serve clean debian

all: build

$(VPY):
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip "setuptools>=68" wheel "Cython>=3.1,<4"

# Re-install when the declared dependencies change.
$(STAMP): pyproject.toml setup.py | $(VPY)
	$(VPY) -m pip install -q --no-build-isolation --config-settings editable_mode=compat -e '.[test,spark,connect,bench,metrics]'
	touch $(STAMP)

install: $(STAMP)

# Cython extensions are rebuilt in place whenever a .pyx/.pxd changes (setuptools skips up-to-date ones).
build: install
	$(VPY) setup.py -q build_ext --inplace -j 2

# Debian packages the suite needs (ZooKeeper, kcat, a JRE for Spark and ZooKeeper), installed when missing.
debian:
	bash ci/install-debian.sh

test: debian build
	$(VPY) -m pytest $(PYTEST_ARGS)

# Each bench/bench_*.py is a script that prints its figures as ratios against a limit measured in the
# same run; bench/RESULTS.md records them with their commands. BENCH=name runs one.
BENCH ?= *
bench: build
	@for f in bench/bench_$(BENCH).py; do echo "== $$f"; $(VPY) $$f || exit 1; done

serve: build
	$(VPY) -m fastkafka serve --override listeners=PLAINTEXT://127.0.0.1:9092 --override log.dirs=./data

clean:
	rm -rf build fastkafka/_core/*.c fastkafka/_core/*.so
