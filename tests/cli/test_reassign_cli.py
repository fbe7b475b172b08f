"""``fastkafka reassign`` and ``fastkafka leader-election`` against three real brokers joined
through real ZooKeeper, used as kafka-reassign-partitions.sh and kafka-leader-election.sh are:
generate -> execute -> verify until completed, after which ZooKeeper holds the proposal and the
records sit on the new replicas; cancel of a move towards a broker that cannot catch up (it is
SIGSTOPped, for less than its ZooKeeper session); a preferred election that gives leadership
back after a broker restart; and mistakes (an unknown topic, a broker that is not alive,
malformed JSON, unsupported options) reported in one line with exit status 1."""
import json
import os
import signal
import time

import pytest

from fastkafka.cli import leader_election, reassign
from fastkafka.client import Producer, ProducerData
from fastkafka.client.admin import BROKER_RESOURCE, AdminClient

from support.harness import LONG_SESSION_MS, Cluster, wait_for
from support.zk import Ensemble, require_java


pytestmark = [pytest.mark.zk, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Brokers 1-3, whose sessions survive a SIGSTOP of a couple of seconds."""
    require_java()
    with Ensemble(tmp_path_factory.mktemp("zk"), size=1) as zk, \
            Cluster(tmp_path_factory.mktemp("brokers"), f"{zk.connect}/reassign", 3,
                    **{"zookeeper.session.timeout.ms": LONG_SESSION_MS,
                       # replication throttles measured over 1 s, fetched in 64 KB steps
                       "replication.quota.window.num": 2, "replica.fetch.max.bytes": 65536}) as c:
        yield c


def create(cluster, topic, partitions, rf, records=0):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.create_topic(topic, partitions, rf)
    wait_for(lambda: all((s := cluster.state(topic, p)) and len(s.isr) == rf for p in range(partitions)),
             30, what=f"{topic}: {rf} in-sync replicas everywhere")
    if records:
        with Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"}) as p:
            for i in range(records):
                p.send(ProducerData(topic, None, [f"r{i}".encode()], partition=i % partitions))


def tool(module, bootstrap, capsys, *args):
    rc = module.main(["-b", bootstrap, *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return rc, out, err


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def plan_file(tmp_path, name, plan):
    return write(tmp_path, name, {"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for (t, p), r in plan.items()]})


def reassignment_in(out, header):
    """The reassignment JSON printed on the line after ``header``, as {(topic, partition): replicas}."""
    lines = out.splitlines()
    doc = json.loads(lines[lines.index(header) + 1])
    assert doc["version"] == 1
    return {(e["topic"], e["partition"]): e["replicas"] for e in doc["partitions"]
            if e["log_dirs"] == ["any"] * len(e["replicas"])}


def test_generate_execute_verify_moves_partitions(cluster, capsys, tmp_path):
    create(cluster, "moving", 3, 2, records=30)
    before = {p: tuple(r) for p, r in cluster.assignment("moving").items()}
    rc, out, err = tool(reassign, cluster.bootstrap, capsys, "--generate", "--topics-to-move-json-file",
                        write(tmp_path, "topics.json", {"version": 1, "topics": [{"topic": "moving"}]}),
                        "--broker-list", "2,3")
    assert rc == 0, err
    current = reassignment_in(out, "Current partition replica assignment")
    assert current == {("moving", p): list(r) for p, r in before.items()}
    proposal = reassignment_in(out, "Proposed partition reassignment configuration")
    assert set(proposal) == set(current) and all(sorted(r) == [2, 3] for r in proposal.values())
    assert cluster.assignment("moving") == before, "--generate changed something"

    plan = plan_file(tmp_path, "plan.json", proposal)
    rc, out, err = tool(reassign, cluster.bootstrap, capsys, "--execute", "--reassignment-json-file", plan)
    assert rc == 0, err
    assert out.startswith("Current partition replica assignment\n\n")
    rollback = json.loads(out.splitlines()[2])     # after a blank line, as Kafka's tool prints it
    assert {(e["topic"], e["partition"]): e["replicas"] for e in rollback["partitions"]} == current
    assert "Save this to use as the --reassignment-json-file option during rollback" in out
    assert out.rstrip().endswith("Successfully started partition reassignments for moving-0,moving-1,moving-2")

    def completed():
        rc, out, err = tool(reassign, cluster.bootstrap, capsys, "--verify", "--reassignment-json-file", plan)
        assert rc == 0, err      # in progress or not: Kafka's --verify exits 0 either way
        lines = out.splitlines()
        assert lines[0] == "Status of partition reassignment:", out
        if not all(line.endswith(" is completed.") for line in lines[1:4]):
            assert len(lines) == 4, out        # throttles are cleared only once every move is done
            return False
        assert lines[4:] == ["Clearing broker-level throttles on brokers 1,2,3",
                             "Clearing topic-level throttles on topic moving"], out
        return True
    wait_for(completed, 60, interval=0.5, what="the reassignment to complete")
    assert {("moving", p): list(r) for p, r in cluster.assignment("moving").items()} == proposal
    assert tool(reassign, cluster.bootstrap, capsys, "--list")[1] == "No partition reassignments found.\n"
    # the new replicas lead and hold every record; broker 1 lets its copies go
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        wait_for(lambda: sum(admin.list_offsets("moving", -1).values()) == 30, 30, what="records on the new leaders")
    assert any(1 in r for r in before.values())
    wait_for(lambda: not [d for d in os.listdir(cluster.brokers[1].log_dir)     # (moved aside: "-delete")
                          if d.startswith("moving-") and not d.endswith("-delete")], 30,
             what="broker 1 to delete its moved replicas")


def test_cancel_a_move_towards_a_stopped_broker(cluster, capsys, tmp_path):
    """Broker ``x`` is stopped (SIGSTOP: registered, but it never catches up), so a move of the
    partition onto it stays under way until cancelled; the partition then has its replica back.
    Everything runs while ``x`` is stopped, well within its ZooKeeper session."""
    create(cluster, "stuck", 1, 1, records=10)
    [r] = cluster.assignment("stuck")[0]
    controller = cluster.controller()
    x = next(b for b in sorted(cluster.brokers) if b not in (r, controller))   # the tool never talks to x
    bootstrap = cluster.brokers[controller].bootstrap
    plan = plan_file(tmp_path, "stuck.json", {("stuck", 0): [x]})
    cluster.brokers[x].signal(signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        rc, out, err = tool(reassign, bootstrap, capsys, "--execute", "--reassignment-json-file", plan)
        assert rc == 0 and "Successfully started partition reassignment for stuck-0" in out, err
        listed = tool(reassign, bootstrap, capsys, "--list")[1]
        verified = tool(reassign, bootstrap, capsys, "--verify", "--reassignment-json-file", plan)[1]
        again = tool(reassign, bootstrap, capsys, "--execute", "--reassignment-json-file", plan)
        # (clearing throttles would ask every broker, x too)
        rc, out, err = tool(reassign, bootstrap, capsys, "--cancel", "--reassignment-json-file", plan,
                            "--preserve-throttles")
    finally:
        cluster.brokers[x].signal(signal.SIGCONT)
    held = time.monotonic() - stopped
    assert held < LONG_SESSION_MS / 1000, f"broker {x} was stopped {held:.1f}s, longer than its session"
    assert listed == f"Current partition reassignments:\nstuck-0: replicas: {x},{r}. adding: {x}. removing: {r}.\n"
    assert verified == "Status of partition reassignment:\nReassignment of partition stuck-0 is still in progress.\n"
    assert again[0] == 1 and "Cannot execute because there is an existing partition assignment" in again[2]
    assert rc == 0 and out == "Successfully cancelled partition reassignment for: stuck-0\n", err
    assert cluster.assignment("stuck") == {0: (r,)}
    assert tool(reassign, bootstrap, capsys, "--list")[1] == "No partition reassignments found.\n"
    rc, out, _ = tool(reassign, bootstrap, capsys, "--cancel", "--reassignment-json-file", plan)
    assert rc == 0 and out.startswith("None of the specified partition reassignments are active.\n")
    rc, out, _ = tool(reassign, bootstrap, capsys, "--verify", "--reassignment-json-file", plan)
    assert out.splitlines()[1] == (f"There is no active reassignment of partition stuck-0, but replica set is "
                                   f"{r} rather than {x}.")
    assert cluster.brokers[x].alive() and x in cluster.registered()


THROTTLE = 250_000           # bytes/s
THROTTLED_MB = 1


def broker_throttles(admin, broker):
    configs = admin.describe_configs(str(broker), resource_type=BROKER_RESOURCE)
    return {k: configs[k][0] for k in reassign.THROTTLE_RATES if not configs[k][1]}


def test_a_throttled_move_goes_at_the_throttle_and_verify_clears_it(cluster, capsys, tmp_path):
    """--throttle sets Kafka's four configs (the leader's and the follower's replica lists on the
    topic, the rates on the brokers involved); the new replica copies 1 MB at about 250 KB/s
    (measured over 1 s windows, so no faster than ~3 s); --verify clears them once done."""
    create(cluster, "throttled", 1, 1)
    with Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"}) as p:
        for _ in range(THROTTLED_MB * 16):
            p.send(ProducerData("throttled", None, [os.urandom(1024)] * 64, partition=0))
    [old] = cluster.assignment("throttled")[0]
    new = next(b for b in sorted(cluster.brokers) if b != old)
    plan = plan_file(tmp_path, "throttled.json", {("throttled", 0): [new]})
    started = time.monotonic()
    rc, out, err = tool(reassign, cluster.bootstrap, capsys, "--execute", "--reassignment-json-file", plan,
                        "--throttle", str(THROTTLE))
    assert rc == 0, err
    assert f"The inter-broker throttle limit was set to {THROTTLE} B/s" in out
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        topic = admin.describe_configs("throttled")
        assert (topic["leader.replication.throttled.replicas"][0],
                topic["follower.replication.throttled.replicas"][0]) == (f"0:{old}", f"0:{new}")
        rate = dict.fromkeys(reassign.THROTTLE_RATES, str(THROTTLE))
        assert {b: broker_throttles(admin, b) for b in (old, new)} == {old: rate, new: rate}
        verified = tool(reassign, cluster.bootstrap, capsys, "--verify", "--reassignment-json-file", plan)[1]
        wait_for(lambda: cluster.assignment("throttled") == {0: (new,)}, 60, interval=0.05,
                 what="the throttled move to complete")
        took = time.monotonic() - started
        if "is completed" not in verified:            # (still moving: nothing cleared)
            assert broker_throttles(admin, new) == rate
        rc, out, err = tool(reassign, cluster.bootstrap, capsys, "--verify", "--reassignment-json-file", plan)
        assert out.splitlines()[1:] == ["Reassignment of partition throttled-0 is completed.",
                                        "Clearing broker-level throttles on brokers 1,2,3",
                                        "Clearing topic-level throttles on topic throttled"], out
        # the broker answering may see a config change a moment later (ZooKeeper's watch)
        wait_for(lambda: all(broker_throttles(admin, b) == {} for b in cluster.brokers), 10,
                 what="every broker's throttle rates cleared")
        wait_for(lambda: all(admin.describe_configs("throttled")[k][1] for k in reassign.THROTTLED_REPLICAS),
                 10, what="the topic's throttled replica lists back to their defaults")
        assert sum(admin.list_offsets("throttled", -1).values()) == THROTTLED_MB * 1024
    # 1 MB at 250 KB/s, less the first window's allowance: 3 s at the least (unthrottled: well under 1 s)
    assert took >= 0.75 * (THROTTLED_MB * 1024 * 1024 - THROTTLE) / THROTTLE, f"moved in {took:.1f} s"


def leaders(cluster, topic, partitions):
    return {p: (s.leader if (s := cluster.state(topic, p)) else None) for p in range(partitions)}


def test_preferred_election_after_a_restart_moves_leadership_back(cluster, capsys, tmp_path):
    create(cluster, "pref", 3, 3)
    preferred = {p: r[0] for p, r in cluster.assignment("pref").items()}
    rc, out, err = tool(leader_election, cluster.bootstrap, capsys, "--election-type", "preferred",
                        "--topic", "pref", "--partition", "0")
    assert rc == 0 and out == "Valid replica already elected for partitions pref-0\n", err

    moved = preferred[0]
    cluster.brokers[moved].stop()
    wait_for(lambda: leaders(cluster, "pref", 3)[0] not in (moved, -1), 30, what="leadership moved away")
    cluster.brokers[moved].start()
    cluster.wait_registered(set(cluster.brokers))
    wait_for(lambda: all(len(cluster.state("pref", p).isr) == 3 for p in range(3)), 60, what="full ISRs again")
    away = sorted(p for p, leader in leaders(cluster, "pref", 3).items() if leader != preferred[p])
    assert 0 in away

    rc, out, err = tool(leader_election, cluster.bootstrap, capsys, "--election-type", "PREFERRED",
                        "--all-topic-partitions")
    # other tests' topics share the cluster: one of theirs may have no preferred replica in sync
    # (exit 1, as Kafka's tool); none of this topic's may fail
    assert rc == 0 or "replica(s) could not be elected" in err, err
    assert not [ln for ln in out.splitlines() if ln.startswith("Error") and "pref-" in ln], out
    [line] = [ln for ln in out.splitlines() if ln.startswith("Successfully completed leader election (PREFERRED)")]
    assert all(f"pref-{p}" in line.split(" for partitions ")[1].split(", ") for p in away), out
    assert leaders(cluster, "pref", 3) == preferred
    # a file naming the partitions: nothing left to do, and an unknown partition is an error
    rc, out, err = tool(leader_election, cluster.bootstrap, capsys, "--election-type", "preferred",
                        "--path-to-json-file", write(tmp_path, "p.json", {"partitions": [
                            {"topic": "pref", "partition": 1}, {"topic": "pref", "partition": 7}]}))
    assert rc == 1
    assert out.splitlines() == [
        "Valid replica already elected for partitions pref-1",
        ("Error completing leader election (PREFERRED) for partition: pref-7: The partition does not exist. "
         "(UNKNOWN_TOPIC_OR_PARTITION)")]
    assert err == "fastkafka leader-election: error: 1 replica(s) could not be elected\n"
    # an unclean election is not needed while the leader is alive
    rc, out, _ = tool(leader_election, cluster.bootstrap, capsys, "--election-type", "unclean",
                      "--topic", "pref", "--partition", "2")
    assert rc == 0 and out == "Valid replica already elected for partitions pref-2\n"


def test_admin_client_asks_again_when_metadata_named_a_former_controller(cluster):
    """The controller-bound calls retry at the controller when the broker they reached answers
    NOT_CONTROLLER (here: the first attempt is sent to a broker that is not the controller)."""
    if "known" not in cluster.zk.get_children("/brokers/topics"):
        create(cluster, "known", 1, 2)
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        controller = admin._controller
        other = next(b for b in sorted(cluster.brokers) if b != cluster.controller())
        calls = []

        def stale():
            calls.append(None)
            return admin.cluster.connection(other) if len(calls) % 2 else controller()
        admin._controller = stale
        assert admin.list_partition_reassignments() == {} and len(calls) == 2
        [error] = admin.alter_partition_reassignments({("known", 0): None}).values()
        assert error.name == "NO_REASSIGNMENT_IN_PROGRESS" and len(calls) == 4
        [error] = admin.elect_leaders(0, [("known", 0)]).values()
        assert error.name == "ELECTION_NOT_NEEDED" and len(calls) == 6


BAD_INPUT = [   # (tool, arguments with {files}, what the error line says)
    (reassign, ["--generate", "--topics-to-move-json-file", "{nosuch_topics}", "--broker-list", "1,2,3"],
     "fastkafka reassign: error: Topic nosuch not found. (UNKNOWN_TOPIC_OR_PARTITION)"),
    (reassign, ["--generate", "--topics-to-move-json-file", "{topics}", "--broker-list", "1,9"],
     "Unknown broker id 9 in --broker-list: the live brokers are 1,2,3"),
    (reassign, ["--generate", "--topics-to-move-json-file", "{topics}", "--broker-list", "1,two"],
     "--broker-list must be broker ids separated by commas"),
    (reassign, ["--generate", "--topics-to-move-json-file", "{topics}", "--broker-list", "1,2,1"],
     "Broker list contains duplicate entries: 1"),
    (reassign, ["--generate", "--topics-to-move-json-file", "{malformed}", "--broker-list", "1,2"],
     "is not valid JSON"),
    (reassign, ["--execute", "--reassignment-json-file", "{to_broker_9}"],
     "Unknown broker id 9 in the reassignment file: the live brokers are 1,2,3"),
    (reassign, ["--execute", "--reassignment-json-file", "{nosuch_plan}"],
     "Topic nosuch not found. (UNKNOWN_TOPIC_OR_PARTITION)"),
    (reassign, ["--execute", "--reassignment-json-file", "{partition_5}"],
     "Unable to find partition: known-5 (UNKNOWN_TOPIC_OR_PARTITION)"),
    (reassign, ["--execute", "--reassignment-json-file", "{malformed}"], "is not valid JSON"),
    (reassign, ["--execute", "--reassignment-json-file", "{twice}"],
     "Partition replica lists may not contain duplicate entries: known-0 contains multiple entries for 2"),
    (reassign, ["--execute", "--reassignment-json-file", "{log_dir}"],
     "moving replicas between log directories"),
    (reassign, ["--execute", "--reassignment-json-file", "{no_file}"], "cannot read the reassignment file"),
    (reassign, ["--execute", "--reassignment-json-file", "{plan}", "--replica-alter-log-dirs-throttle", "1000"],
     "--replica-alter-log-dirs-throttle is not supported"),
    (reassign, ["--verify", "--reassignment-json-file", "{plan}", "--broker-list", "1"],
     "option --broker-list can't be used with --verify"),
    (reassign, ["--generate", "--broker-list", "1"], "--generate needs --topics-to-move-json-file"),
    (leader_election, ["--election-type", "preferred", "--path-to-json-file", "{malformed}"], "is not valid JSON"),
    (leader_election, ["--election-type", "preferred", "--path-to-json-file", "{topics}"],
     'Replica election data is missing "partitions" field'),
    (leader_election, ["--election-type", "preferred", "--topic", "known"], "Missing required option(s): --partition"),
    (leader_election, ["--election-type", "preferred", "--all-topic-partitions", "--topic", "known",
                       "--partition", "0"], "One and only one of the following options is required"),
]


@pytest.mark.parametrize("module, args, message", BAD_INPUT,
                         ids=[f"{m.__name__.rsplit('.', 1)[1]}-{i}" for i, (m, _, _) in enumerate(BAD_INPUT)])
def test_bad_input_is_one_clear_line(cluster, capsys, tmp_path, module, args, message):
    if "known" not in cluster.zk.get_children("/brokers/topics"):
        create(cluster, "known", 1, 2)
    files = {
        "nosuch_topics": {"version": 1, "topics": [{"topic": "nosuch"}]},
        "topics": {"version": 1, "topics": [{"topic": "known"}]},
        "malformed": '{"version": 1, "partitions": [',
        "to_broker_9": {"version": 1, "partitions": [{"topic": "known", "partition": 0, "replicas": [1, 9]}]},
        "nosuch_plan": {"version": 1, "partitions": [{"topic": "nosuch", "partition": 0, "replicas": [1]}]},
        "partition_5": {"version": 1, "partitions": [{"topic": "known", "partition": 5, "replicas": [1]}]},
        "twice": {"version": 1, "partitions": [{"topic": "known", "partition": 0, "replicas": [2, 1, 2]}]},
        "log_dir": {"version": 1, "partitions": [{"topic": "known", "partition": 0, "replicas": [1, 2],
                                                  "log_dirs": ["/data/a", "any"]}]},
        "plan": {"version": 1, "partitions": [{"topic": "known", "partition": 0, "replicas": [1, 2]}]},
    }
    paths = {name: write(tmp_path, f"{name}.json", doc) for name, doc in files.items()}
    paths["no_file"] = str(tmp_path / "missing.json")
    before = cluster.assignment("known")
    rc, out, err = tool(module, cluster.bootstrap, capsys, *[a.format(**paths) for a in args])
    assert rc == 1 and message in err and len(err.splitlines()) == 1, (out, err)
    assert cluster.assignment("known") == before
    assert tool(reassign, cluster.bootstrap, capsys, "--list")[1] == "No partition reassignments found.\n"
