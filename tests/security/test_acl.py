"""Kafka's ACL decisions (fastkafka.security.acl): patterns, deny over allow, implied operations,
super users, the no-ACL default, filters and validation."""
import pytest

from fastkafka.security.acl import (CLUSTER_NAME, AclBinding, AclBindingFilter, AclOperation as Op,
                                    AclPermissionType as Perm, AclSnapshot, AuthorizationRules, InvalidAcl,
                                    PatternType as Pat, ResourceType as Res, parse_principal)

ALLOW, DENY = Perm.ALLOW, Perm.DENY
HOST = "10.0.0.7"


def acl(name, op, principal="User:alice", perm=ALLOW, rtype=Res.TOPIC, pattern=Pat.LITERAL, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def allowed(acls, principal, op, name, rtype=Res.TOPIC, rules=AuthorizationRules(), host=HOST):
    return rules.authorize(AclSnapshot(acls), principal, host, op, rtype, name)


def test_literal_prefixed_and_wildcard_names():
    acls = [acl("orders", Op.READ), acl("pay", Op.READ, pattern=Pat.PREFIXED), acl("*", Op.WRITE)]
    assert allowed(acls, "User:alice", Op.READ, "orders")
    assert not allowed(acls, "User:alice", Op.READ, "orders2")      # a literal is not a prefix
    assert allowed(acls, "User:alice", Op.READ, "payments")
    assert not allowed(acls, "User:alice", Op.READ, "pa")
    assert allowed(acls, "User:alice", Op.WRITE, "anything")        # the literal wildcard
    assert not allowed(acls, "User:alice", Op.WRITE, "x", rtype=Res.GROUP)   # other resource type


def test_deny_wins_over_allow_from_any_pattern():
    acls = [acl("pay", Op.READ, principal="User:*", pattern=Pat.PREFIXED),
            acl("payroll", Op.READ, principal="User:bob", perm=DENY)]
    assert allowed(acls, "User:alice", Op.READ, "payroll")
    assert not allowed(acls, "User:bob", Op.READ, "payroll")
    assert allowed(acls, "User:bob", Op.READ, "payments")
    # a deny of ALL denies every operation
    assert not allowed(acls + [acl("pay", Op.ALL, "User:bob", DENY, pattern=Pat.PREFIXED)],
                       "User:bob", Op.READ, "payments")


def test_hosts_must_match():
    acls = [acl("orders", Op.READ, host="10.0.0.1")]
    assert allowed(acls, "User:alice", Op.READ, "orders", host="10.0.0.1")
    assert not allowed(acls, "User:alice", Op.READ, "orders", host="10.0.0.2")


def test_allow_implies_describe_but_deny_implies_nothing():
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert allowed([acl("t", op)], "User:alice", Op.DESCRIBE, "t"), op
    assert not allowed([acl("t", Op.CREATE)], "User:alice", Op.DESCRIBE, "t")
    assert allowed([acl("t", Op.ALTER_CONFIGS)], "User:alice", Op.DESCRIBE_CONFIGS, "t")
    assert not allowed([acl("t", Op.DESCRIBE_CONFIGS)], "User:alice", Op.ALTER_CONFIGS, "t")
    # DENY READ does not deny DESCRIBE (Kafka: the implication applies to ALLOW only)
    assert allowed([acl("t", Op.DESCRIBE), acl("t", Op.READ, perm=DENY)], "User:alice", Op.DESCRIBE, "t")
    assert allowed([acl("t", Op.ALL)], "User:alice", Op.ALTER_CONFIGS, "t")


def test_no_acl_default_and_acls_of_others():
    open_rules = AuthorizationRules(allow_if_no_acls=True)
    assert allowed([], "User:x", Op.READ, "t", rules=open_rules)
    assert not allowed([], "User:x", Op.READ, "t")
    # the resource has ACLs (for someone else): the default no longer applies
    assert not allowed([acl("t", Op.READ)], "User:x", Op.READ, "t", rules=open_rules)
    assert allowed([acl("t", Op.READ)], "User:x", Op.READ, "other", rules=open_rules)


def test_super_users_bypass_even_a_deny():
    rules = AuthorizationRules(super_users=frozenset({"User:admin"}))
    acls = [acl("t", Op.ALL, "User:*", DENY)]
    assert allowed(acls, "User:admin", Op.WRITE, "t", rules=rules)
    assert allowed([], "User:admin", Op.ALTER, CLUSTER_NAME, rtype=Res.CLUSTER, rules=rules)
    assert not allowed(acls, "User:alice", Op.WRITE, "t", rules=rules)


def test_authorize_any_for_idempotent_producers():
    rules = AuthorizationRules()
    snap = AclSnapshot([acl("orders", Op.WRITE)])
    assert rules.authorize_any(snap, "User:alice", HOST, Op.WRITE, Res.TOPIC)
    assert not rules.authorize_any(snap, "User:bob", HOST, Op.WRITE, Res.TOPIC)
    denied = AclSnapshot([acl("orders", Op.WRITE), acl("ord", Op.WRITE, perm=DENY, pattern=Pat.PREFIXED)])
    assert not rules.authorize_any(denied, "User:alice", HOST, Op.WRITE, Res.TOPIC)
    wildcard_deny = AclSnapshot([acl("a", Op.WRITE), acl("*", Op.WRITE, perm=DENY)])
    assert not rules.authorize_any(wildcard_deny, "User:alice", HOST, Op.WRITE, Res.TOPIC)


@pytest.mark.parametrize("fields,message", [
    ((Res.ANY, "t", Pat.LITERAL, "User:a", "*", Op.READ, ALLOW), "resource type"),
    ((Res.TOPIC, "t", Pat.MATCH, "User:a", "*", Op.READ, ALLOW), "pattern type"),
    ((Res.TOPIC, "", Pat.LITERAL, "User:a", "*", Op.READ, ALLOW), "empty"),
    ((Res.CLUSTER, "c", Pat.LITERAL, "User:a", "*", Op.ALTER, ALLOW), "kafka-cluster"),
    ((Res.TOPIC, "t", Pat.LITERAL, "User:a", "*", Op.ANY, ALLOW), "operation"),
    ((Res.GROUP, "g", Pat.LITERAL, "User:a", "*", Op.WRITE, ALLOW), "not valid for resource type Group"),
    ((Res.TOPIC, "t", Pat.LITERAL, "User:a", "*", Op.READ, Perm.ANY), "permission"),
    ((Res.TOPIC, "t", Pat.LITERAL, "alice", "*", Op.READ, ALLOW), "principal"),
    ((Res.TOPIC, "t", Pat.LITERAL, "User:a", "*", 99, ALLOW), "99"),
])
def test_invalid_acls_are_refused(fields, message):
    with pytest.raises(InvalidAcl, match=message):
        AclBinding.of(*fields)


def test_filters():
    lit, pre, wild = acl("orders", Op.READ), acl("ord", Op.WRITE, pattern=Pat.PREFIXED), acl("*", Op.READ)
    group = acl("g", Op.READ, rtype=Res.GROUP)
    every = [lit, pre, wild, group]

    def pick(**kw):
        return [a for a in every if AclBindingFilter(**kw).matches(a)]

    assert pick() == every
    assert pick(resource_type=Res.TOPIC, resource_name="orders", pattern_type=Pat.MATCH) == [lit, pre, wild]
    assert pick(resource_type=Res.TOPIC, resource_name="orders", pattern_type=Pat.ANY) == [lit]
    assert pick(pattern_type=Pat.PREFIXED) == [pre]
    assert pick(operation=Op.WRITE) == [pre]
    assert pick(resource_type=Res.GROUP, principal="User:alice", host="*", permission_type=ALLOW) == [group]
    assert pick(principal="User:bob") == []
    with pytest.raises(InvalidAcl):
        AclBindingFilter.of(Res.UNKNOWN, None, Pat.ANY, None, None, Op.ANY, Perm.ANY)


def test_names_round_trip_and_parse_leniently():
    assert Op.parse("ClusterAction") is Op.parse("CLUSTER_ACTION") is Op.CLUSTER_ACTION
    assert Res.TRANSACTIONAL_ID.kafka_name == "TransactionalId"
    assert Res.parse("TransactionalId") is Res.TRANSACTIONAL_ID
    assert Op.IDEMPOTENT_WRITE.kafka_name == "IdempotentWrite" and Pat.PREFIXED.kafka_name == "PREFIXED"
    with pytest.raises(ValueError, match="one of"):
        Op.parse("Fly")
    assert parse_principal("User:CN=a,O=b") == ("User", "CN=a,O=b")
    with pytest.raises(InvalidAcl):
        parse_principal("User:")
