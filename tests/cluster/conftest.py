import pytest

from support.harness import Cluster
from support.zk import Ensemble, require_java


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory):
    """One standalone ZooKeeper per test module; each test gets its own chroot in it."""
    require_java()
    with Ensemble(tmp_path_factory.mktemp("zk"), size=1) as zk:
        yield zk


@pytest.fixture
def cluster(ensemble, tmp_path, request):
    """Three brokers (ids 1-3) in a chroot named after the test."""
    with Cluster(tmp_path, f"{ensemble.connect}/{request.node.name}", 3) as c:
        yield c
