"""Administration: topics, partitions, configs, offsets, consumer groups, ACLs and transactions, over the wire.

Each method is one Kafka request to the right broker (the controller for topic changes, the
group coordinator for group questions, partition leaders for offsets) and raises the Kafka
error the broker answered with, so the command-line tools can print it as one line.

Example::

    admin = AdminClient({"bootstrap.servers": "127.0.0.1:9092"})
    admin.create_topic("orders", num_partitions=3, configs={"retention.ms": "60000"})
    admin.describe_topics(["orders"])["orders"].partitions[0].leader
    admin.list_offsets("orders", -1)          # {0: 0, 1: 0, 2: 0}  (latest)
    admin.delete_topics(["orders"])
    admin.close()
"""
from __future__ import annotations

import secrets

from fastkafka import errors
from fastkafka.protocol import ApiKey
from fastkafka.security import ScramMechanism, salted_password
from fastkafka.security.acl import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType,
                                    ResourceType)

from .admin_transactions import TransactionAdmin
from .config import ClientConfig
from .metadata import BrokerInfo, Cluster, TopicInfo, retry_call

__all__ = ["AdminClient", "TOPIC_RESOURCE", "BROKER_RESOURCE", "partitions_by_topic"]

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


def partitions_by_topic(tps) -> dict[str, list[int]]:
    """``(topic, partition)`` pairs as ``{topic: [partitions]}``, in the pairs' order: the shape of
    the admin requests' topic lists (and of :meth:`AdminClient.committed_offsets`' ``topics``).

    >>> partitions_by_topic([("a", 1), ("b", 0), ("a", 0)])
    {'a': [1, 0], 'b': [0]}
    """
    out: dict[str, list[int]] = {}
    for t, p in tps:
        out.setdefault(t, []).append(p)
    return out
SET_OP, DELETE_OP = 0, 1      # IncrementalAlterConfigs operations


def _partition_errors(results) -> dict[tuple[str, int], errors.KafkaError | None]:
    """``{(topic, partition): None or the error}`` of ``(topic, partition, result)`` triples
    whose results carry ``error_code`` and ``error_message``."""
    return {(t, p): errors.for_code(r.error_code)(r.error_message or "") if r.error_code else None
            for t, p, r in results}


def _acl_code(kind, code: int):
    """A code a newer broker may send that we do not know reads as UNKNOWN, as in Kafka's client."""
    try:
        return kind(code)
    except ValueError:
        return kind.UNKNOWN


def _acl_binding(pattern, entry) -> AclBinding:
    """An ACL from a response: ``pattern`` has resource_type/resource_name/pattern_type, ``entry``
    principal/host/operation/permission_type (one object in DeleteAcls, two in DescribeAcls)."""
    return AclBinding(_acl_code(ResourceType, pattern.resource_type), pattern.resource_name,
                      _acl_code(PatternType, pattern.pattern_type), entry.principal, entry.host,
                      _acl_code(AclOperation, entry.operation), _acl_code(AclPermissionType, entry.permission_type))


def _acl_filter_fields(f: AclBindingFilter) -> dict:
    return {"resource_type_filter": f.resource_type, "resource_name_filter": f.resource_name,
            "pattern_type_filter": f.pattern_type, "principal_filter": f.principal, "host_filter": f.host,
            "operation": f.operation, "permission_type": f.permission_type}


def _require_pattern_types(conn, api_key: int, pattern_types, v0_carries) -> None:
    """v0 of the ACL APIs has no pattern type field (every ACL is LITERAL): a PREFIXED pattern sent
    at v0 would silently become a literal one, so it needs v1 (UnsupportedVersionError if absent)."""
    if any(p not in v0_carries for p in pattern_types):
        conn.version(api_key, at_least=1)


class AdminClient(TransactionAdmin):
    """Topic and group administration for the cluster in ``config`` (transactions: :mod:`.admin_transactions`)."""

    def __init__(self, config: dict | ClientConfig | None = None, **kw):
        self.config = config if isinstance(config, ClientConfig) else ClientConfig(config, **kw)
        self.cluster = Cluster(self.config)
        self.timeout_ms = self.config["request.timeout.ms"]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.cluster.close()

    def _controller(self):
        self.cluster.refresh([])
        node = self.cluster.controller_id
        return self.cluster.connection(node) if node >= 0 else self.cluster.any_connection()

    # -- topics ---------------------------------------------------------------------------

    def create_topic(self, name: str, num_partitions: int = 1, replication_factor: int = 1,
                     configs: dict[str, str] | None = None, validate_only: bool = False) -> None:
        """Create ``name``; TopicAlreadyExistsError if it exists."""
        resp = self._controller().request(ApiKey.CREATE_TOPICS, {
            "topics": [{"name": name, "num_partitions": num_partitions,
                        "replication_factor": replication_factor, "assignments": [],
                        "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).items()]}],
            "timeout_ms": self.timeout_ms, "validate_only": validate_only})
        for t in resp.topics:
            errors.raise_for(t.error_code, f"create topic {t.name!r}", getattr(t, "error_message", None))
        self.cluster.invalidate()

    def delete_topics(self, names: list[str]) -> None:
        resp = self._controller().request(ApiKey.DELETE_TOPICS, {
            "topic_names": list(names), "timeout_ms": self.timeout_ms})
        for t in resp.responses:
            errors.raise_for(t.error_code, f"delete topic {t.name!r}")
        self.cluster.invalidate()

    def create_partitions(self, name: str, total_count: int) -> None:
        """Grow ``name`` to ``total_count`` partitions."""
        resp = self._controller().request(ApiKey.CREATE_PARTITIONS, {
            "topics": [{"name": name, "count": total_count, "assignments": None}],
            "timeout_ms": self.timeout_ms, "validate_only": False})
        for r in resp.results:
            errors.raise_for(r.error_code, f"add partitions to {r.name!r}", r.error_message)
        self.cluster.invalidate()

    def list_topics(self, include_internal: bool = False) -> list[str]:
        return sorted(n for n, t in self.cluster.all_topics().items()
                      if include_internal or not t.is_internal)

    def describe_topics(self, names: list[str] | None = None) -> dict[str, TopicInfo]:
        """Metadata of ``names`` (None: all); an unknown topic raises its error."""
        if names is None:
            return self.cluster.all_topics()
        self.cluster.refresh(list(names), allow_auto_create=False)
        out = {}
        for n in names:
            t = self.cluster.topics[n]
            errors.raise_for(t.error_code, f"topic {n!r}")
            out[n] = t
        return out

    def describe_configs(self, resource: str, resource_type: int = TOPIC_RESOURCE) -> dict[str, tuple]:
        """``{name: (value, is_default, read_only)}`` of a topic (or broker id as a string; ""
        for the cluster-wide dynamic broker configs)."""
        conn = self._configs_connection(resource, resource_type)
        resp = conn.request(ApiKey.DESCRIBE_CONFIGS, {
            "resources": [{"resource_type": resource_type, "resource_name": resource,
                           "configuration_keys": None}], "include_synonyms": False})
        r = resp.results[0]
        errors.raise_for(r.error_code, f"describe configs of {resource!r}", r.error_message)
        version = conn.versions[ApiKey.DESCRIBE_CONFIGS]
        return {c.name: (c.value, c.is_default if version == 0 else c.config_source == 5,
                         c.read_only) for c in r.configs}

    def alter_configs(self, resource: str, set_: dict[str, str] | None = None,
                      delete: list[str] | None = None, resource_type: int = TOPIC_RESOURCE,
                      validate_only: bool = False) -> None:
        """IncrementalAlterConfigs: set and delete overrides of a topic, or the dynamic configs of
        a broker (its id as a string; "" for the whole cluster), at run time."""
        ops = [{"name": k, "config_operation": SET_OP, "value": v} for k, v in (set_ or {}).items()]
        ops += [{"name": k, "config_operation": DELETE_OP, "value": None} for k in delete or ()]
        resp = self._configs_connection(resource, resource_type).request(ApiKey.INCREMENTAL_ALTER_CONFIGS, {
            "resources": [{"resource_type": resource_type, "resource_name": resource, "configs": ops}],
            "validate_only": validate_only})
        r = resp.responses[0]
        errors.raise_for(r.error_code, f"alter configs of {resource!r}", r.error_message)

    def _configs_connection(self, resource: str, resource_type: int):
        # a broker's own configs are asked of that broker, as Kafka's admin clients do
        if resource_type == BROKER_RESOURCE and resource.isdigit():
            return self.cluster.connection(int(resource))
        return self.cluster.any_connection()

    # -- SCRAM users (KIP-554) ------------------------------------------------------------

    def describe_user_scram_credentials(self, users: list[str] | None = None) -> dict[str, dict[str, int]]:
        """``{user: {mechanism: iterations}}`` of ``users`` (None: every user with credentials);
        a named user without any raises ResourceNotFoundError."""
        resp = self.cluster.any_connection().request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, {
            "users": None if users is None else [{"name": u} for u in users]})
        errors.raise_for(resp.error_code, "describe SCRAM credentials", resp.error_message)
        out = {}
        for r in resp.results:
            errors.raise_for(r.error_code, f"SCRAM credentials of {r.user!r}", r.error_message)
            out[r.user] = {ScramMechanism.for_type(i.mechanism).name: i.iterations
                           for i in r.credential_infos}
        return out

    def alter_user_scram_credentials(self, upsert: dict[tuple[str, str], tuple[str, int]] | None = None,
                                     delete: list[tuple[str, str]] | None = None) -> None:
        """Set ``{(user, mechanism): (password, iterations)}`` and remove ``[(user, mechanism)]``.
        The password is salted here (a fresh random salt); only the salted form is sent."""
        upsertions = []
        for (user, mechanism), (password, iterations) in (upsert or {}).items():
            salt = secrets.token_bytes(24)   # what Kafka's own tools use
            upsertions.append({"name": user, "mechanism": ScramMechanism.for_name(mechanism).type_id,
                               "iterations": iterations, "salt": salt,
                               "salted_password": salted_password(mechanism, password, salt, iterations)})
        resp = self.cluster.any_connection().request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, {
            "deletions": [{"name": u, "mechanism": ScramMechanism.for_name(m).type_id} for u, m in delete or ()],
            "upsertions": upsertions})
        for r in resp.results:
            errors.raise_for(r.error_code, f"alter SCRAM credentials of {r.user!r}", r.error_message)

    # -- client quotas (KIP-546) -----------------------------------------------------------

    def describe_client_quotas(self, match: dict | None = None, strict: bool = False) -> dict[tuple, dict[str, float]]:
        """``{entity: {quota config: value}}`` of the quota entities ``match`` selects, an entity
        being ``((entity_type, name), ...)`` with the user part first and None naming the default.
        ``match`` maps an entity type (``"user"``, ``"client-id"``) to a name, to None (the
        default entity) or to ``...`` (any name); ``strict`` leaves out entities with other parts.

        Example::

            admin.describe_client_quotas({"user": "alice"})      # alice's, and alice's per client
            # {(('user', 'alice'),): {'producer_byte_rate': 1048576.0}}
            admin.describe_client_quotas({"client-id": ...}, strict=True)   # every client id's
        """
        components = [{"entity_type": t, "match_type": 2 if m is ... else (1 if m is None else 0),
                       "match": None if m is ... else m} for t, m in (match or {}).items()]
        resp = self.cluster.any_connection().request(ApiKey.DESCRIBE_CLIENT_QUOTAS,
                                                     {"components": components, "strict": strict})
        errors.raise_for(resp.error_code, "describe client quotas", resp.error_message)
        return {tuple((e.entity_type, e.entity_name) for e in entry.entity):
                {v.key: v.value for v in entry.values} for entry in resp.entries or ()}

    def alter_client_quotas(self, entity: dict, set_: dict[str, float] | None = None,
                            remove: list[str] | None = None, validate_only: bool = False) -> None:
        """Set and remove quota configs of one entity, ``{"user": "alice", "client-id": None}``
        (None: the default user or client), as AlterClientQuotas does; a refused change raises its
        error (InvalidRequestError with the broker's reason).

        Example::

            admin.alter_client_quotas({"user": "alice"}, {"producer_byte_rate": 1048576})
            admin.alter_client_quotas({"client-id": None}, remove=["consumer_byte_rate"])
        """
        ops = [{"key": k, "value": float(v), "remove": False} for k, v in (set_ or {}).items()]
        ops += [{"key": k, "value": 0.0, "remove": True} for k in remove or ()]
        parts = [{"entity_type": t, "entity_name": n} for t, n in entity.items()]
        resp = self.cluster.any_connection().request(ApiKey.ALTER_CLIENT_QUOTAS, {
            "entries": [{"entity": parts, "ops": ops}], "validate_only": validate_only})
        for r in resp.entries:
            errors.raise_for(r.error_code, f"alter client quotas of {entity}", r.error_message)

    def describe_log_dirs(self, topics: list[str] | None = None) -> dict[int, list]:
        """DescribeLogDirs of every live broker: ``{broker id: [result per log dir]}`` (each with
        ``log_dir``, ``error_code``, ``topics[].partitions[].partition_size`` ...)."""
        self.cluster.refresh(list(topics or ()), allow_auto_create=False)
        body = {"topics": None if topics is None else [
            {"topic": t, "partitions": sorted(self.cluster.topics[t].partitions)} for t in topics
            if t in self.cluster.topics and not self.cluster.topics[t].error_code]}
        return {b: self.cluster.connection(b).request(ApiKey.DESCRIBE_LOG_DIRS, body).results
                for b in sorted(self.cluster.brokers)}

    # -- ACLs (the broker needs an authorizer, else SecurityDisabledError) --------------------

    def create_acls(self, bindings) -> None:
        """Store each of ``bindings`` (:class:`~fastkafka.security.acl.AclBinding`, CreateAcls).
        The first refused one raises its error: InvalidRequestError with the broker's reason (an
        operation the resource type does not have, a bad principal), ClusterAuthorizationFailedError
        unless the client may ALTER the cluster. The valid others are stored all the same, as in Kafka.

        Example::

            admin.create_acls([AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL,
                                          "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)])
        """
        bindings = list(bindings)
        if not bindings:
            return
        conn = self.cluster.any_connection()
        _require_pattern_types(conn, ApiKey.CREATE_ACLS, {b.pattern_type for b in bindings}, (PatternType.LITERAL,))
        resp = conn.request(ApiKey.CREATE_ACLS, {"creations": [
            {"resource_type": b.resource_type, "resource_name": b.resource_name,
             "resource_pattern_type": b.pattern_type, "principal": b.principal, "host": b.host,
             "operation": b.operation, "permission_type": b.permission_type} for b in bindings]})
        for b, r in zip(bindings, resp.results):
            errors.raise_for(r.error_code, f"create ACL {b}", r.error_message)

    def describe_acls(self, acl_filter: AclBindingFilter = AclBindingFilter()) -> list[AclBinding]:
        """Every ACL ``acl_filter`` selects (DescribeAcls; the default selects all). Needs DESCRIBE
        on the cluster.

        Example::

            admin.describe_acls(AclBindingFilter(ResourceType.TOPIC, "orders", PatternType.MATCH))
        """
        conn = self.cluster.any_connection()
        # v0 knows only literal ACLs, so ANY selects exactly what LITERAL does there
        _require_pattern_types(conn, ApiKey.DESCRIBE_ACLS, (acl_filter.pattern_type,),
                               (PatternType.LITERAL, PatternType.ANY))
        resp = conn.request(ApiKey.DESCRIBE_ACLS, _acl_filter_fields(acl_filter))
        errors.raise_for(resp.error_code, "describe ACLs", resp.error_message)
        return [_acl_binding(r, a) for r in resp.resources for a in r.acls]

    def delete_acls(self, filters) -> list[AclBinding]:
        """Remove every ACL one of ``filters`` (:class:`~fastkafka.security.acl.AclBindingFilter`)
        selects (DeleteAcls) and return the removed ones, each once. Needs ALTER on the cluster.

        Example::

            admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, "orders", principal="User:alice")])
        """
        filters = list(filters)
        if not filters:
            return []
        conn = self.cluster.any_connection()
        _require_pattern_types(conn, ApiKey.DELETE_ACLS, {f.pattern_type for f in filters},
                               (PatternType.LITERAL, PatternType.ANY))
        resp = conn.request(ApiKey.DELETE_ACLS, {"filters": [_acl_filter_fields(f) for f in filters]})
        removed: dict[AclBinding, None] = {}
        for r in resp.filter_results:
            errors.raise_for(r.error_code, "delete ACLs", r.error_message)
            for m in r.matching_acls:
                errors.raise_for(m.error_code, "delete ACLs", m.error_message)
                removed[_acl_binding(m, m)] = None
        return list(removed)

    # -- leadership and reassignment (answered by the controller) --------------------------

    def describe_cluster(self) -> dict[int, BrokerInfo]:
        """The live brokers, ``{id: BrokerInfo(node_id, host, port, rack)}`` in id order.

        Example::

            {b: info.rack for b, info in admin.describe_cluster().items()}   # {1: 'a', 2: 'b', 3: None}
        """
        self.cluster.refresh([])
        return dict(sorted(self.cluster.brokers.items()))

    def _at_controller(self, api_key: int, body: dict, not_controller, at_least: int = 0):
        """``api_key``'s answer from the controller. Metadata may name a broker that has just
        stopped being it; that broker answers NOT_CONTROLLER (``not_controller(resp)`` says so)
        and the request goes again to the controller fresh Metadata names, as in Kafka's admin
        client, up to ``retries`` times."""
        def once():
            conn = self._controller()
            resp = conn.request(api_key, body, conn.version(api_key, at_least))
            if not_controller(resp):
                raise errors.NotControllerError(f"broker {conn.node_id} is not the controller")
            return resp
        return retry_call(once, self.config)

    def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None = None
                      ) -> dict[tuple[str, int], errors.KafkaError | None]:
        """ElectLeaders of type 0 (PREFERRED: the first replica leads again) or 1 (UNCLEAN: a
        partition without a live leader gets one from outside its ISR) for ``partitions``
        (None: every partition). ``{(topic, partition): None (elected) or the error}``, e.g.
        ElectionNotNeededError when the right replica already leads (with None, such partitions
        are left out, as Kafka's broker does), PreferredLeaderNotAvailableError,
        UnknownTopicOrPartitionError. Needs ALTER on the cluster (else the call raises
        ClusterAuthorizationFailedError).

        Example::

            admin.elect_leaders(0, [("orders", 0), ("orders", 1)])
            # {('orders', 0): None, ('orders', 1): ElectionNotNeededError(...)}
        """
        wanted = None if partitions is None else list(dict.fromkeys(partitions))
        by_topic = partitions_by_topic(wanted or ())
        body = {"election_type": election_type, "timeout_ms": self.timeout_ms, "topic_partitions": None
                if wanted is None else [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]}

        def refused(resp):
            return getattr(resp, "error_code", 0) == errors.NotControllerError.code or any(
                p.error_code == errors.NotControllerError.code
                for r in resp.replica_election_results for p in r.partition_result)
        # v0 has no election type: every election there is a preferred one
        resp = self._at_controller(ApiKey.ELECT_LEADERS, body, refused, at_least=1 if election_type else 0)
        errors.raise_for(getattr(resp, "error_code", 0), "elect leaders")
        self.cluster.invalidate()
        return _partition_errors((r.topic, p.partition_id, p) for r in resp.replica_election_results
                                 for p in r.partition_result)

    def alter_partition_reassignments(self, reassignments: dict[tuple[str, int], list[int] | None]
                                      ) -> dict[tuple[str, int], errors.KafkaError | None]:
        """Start moving each ``(topic, partition)`` to its new replica list (the first one the
        preferred leader), or cancel its reassignment under way (None), as KIP-455's
        AlterPartitionReassignments. ``{(topic, partition): None (started / cancelled) or the
        error}``: InvalidReplicaAssignmentError (a broker not alive, a repeated one),
        NoReassignmentInProgressError (nothing to cancel), UnknownTopicOrPartitionError. The
        data moves afterwards: :meth:`list_partition_reassignments` shows what is still under
        way. Needs ALTER on the cluster.

        Example::

            admin.alter_partition_reassignments({("orders", 0): [2, 3], ("orders", 1): None})
            # {('orders', 0): None, ('orders', 1): NoReassignmentInProgressError(...)}
        """
        by_topic: dict[str, list] = {}
        for (t, p), replicas in reassignments.items():
            by_topic.setdefault(t, []).append({"partition_index": p,
                                               "replicas": None if replicas is None else list(replicas)})
        body = {"timeout_ms": self.timeout_ms, "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
        resp = self._at_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body,
                                   lambda r: r.error_code == errors.NotControllerError.code)
        errors.raise_for(resp.error_code, "alter partition reassignments", resp.error_message)
        self.cluster.invalidate()
        return _partition_errors((r.name, p.partition_index, p) for r in resp.responses for p in r.partitions)

    def list_partition_reassignments(self, partitions: list[tuple[str, int]] | None = None
                                     ) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
        """The reassignments under way (of ``partitions``; None: all), as ``{(topic, partition):
        (replicas, adding, removing)}``: ``replicas`` is every replica the partition has while it
        moves (the target ones first), ``adding`` those still catching up, ``removing`` those
        that go once they have. Needs DESCRIBE on the cluster.

        Example::

            admin.list_partition_reassignments()
            # {('orders', 0): ([2, 3, 1], [3], [1])}
        """
        by_topic = partitions_by_topic(partitions or ())
        body = {"timeout_ms": self.timeout_ms, "topics": None if partitions is None else [
            {"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]}
        resp = self._at_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS, body,
                                   lambda r: r.error_code == errors.NotControllerError.code)
        errors.raise_for(resp.error_code, "list partition reassignments", resp.error_message)
        return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
                for t in resp.topics for p in t.partitions}

    # -- offsets --------------------------------------------------------------------------

    def partitions(self, topic: str) -> list[int]:
        """The sorted partition ids of ``topic``. Like Kafka's admin client this never creates
        the topic (Metadata with allow_auto_topic_creation=False): a topic that does not exist
        raises UnknownTopicOrPartitionError at once."""
        return sorted(self.describe_topics([topic])[topic].partitions)

    def list_offsets(self, topic: str, timestamp: int) -> dict[int, int]:
        """Per partition, the offset for ``timestamp`` (-1 latest, -2 earliest, else the
        first offset with a timestamp >= it; -1 if none). An unknown topic raises
        UnknownTopicOrPartitionError and is not created."""
        out = {}
        by_leader: dict[int, list[int]] = {}
        for p in self.partitions(topic):
            by_leader.setdefault(self.cluster.leader_for(topic, p), []).append(p)
        for node, parts in by_leader.items():
            conn = self.cluster.connection(node)
            resp = conn.request(ApiKey.LIST_OFFSETS, {
                "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                    {"partition_index": p, "timestamp": timestamp} for p in parts]}]},
                conn.version(ApiKey.LIST_OFFSETS, 1))
            for t in resp.topics:
                for p in t.partitions:
                    errors.raise_for(p.error_code, f"list offsets of {topic}-{p.partition_index}")
                    out[p.partition_index] = p.offset
        return dict(sorted(out.items()))

    # -- groups (need the broker's group coordinator) --------------------------------------

    def coordinator(self, group: str):
        """The connection to ``group``'s coordinator."""
        conn = self.cluster.any_connection()
        resp = conn.request(ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0},
                            conn.version(ApiKey.FIND_COORDINATOR))
        errors.raise_for(resp.error_code, f"find coordinator of group {group!r}",
               getattr(resp, "error_message", None))
        return self.cluster.connection(resp.node_id)

    def list_groups(self) -> list[tuple[str, str]]:
        """``[(group_id, protocol_type)]`` across every broker."""
        self.cluster.refresh([])
        out = []
        for node in sorted(self.cluster.brokers):
            resp = self.cluster.connection(node).request(ApiKey.LIST_GROUPS, {})
            errors.raise_for(resp.error_code, "list groups")
            out += [(g.group_id, g.protocol_type) for g in resp.groups]
        return sorted(out)

    def describe_group(self, group: str):
        """The DescribeGroups answer for ``group`` (state, protocol, members)."""
        resp = self.coordinator(group).request(ApiKey.DESCRIBE_GROUPS, {
            "groups": [group], "include_authorized_operations": False})
        g = resp.groups[0]
        errors.raise_for(g.error_code, f"describe group {group!r}")
        return g

    def committed_offsets(self, group: str, topics: dict[str, list[int]] | None = None
                          ) -> dict[tuple[str, int], int]:
        """``{(topic, partition): committed offset}`` of ``group`` (None: every topic)."""
        conn = self.coordinator(group)
        resp = conn.request(ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None if topics is None
                            else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]})
        errors.raise_for(getattr(resp, "error_code", 0), f"fetch offsets of group {group!r}")
        out = {}
        for t in resp.topics:
            for p in t.partitions:
                errors.raise_for(p.error_code, f"offset of {t.name}-{p.partition_index} in {group!r}")
                if p.committed_offset >= 0:
                    out[t.name, p.partition_index] = p.committed_offset
        return out

    def commit_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        """Set ``group``'s committed offsets (only while the group has no active members)."""
        topics: dict[str, list] = {}
        for (t, p), off in offsets.items():
            topics.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                             "committed_metadata": ""})
        resp = self.coordinator(group).request(ApiKey.OFFSET_COMMIT, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
        for t in resp.topics:
            for p in t.partitions:
                errors.raise_for(p.error_code, f"commit {t.name}-{p.partition_index} for {group!r}")
