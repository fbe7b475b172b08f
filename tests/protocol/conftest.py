import warnings

# kafka-python loads its message definitions with a deprecated importlib.resources call.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"kafka\.protocol")
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"importlib\.resources")


def pytest_configure(config):
    config.addinivalue_line("filterwarnings",
                            r"ignore:.*is deprecated. Use files\(\) instead:DeprecationWarning")
