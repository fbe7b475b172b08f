"""``fastkafka acls`` behaves like Kafka's ``kafka-acls.sh`` against a broker running Kafka's ACL
authorizer: add / list / remove round trips for literal and prefixed patterns, the --producer and
--consumer roles, listing by principal and by resource (``match``), mistakes reported in one line
with exit status 1 (the broker's INVALID_REQUEST reason for an operation the resource type does not
have), SECURITY_DISABLED from a broker without an authorizer, CLUSTER_AUTHORIZATION_FAILED for a
principal that is not a super user, and a --remove that never waits for an answer nobody can give.
What the tool stored is read back with confluent-kafka's admin client."""
import os
import pty
import subprocess
import sys

import pytest
from confluent_kafka.admin import AclBindingFilter as CkFilter
from confluent_kafka.admin import AclOperation as CkOp
from confluent_kafka.admin import AclPermissionType as CkPerm
from confluent_kafka.admin import AdminClient as CkAdmin
from confluent_kafka.admin import ResourcePatternType as CkPattern
from confluent_kafka.admin import ResourceType as CkType

from fastkafka.cli import acls
from fastkafka.config import KafkaConfig
from fastkafka.server.broker import Broker

from support.brokers import running_broker

pytestmark = [pytest.mark.clients, pytest.mark.timeout(120)]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory):
    # the tests' plaintext client is User:ANONYMOUS: it administers the ACLs
    with running_broker(tmp_path_factory.mktemp("acl"), authorizer_class_name=AUTHORIZER,
                        super_users="User:ANONYMOUS") as b:
        yield b


def tool(broker, capsys, *args):
    rc = acls.main(["-b", broker.bootstrap, *args])
    out, err = capsys.readouterr()
    return rc, out, err


def stored(broker, name=None, pattern=CkPattern.ANY):
    """{(type, name, pattern, principal, host, operation, permission)} as confluent-kafka reads them."""
    admin = CkAdmin({"bootstrap.servers": broker.bootstrap})
    got = admin.describe_acls(CkFilter(CkType.ANY, name, pattern, None, None, CkOp.ANY, CkPerm.ANY)).result(15)
    return {(b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name,
             b.permission_type.name) for b in got}


def test_add_list_remove_literal(acl_broker, capsys):
    rc, out, err = tool(acl_broker, capsys, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                        "--operation", "Write", "--topic", "lit-orders")
    assert rc == 0, err
    assert out.startswith("Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=lit-orders, "
                          "patternType=LITERAL)`:\n"
                          "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
                          "\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n")
    assert "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=lit-orders" in out
    assert stored(acl_broker, "lit-orders") == {
        ("TOPIC", "lit-orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "lit-orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW")}
    # a deny from one host, next to the allows
    assert tool(acl_broker, capsys, "--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.7",
                "--topic", "lit-orders")[0] == 0
    rc, out, _ = tool(acl_broker, capsys, "--list", "--topic", "lit-orders")
    assert rc == 0 and out.count("Current ACLs for resource") == 1
    assert "\t(principal=User:mallory, host=10.0.0.7, operation=ALL, permissionType=DENY)" in out
    # remove exactly one entry, then everything left on the resource
    assert tool(acl_broker, capsys, "--remove", "--force", "--allow-principal", "User:alice",
                "--operation", "Read", "--topic", "lit-orders")[0] == 0
    assert stored(acl_broker, "lit-orders") == {
        ("TOPIC", "lit-orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
        ("TOPIC", "lit-orders", "LITERAL", "User:mallory", "10.0.0.7", "ALL", "DENY")}
    rc, out, _ = tool(acl_broker, capsys, "--remove", "--force", "--topic", "lit-orders")
    assert rc == 0 and out == ""
    assert stored(acl_broker, "lit-orders") == set()


def test_add_list_remove_prefixed(acl_broker, capsys):
    assert tool(acl_broker, capsys, "--add", "--allow-principal", "User:bob", "--operation", "Read",
                "--topic", "pay-", "--resource-pattern-type", "prefixed")[0] == 0
    assert stored(acl_broker, "pay-") == {("TOPIC", "pay-", "PREFIXED", "User:bob", "*", "READ", "ALLOW")}
    # the literal filter does not select it; any (same name) and match (applies to pay-eu) do
    assert tool(acl_broker, capsys, "--list", "--topic", "pay-")[1] == ""
    for args in (["--topic", "pay-", "--resource-pattern-type", "any"],
                 ["--topic", "pay-eu", "--resource-pattern-type", "match"]):
        rc, out, _ = tool(acl_broker, capsys, "--list", *args)
        assert rc == 0
        assert out.startswith("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=pay-, "
                              "patternType=PREFIXED)`:\n\t(principal=User:bob, host=*, operation=READ, "
                              "permissionType=ALLOW)\n"), out
    # removing as literal leaves the prefixed ACL; as prefixed removes it
    assert tool(acl_broker, capsys, "--remove", "--force", "--topic", "pay-")[0] == 0
    assert len(stored(acl_broker, "pay-")) == 1
    assert tool(acl_broker, capsys, "--remove", "--force", "--topic", "pay-",
                "--resource-pattern-type", "prefixed")[0] == 0
    assert stored(acl_broker, "pay-") == set()


def test_producer_and_consumer_roles(acl_broker, capsys):
    assert tool(acl_broker, capsys, "--add", "--producer", "--idempotent", "--allow-principal", "User:prod",
                "--topic", "role-t", "--transactional-id", "role-tx")[0] == 0
    assert tool(acl_broker, capsys, "--add", "--consumer", "--allow-principal", "User:cons",
                "--topic", "role-t", "--group", "role-g")[0] == 0
    got = {a for a in stored(acl_broker) if a[3] in ("User:prod", "User:cons")}
    assert got == {
        ("TOPIC", "role-t", "LITERAL", "User:prod", "*", "WRITE", "ALLOW"),
        ("TOPIC", "role-t", "LITERAL", "User:prod", "*", "DESCRIBE", "ALLOW"),
        ("TOPIC", "role-t", "LITERAL", "User:prod", "*", "CREATE", "ALLOW"),
        ("TRANSACTIONAL_ID", "role-tx", "LITERAL", "User:prod", "*", "WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", "role-tx", "LITERAL", "User:prod", "*", "DESCRIBE", "ALLOW"),
        ("BROKER", "kafka-cluster", "LITERAL", "User:prod", "*", "IDEMPOTENT_WRITE", "ALLOW"),
        ("TOPIC", "role-t", "LITERAL", "User:cons", "*", "READ", "ALLOW"),
        ("TOPIC", "role-t", "LITERAL", "User:cons", "*", "DESCRIBE", "ALLOW"),
        ("GROUP", "role-g", "LITERAL", "User:cons", "*", "READ", "ALLOW")}
    # the same options with --remove take exactly those away again
    assert tool(acl_broker, capsys, "--remove", "--force", "--consumer", "--allow-principal", "User:cons",
                "--topic", "role-t", "--group", "role-g")[0] == 0
    assert tool(acl_broker, capsys, "--remove", "--force", "--producer", "--idempotent",
                "--allow-principal", "User:prod", "--topic", "role-t", "--transactional-id", "role-tx")[0] == 0
    assert {a for a in stored(acl_broker) if a[3] in ("User:prod", "User:cons")} == set()


def test_delegation_token_and_user_principal_resources(acl_broker, capsys):
    """--delegation-token and --user-principal name Kafka's DELEGATION_TOKEN and USER resources
    (kafka-python's admin reads them back: confluent-kafka has no such resource types)."""
    from kafka import KafkaAdminClient
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ResourcePatternFilter
    from kafka.admin import ACLResourcePatternType as KPattern
    from kafka.admin import ResourceType as KType
    rc, out, err = tool(acl_broker, capsys, "--add", "--allow-principal", "User:ops", "--operation", "CreateTokens",
                        "--operation", "DescribeTokens", "--user-principal", "User:etl")
    assert rc == 0, err
    assert out.startswith("Adding ACLs for resource `ResourcePattern(resourceType=USER, name=User:etl, "
                          "patternType=LITERAL)`:\n")
    assert tool(acl_broker, capsys, "--add", "--allow-principal", "User:audit", "--operation", "Describe",
                "--delegation-token", "*")[0] == 0
    rc, _, err = tool(acl_broker, capsys, "--add", "--allow-principal", "User:x", "--operation", "Read",
                      "--delegation-token", "tok")
    assert rc == 1 and "not valid for resource type DelegationToken" in err, err
    admin = KafkaAdminClient(bootstrap_servers=acl_broker.bootstrap)
    try:
        def read(rtype):
            f = ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY,
                          ResourcePatternFilter(rtype, None, KPattern.ANY))
            acls, error = admin.describe_acls(f)
            assert error.errno == 0, error
            return {(a.resource_pattern.resource_name, a.principal, a.operation.name) for a in acls}
        assert read(KType.USER) == {("User:etl", "User:ops", "CREATE_TOKENS"),
                                    ("User:etl", "User:ops", "DESCRIBE_TOKENS")}
        assert read(KType.DELEGATION_TOKEN) == {("*", "User:audit", "DESCRIBE")}
        rc, out, _ = tool(acl_broker, capsys, "--list", "--user-principal", "User:etl")
        assert "(principal=User:ops, host=*, operation=CREATE_TOKENS, permissionType=ALLOW)" in out
        assert tool(acl_broker, capsys, "--remove", "--force", "--user-principal", "User:etl")[0] == 0
        assert tool(acl_broker, capsys, "--remove", "--force", "--delegation-token", "*")[0] == 0
        assert read(KType.USER) == set() and read(KType.DELEGATION_TOKEN) == set()
    finally:
        admin.close()


def test_list_by_principal_and_resource(acl_broker, capsys):
    for principal, topic in (("User:p1", "by-a"), ("User:p2", "by-a"), ("User:p2", "by-b")):
        assert tool(acl_broker, capsys, "--add", "--allow-principal", principal, "--operation", "Read",
                    "--topic", topic)[0] == 0
    rc, out, _ = tool(acl_broker, capsys, "--list", "--principal", "User:p1")
    assert rc == 0
    assert out == ("ACLs for principal `User:p1`\n"
                   "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=by-a, patternType=LITERAL)`:\n"
                   "\t(principal=User:p1, host=*, operation=READ, permissionType=ALLOW)\n\n")
    rc, out, _ = tool(acl_broker, capsys, "--list", "--topic", "by-b", "--principal", "User:p2",
                      "--principal", "User:p1")
    assert rc == 0
    assert out.split("\n\n")[0].splitlines() == [
        "ACLs for principal `User:p2`",
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=by-b, patternType=LITERAL)`:",
        "\t(principal=User:p2, host=*, operation=READ, permissionType=ALLOW)"]
    assert out.rstrip().endswith("ACLs for principal `User:p1`")     # p1 has nothing on by-b
    rc, out, _ = tool(acl_broker, capsys, "--list")
    assert "name=by-a" in out and "name=by-b" in out


@pytest.mark.parametrize("args, message", [
    (["--add", "--allow-principal", "User:x", "--operation", "Frob", "--topic", "bad"],
     "unknown operation 'Frob': one of All, Read, Write"),
    (["--add", "--allow-principal", "User:x", "--operation", "Write", "--group", "bad"],
     "ACL operation Write is not valid for resource type Group (INVALID_REQUEST)"),
    (["--add", "--allow-principal", "User:x", "--operation", "Read", "--cluster"],
     "ACL operation Read is not valid for resource type Cluster (INVALID_REQUEST)"),
    (["--add", "--allow-principal", "alice", "--topic", "bad"], "a principal is TYPE:NAME"),
    (["--add", "--topic", "bad"], "--add needs --allow-principal or --deny-principal"),
    (["--add", "--allow-principal", "User:x"], "name at least one resource"),
    (["--add", "--allow-principal", "User:x", "--topic", "bad", "--resource-pattern-type", "match"],
     "--add takes literal or prefixed"),
    (["--list", "--allow-principal", "User:x"], "--list takes no"),
    (["--add", "--producer", "--allow-principal", "User:x", "--operation", "Read", "--topic", "bad"],
     "imply their operations"),
    (["--add", "--consumer", "--allow-principal", "User:x", "--topic", "bad"],
     "--consumer needs a --topic and a --group"),
    (["--add", "--idempotent", "--allow-principal", "User:x", "--topic", "bad"], "--idempotent is only for --producer"),
    (["--remove", "--force", "--principal", "User:x", "--topic", "bad"], "--principal is only for --list"),
    (["--list", "--cluster", "--resource-pattern-type", "prefixed"], "--cluster takes no"),
])
def test_mistakes_are_one_line_and_store_nothing(acl_broker, capsys, args, message):
    rc, _, err = tool(acl_broker, capsys, *args)
    assert rc == 1
    assert err.count("\n") == 1 and err.startswith("fastkafka acls: error: ") and message in err, err
    assert not any(a[1] == "bad" for a in stored(acl_broker))


def test_remove_asks_on_a_terminal_and_never_waits_without_one(acl_broker, capsys):
    assert tool(acl_broker, capsys, "--add", "--allow-principal", "User:q", "--topic", "ask-t")[0] == 0
    cmd = [sys.executable, "-m", "fastkafka", "acls", "-b", acl_broker.bootstrap, "--remove", "--topic", "ask-t"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    # no terminal (stdin at its end, or a pipe nobody writes to): refused at once, nothing removed
    for stdin in (subprocess.DEVNULL, subprocess.PIPE):
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        try:
            assert proc.wait(timeout=60) == 1
        finally:
            proc.kill()
            _, err = proc.communicate()
        assert err == (b"fastkafka acls: error: --remove asks before it deletes and stdin is not a "
                       b"terminal: add --force\n")
    assert len(stored(acl_broker, "ask-t")) == 1
    # on a terminal it asks, as kafka-acls.sh does: "n" keeps the ACLs, "y" removes them
    for answer, left in ((b"n\n", 1), (b"y\n", 0)):
        parent, child = pty.openpty()
        try:
            proc = subprocess.Popen(cmd, stdin=child, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            os.write(parent, answer)
            out, err = proc.communicate(timeout=60)
        finally:
            os.close(parent)
            os.close(child)
        assert proc.returncode == 0, err
        assert out.decode().startswith("Are you sure you want to delete all ACLs for resource filter "
                                       "`ResourcePattern(resourceType=TOPIC, name=ask-t, patternType=LITERAL)`? (y/n)")
        assert len(stored(acl_broker, "ask-t")) == left


def test_broker_without_authorizer_answers_security_disabled(tmp_path, capsys):
    with running_broker(tmp_path) as b:
        for args in (["--list"], ["--add", "--allow-principal", "User:x", "--topic", "t"],
                     ["--remove", "--force", "--topic", "t"]):
            rc, _, err = tool(b, capsys, *args)
            assert rc == 1
            assert err.count("\n") == 1 and "No Authorizer is configured on the broker (SECURITY_DISABLED)" in err
            assert f"authorizer.class.name={AUTHORIZER}" in err


PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret"}


def test_only_a_principal_allowed_on_the_cluster_changes_acls(tmp_path, capsys):
    """SASL PLAIN users, super.users=User:admin: admin's --command-config works, alice is refused
    CLUSTER_AUTHORIZATION_FAILED until an ACL gives her DESCRIBE on the cluster."""
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            + " ".join(f'user_{u}="{p}"' for u, p in PASSWORDS.items()) + ";")
    b = Broker(KafkaConfig({
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path / "data"),
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        "authorizer.class.name": AUTHORIZER, "super.users": "User:admin"}))
    b.startup()
    b.bootstrap = f"127.0.0.1:{b.port}"
    try:
        configs = {}
        for user, password in PASSWORDS.items():
            configs[user] = tmp_path / f"{user}.properties"
            configs[user].write_text(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{user}" password="{password}";\n')
        as_alice = ["--command-config", str(configs["alice"])]
        as_admin = ["--command-config", str(configs["admin"])]
        for args in (["--list"], ["--add", "--allow-principal", "User:alice", "--operation", "All", "--cluster"],
                     ["--remove", "--force", "--topic", "t"]):
            rc, _, err = tool(b, capsys, *as_alice, *args)
            assert rc == 1 and err.count("\n") == 1 and "(CLUSTER_AUTHORIZATION_FAILED)" in err, err
        rc, out, err = tool(b, capsys, *as_admin, "--add", "--allow-principal", "User:alice",
                            "--operation", "Describe", "--cluster")
        assert rc == 0, err
        rc, out, err = tool(b, capsys, *as_alice, "--list", "--cluster")
        assert rc == 0, err
        assert "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)" in out
        # DESCRIBE does not let her change them
        rc, _, err = tool(b, capsys, *as_alice, "--add", "--allow-principal", "User:alice", "--topic", "t")
        assert rc == 1 and "(CLUSTER_AUTHORIZATION_FAILED)" in err
    finally:
        b.shutdown(10)
