"""DescribeClientQuotas and AlterClientQuotas against a real broker over raw requests: Kafka's
answers and error codes, where the quotas are stored (the metadata file's users entries, shared
with SCRAM credentials), and that a restart keeps them."""
import json

import pytest

from fastkafka import errors
from fastkafka.protocol import ApiKey
from fastkafka.security import ScramMechanism

from support.brokers import running_broker
from support.raw_client import RawClient as Raw


pytestmark = pytest.mark.timeout(60)

INVALID_REQUEST = errors.InvalidRequestError.code


def entity(**parts):
    return [{"entity_type": t.replace("_", "-"), "entity_name": n} for t, n in parts.items()]


def alter(c, entries, version=1, validate_only=False):
    resp = c.call(ApiKey.ALTER_CLIENT_QUOTAS, version, {"entries": [
        {"entity": e, "ops": [{"key": k, "value": 0.0 if v is None else float(v), "remove": v is None}
                              for k, v in ops.items()]} for e, ops in entries], "validate_only": validate_only})
    return [(r.error_code, r.error_message, [(x.entity_type, x.entity_name) for x in r.entity]) for r in resp.entries]


def describe(c, components=(), strict=False, version=1):
    resp = c.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, version, {"components": [
        {"entity_type": t, "match_type": m, "match": n} for t, m, n in components], "strict": strict})
    if resp.error_code:
        return resp.error_code, resp.error_message, resp.entries
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
            for entry in resp.entries}


@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe_every_kind_of_entity(broker, version):
    c = Raw(broker.port, "quota-test")
    assert alter(c, [(entity(user="alice"), {"producer_byte_rate": 1048576, "consumer_byte_rate": 2097152}),
                     (entity(user=None), {"request_percentage": 12.5}),
                     (entity(client_id="etl"), {"consumer_byte_rate": 4096}),
                     (entity(client_id=None), {"producer_byte_rate": 8192}),
                     (entity(user="alice", client_id="etl"), {"consumer_byte_rate": 1024}),
                     (entity(user=None, client_id=None), {"controller_mutation_rate": 3})],
                 version) == [(0, None, [(e["entity_type"], e["entity_name"]) for e in ent])
                              for ent in (entity(user="alice"), entity(user=None), entity(client_id="etl"),
                                          entity(client_id=None), entity(user="alice", client_id="etl"),
                                          entity(user=None, client_id=None))]
    everything = describe(c, version=version)
    assert everything == {
        (("user", "alice"),): {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0},
        (("user", None),): {"request_percentage": 12.5},
        (("client-id", "etl"),): {"consumer_byte_rate": 4096.0},
        (("client-id", None),): {"producer_byte_rate": 8192.0},
        (("user", "alice"), ("client-id", "etl")): {"consumer_byte_rate": 1024.0},
        (("user", None), ("client-id", None)): {"controller_mutation_rate": 3.0}}
    # exact, default and any-name components; strict leaves out entities with other parts
    assert set(describe(c, [("user", 0, "alice")])) == {(("user", "alice"),), (("user", "alice"), ("client-id", "etl"))}
    assert set(describe(c, [("user", 0, "alice")], strict=True)) == {(("user", "alice"),)}
    assert set(describe(c, [("user", 1, None)])) == {(("user", None),), (("user", None), ("client-id", None))}
    assert set(describe(c, [("client-id", 2, None)], strict=True)) == {(("client-id", "etl"),),
                                                                       (("client-id", None),)}
    assert set(describe(c, [("user", 2, None), ("client-id", 0, "etl")], strict=True)) == {
        (("user", "alice"), ("client-id", "etl"))}
    assert describe(c, [("user", 0, "nobody")]) == {}
    # removing the last key removes the entity
    assert alter(c, [(entity(client_id="etl"), {"consumer_byte_rate": None})], version)[0][0] == 0
    assert (("client-id", "etl"),) not in describe(c, version=version)


def test_each_entry_is_checked_on_its_own_and_nothing_of_a_bad_one_is_stored(broker):
    c = Raw(broker.port, "quota-test")
    results = alter(c, [
        (entity(user="ok"), {"producer_byte_rate": 100}),
        (entity(user="bob"), {"producer_byte_rate": 100, "consumer_byte_rate": 1.5}),
        (entity(user="bob"), {"fetch_byte_rate": 100}),
        (entity(user="bob"), {"request_percentage": 0}),
        (entity(group="g"), {"producer_byte_rate": 100}),
        ([], {"producer_byte_rate": 100}),
        (entity(user="bob") + entity(user="carol"), {"producer_byte_rate": 100}),
        (entity(user=""), {"producer_byte_rate": 100}),
        (entity(ip="10.0.0.1"), {"connection_creation_rate": 10}),
    ])
    assert results[0][0] == 0
    assert [(code, msg.split(":")[0] if msg else msg) for code, msg, _ in results[1:]] == [
        (INVALID_REQUEST, "Configuration consumer_byte_rate must be a LONG value"),
        (INVALID_REQUEST, "Invalid configuration key fetch_byte_rate"),
        (INVALID_REQUEST, "Quota request_percentage must be greater than 0"),
        (INVALID_REQUEST, "Unhandled client quota entity type"),
        (INVALID_REQUEST, "Invalid empty client quota entity"),
        (INVALID_REQUEST, "Invalid client quota entity, duplicate entity entry user"),
        (INVALID_REQUEST, "Empty user not supported"),
        (INVALID_REQUEST, "IP quotas (connection_creation_rate) are not supported by this broker")]
    assert results[1][2] == [("user", "bob")]          # the entity comes back with its answer
    assert describe(c) == {(("user", "ok"),): {"producer_byte_rate": 100.0}}


def test_validate_only_stores_nothing(broker):
    c = Raw(broker.port, "quota-test")
    assert alter(c, [(entity(client_id="x"), {"producer_byte_rate": 10})], validate_only=True)[0][0] == 0
    assert alter(c, [(entity(client_id="x"), {"producer_byte_rate": 10.5})], validate_only=True)[0][0] == INVALID_REQUEST
    assert describe(c) == {}


def test_bad_filters_answer_the_whole_request_with_kafkas_codes(broker):
    c = Raw(broker.port, "quota-test")
    code, message, entries = describe(c, [("user", 5, None)])
    assert (code, entries) == (INVALID_REQUEST, None) and "Unknown match type 5" in message
    assert describe(c, [("group", 2, None)])[0] == errors.UnsupportedVersionError.code
    assert describe(c, [("user", 2, None), ("user", 0, "a")])[0] == INVALID_REQUEST
    assert describe(c, [("user", 0, None)])[0] == INVALID_REQUEST
    assert describe(c, [("ip", 2, None)]) == {}


def test_quotas_share_the_users_entries_with_scram_credentials_and_survive_a_restart(tmp_path):
    data = tmp_path / "data"
    with running_broker(data) as b:
        c = Raw(b.port, "quota-test")
        scram = c.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": [
            {"name": "alice", "mechanism": ScramMechanism.for_name("SCRAM-SHA-256").type_id, "iterations": 4096,
             "salt": b"s" * 16, "salted_password": b"p" * 32}]})
        assert scram.results[0].error_code == 0
        assert alter(c, [(entity(user="alice"), {"producer_byte_rate": 2048}),
                         (entity(user="quota-only"), {"consumer_byte_rate": 4096}),
                         (entity(user="alice", client_id=None), {"request_percentage": 50})])[0][0] == 0
        users = json.loads((data / "meta").read_text())["users"]
        assert set(users["alice"]) == {"SCRAM-SHA-256", "producer_byte_rate"}
        assert users["quota-only"] == {"consumer_byte_rate": "4096"}
        # a user with quotas only has no SCRAM credentials to describe
        listed = c.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        assert [r.user for r in listed.results] == ["alice"]
        named = c.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": "quota-only"}]})
        assert named.results[0].error_code == errors.ResourceNotFoundError.code
        # deleting alice's credential keeps her quota; deleting her quota keeps nothing else
        gone = c.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"upsertions": [], "deletions": [
            {"name": "alice", "mechanism": ScramMechanism.for_name("SCRAM-SHA-256").type_id}]})
        assert gone.results[0].error_code == 0
        assert json.loads((data / "meta").read_text())["users"]["alice"] == {"producer_byte_rate": "2048"}
    with running_broker(data) as b:
        c = Raw(b.port, "quota-test")
        assert describe(c) == {(("user", "alice"),): {"producer_byte_rate": 2048.0},
                               (("user", "quota-only"),): {"consumer_byte_rate": 4096.0},
                               (("user", "alice"), ("client-id", None)): {"request_percentage": 50.0}}
