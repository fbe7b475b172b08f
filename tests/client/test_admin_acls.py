"""AdminClient's ACL calls (CreateAcls, DescribeAcls, DeleteAcls) against in-process brokers: round
trips of literal and prefixed ACLs, filters (ANY fields, MATCH), what a refused creation raises and
that the valid others are stored, the errors of a broker without an authorizer and of a client that
is not a super user, and v0 (which has no pattern type) never turning a prefixed ACL into a literal one."""
import pytest

from fastkafka import errors
from fastkafka.client.admin import AdminClient
from fastkafka.protocol import ApiKey
from fastkafka.security.acl import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType,
                                    ResourceType)

from support.brokers import running_broker

pytestmark = pytest.mark.timeout(60)
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
T, G = ResourceType.TOPIC, ResourceType.GROUP
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acl(rtype, name, principal, op, perm=ALLOW, pattern=LITERAL, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


@pytest.fixture
def admin(tmp_path):
    with running_broker(tmp_path, authorizer_class_name=AUTHORIZER, super_users="User:ANONYMOUS") as b:
        with AdminClient({"bootstrap.servers": b.bootstrap}) as a:
            yield a


def test_create_describe_delete_round_trip(admin):
    made = [acl(T, "orders", "User:alice", AclOperation.WRITE),
            acl(T, "ord", "User:bob", AclOperation.READ, pattern=PREFIXED),
            acl(T, "orders", "User:eve", AclOperation.ALL, perm=DENY, host="10.0.0.7"),
            acl(G, "billing", "User:bob", AclOperation.READ)]
    admin.create_acls(made)
    assert set(admin.describe_acls()) == set(made)
    assert all(isinstance(a.operation, AclOperation) for a in admin.describe_acls())
    # MATCH: every ACL that applies to the topic "orders"; ANY pattern: the exact name only
    assert set(admin.describe_acls(AclBindingFilter(T, "orders", PatternType.MATCH))) == set(made[:3])
    assert set(admin.describe_acls(AclBindingFilter(T, "ord", PatternType.ANY))) == {made[1]}
    assert set(admin.describe_acls(AclBindingFilter(permission_type=DENY))) == {made[2]}
    # two filters selecting the same ACL: it is reported once
    removed = admin.delete_acls([AclBindingFilter(principal="User:bob"), AclBindingFilter(G, "billing")])
    assert sorted(removed) == sorted([made[1], made[3]])
    assert set(admin.describe_acls()) == {made[0], made[2]}
    assert admin.delete_acls([AclBindingFilter(principal="User:nobody")]) == []
    assert admin.create_acls([]) is None and admin.delete_acls([]) == []


def test_a_refused_creation_raises_the_brokers_reason_and_the_others_are_stored(admin):
    good = acl(T, "t", "User:alice", AclOperation.READ)
    with pytest.raises(errors.InvalidRequestError, match="ACL operation Write is not valid for resource type Group"):
        admin.create_acls([good, acl(G, "g", "User:alice", AclOperation.WRITE)])
    assert admin.describe_acls() == [good]
    with pytest.raises(errors.InvalidRequestError, match="principal"):
        admin.create_acls([acl(T, "t", "alice", AclOperation.READ)])


def test_version_0_carries_only_literal_patterns(admin):
    conn = admin.cluster.any_connection()
    for api in (ApiKey.CREATE_ACLS, ApiKey.DESCRIBE_ACLS, ApiKey.DELETE_ACLS):
        conn.versions[api] = 0        # as a broker that offers only v0 would negotiate
    with pytest.raises(errors.UnsupportedVersionError, match="CreateAcls v1"):
        admin.create_acls([acl(T, "pre", "User:a", AclOperation.READ, pattern=PREFIXED)])
    with pytest.raises(errors.UnsupportedVersionError, match="DescribeAcls v1"):
        admin.describe_acls(AclBindingFilter(T, "pre", PatternType.MATCH))
    literal = acl(T, "lit", "User:a", AclOperation.READ)
    admin.create_acls([literal])
    assert admin.describe_acls() == [literal]
    assert admin.delete_acls([AclBindingFilter(T, "lit")]) == [literal]
    assert admin.describe_acls() == []


def test_without_an_authorizer_every_call_is_security_disabled(tmp_path):
    with running_broker(tmp_path) as b, AdminClient({"bootstrap.servers": b.bootstrap}) as a:
        for call in (lambda: a.describe_acls(), lambda: a.delete_acls([AclBindingFilter()]),
                     lambda: a.create_acls([acl(T, "t", "User:x", AclOperation.READ)])):
            with pytest.raises(errors.SecurityDisabledError, match="No Authorizer is configured"):
                call()


def test_a_client_that_is_not_a_super_user_is_refused(tmp_path):
    with running_broker(tmp_path, authorizer_class_name=AUTHORIZER, super_users="User:admin") as b, \
            AdminClient({"bootstrap.servers": b.bootstrap}) as a:
        for call in (lambda: a.describe_acls(), lambda: a.delete_acls([AclBindingFilter()]),
                     lambda: a.create_acls([acl(T, "t", "User:x", AclOperation.READ)])):
            with pytest.raises(errors.ClusterAuthorizationFailedError, match="Not authorized"):
                call()
