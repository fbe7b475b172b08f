"""What tests in more than one directory share; ``pythonpath = ["tests"]`` (pyproject.toml) makes it
importable as ``support`` without a ``sys.path`` edit::

    from support.brokers import running_broker      # an in-process broker (tests/conftest.py's fixtures use it)

* ``brokers``: in-process brokers, ``fastkafka serve`` subprocesses, free ports.
* ``raw_client``: one request at a time over a socket, any API version (``RawClient``).
* ``rdkafka_helpers``: topics, reads and writes through confluent-kafka (librdkafka).
* ``certs``: a CA and signed certificates made with openssl.
* ``zk``: a real ZooKeeper (standalone or an ensemble of 3); a module importing it is marked ``zk``
  (tests/test_markers.py checks).
* ``harness``: ``fastkafka serve`` brokers joined through ZooKeeper (``Cluster``, ``BrokerProc``).
* ``ctp``, ``txn_worker``: the consume-transform-produce worker a test kills and restarts.

Helpers that one directory alone uses stay beside its tests (``mirror/mirror_support.py``,
``spark/cluster_support.py``, ``clients/group_members.py``, ``cluster/netns.py``, ``protocol/samples.py``).
"""
