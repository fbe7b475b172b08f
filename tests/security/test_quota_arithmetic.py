"""Client quota arithmetic (fastkafka.security.quota_rate, fastkafka.security.client_quotas):
Kafka's sampled Rate and throttle time, the eight-level precedence, names in ZooKeeper, and the
checks of AlterClientQuotas / DescribeClientQuotas."""
import random

import pytest

from fastkafka import errors
from fastkafka.security.client_quotas import (DEFAULT, MATCH_DEFAULT, MATCH_EXACT, MATCH_SPECIFIED, QuotaBounds,
                                              QuotaFilter, apply_ops, collect_quota_configs, desanitize,
                                              entity_components, entity_name, parse_entity, sanitize, znode_name)
from fastkafka.security.quota_rate import QuotaSensor, Rate, TokenBucketSensor, throttle_time_ms

# --- Rate: Kafka's SampledStat/WindowedSum/Rate -------------------------------------------------


def test_a_first_burst_is_averaged_over_samples_minus_one_windows():
    r = Rate(samples=11, window_ms=1000)
    r.record(1000, 0)
    assert r.window_size(0) == 10_000 and r.measure(0) == 100.0
    # 2.5 s later: 2 whole windows elapsed, still padded to 10 whole windows plus the fraction
    assert r.window_size(2500) == 10_500
    # once more than samples-1 windows have passed, the real elapsed time counts
    r.record(1000, 10_900)
    assert r.window_size(10_900) == 10_900
    assert r.measure(10_900) == pytest.approx(2000 / 10.9)


def test_old_windows_stop_counting_and_slots_are_reused():
    r = Rate(samples=3, window_ms=1000)
    for t in range(0, 10_000, 100):     # 10 per second for 10 s
        r.record(1, t)
    # only what falls in the last 3 windows is summed: a rate of 10/s
    assert r.measure(9_950) == pytest.approx(10.0, rel=0.15)
    # a long silence: every window is obsolete, nothing is left
    assert r.total(30_000) == 0
    assert r.measure(30_000) == 0


def test_a_steady_rate_measures_as_itself():
    r = Rate(samples=11, window_ms=1000)
    for t in range(0, 60_000, 10):      # 500 bytes every 10 ms: 50 kB/s
        r.record(500, t)
    assert r.measure(60_000) == pytest.approx(50_000, rel=0.02)


def test_throttle_time_is_kafkas_formula():
    # O = 150, T = 100 over W = 10 s: X = (O - T) / T * W = 5 s
    assert throttle_time_ms(150, 100, 10_000) == 5000
    assert throttle_time_ms(100, 100, 10_000) == 0          # at the bound is within it
    assert throttle_time_ms(150, 100, 1) == 1                # 0.5 rounds up, as Math.round
    assert throttle_time_ms(50, 100, 10_000) == 0


def test_sensor_records_then_checks_and_caps_the_request_quota():
    s = QuotaSensor(bound=1000, samples=11, window_ms=1000)
    assert s.record(5000, 0) == 0                          # 500/s over 10 s: within
    assert s.record(7000, 100) == 1900                      # 12 s worth of quota in 10.1 s
    capped = QuotaSensor(bound=1, samples=11, window_ms=1000, max_throttle_ms=1000)
    assert capped.record(100, 0) == 1000                    # ClientRequestQuotaManager's bound


def test_the_sensors_shortcut_answers_as_measuring_every_time_would():
    """QuotaSensor skips measuring while its running sum is within the bound over the shortest
    window; across random traffic its answers equal those of a full measurement each time."""
    rng = random.Random(11)
    for _ in range(40):
        samples, bound = rng.choice((1, 2, 3, 11)), rng.choice((1000.0, 50_000.0, 1e6))
        sensor, reference = QuotaSensor(bound, samples, 1000), Rate(samples, 1000)
        t = 0.0
        for _ in range(400):
            t += rng.choice((0.0, 0.5, 3.0, 40.0, 700.0, 2500.0, 15_000.0))
            value = rng.choice((0.0, 1.0, 100.0, 4096.0, 65536.0))
            reference.record(value, t)
            total, window = reference.sum_and_window(t)
            expected = throttle_time_ms(total / (window / 1000), bound, window)
            assert sensor.record(value, t) == expected


def test_unrecord_takes_back_a_throttled_fetch():
    s = QuotaSensor(bound=1000, samples=11, window_ms=1000)
    assert s.record(20_000, 0) > 0
    s.unrecord(20_000, 0)
    assert s.rate(0) == 0
    assert s.record(5000, 1) == 0


def test_throttling_holds_a_greedy_client_to_its_quota():
    """A client that sends again as soon as its throttle ends gets its quota in the long run
    (after the first burst, which Kafka's padded window lets through)."""
    quota = 1_000_000
    for samples in (2, 3, 11):
        for size in (16384, 262144):
            s = QuotaSensor(quota, samples, 1000)
            t, sent, settled = 0.0, 0, None
            while t < 300_000:
                sent += size
                t += max(s.record(size, t), 1.0)
                if settled is None and t >= 20_000:
                    settled = sent, t
            rate = (sent - settled[0]) / ((t - settled[1]) / 1000)
            assert rate == pytest.approx(quota, rel=0.02), (samples, size)


# --- names -------------------------------------------------------------------------------------


def test_sanitize_is_kafkas_url_encoding():
    assert sanitize("alice") == "alice"
    assert sanitize("a.b-c_d") == "a.b-c_d"
    assert sanitize("user@example.com") == "user%40example.com"
    assert sanitize("a b*c~d+e/f") == "a%20b%2Ac%7Ed%2Be%2Ff"
    assert sanitize("CN=Jörg,O=x") == "CN%3DJ%C3%B6rg%2CO%3Dx"
    for name in ("user@example.com", "a b*c~d+e/f", "CN=Jörg,O=x", "<default>"):
        assert desanitize(sanitize(name)) == name
    assert desanitize("a+b") == "a b"        # URLDecoder: '+' is a space
    assert znode_name(DEFAULT) == "<default>" and znode_name("<x>") == "%3Cx%3E"
    assert entity_name("<default>") == DEFAULT and entity_name("%3Cx%3E") == "<x>"


# --- precedence --------------------------------------------------------------------------------

LEVELS = [  # Kafka's order, most specific first
    ("alice", "app"), ("alice", DEFAULT), ("alice", None), (DEFAULT, "app"), (DEFAULT, DEFAULT),
    (DEFAULT, None), (None, "app"), (None, DEFAULT),
]


def test_each_level_wins_over_every_later_one():
    for i, level in enumerate(LEVELS):
        bounds = {entity: float(100 + j) for j, entity in enumerate(LEVELS) if j >= i}
        assert QuotaBounds(bounds).resolve("alice", "app")[1] == 100 + i, level


def test_precedence_with_any_subset_of_levels_configured():
    rng = random.Random(7)
    for _ in range(300):
        chosen = [e for e in LEVELS if rng.random() < 0.4]
        bounds = QuotaBounds({e: float(LEVELS.index(e)) for e in chosen})
        expected = float(LEVELS.index(chosen[0])) if chosen else None
        assert bounds.resolve("alice", "app")[1] == expected, chosen


def test_who_shares_a_rate():
    # a user quota: every client of the user shares one rate; other users have none
    b = QuotaBounds({("alice", None): 10.0})
    assert b.resolve("alice", "a") == b.resolve("alice", "b") == (("alice", ""), 10.0)
    assert b.resolve("bob", "a")[1] is None
    # a default user quota: each user gets a rate of its own at the default bound
    b = QuotaBounds({(DEFAULT, None): 10.0})
    assert b.resolve("alice", "a") == (("alice", ""), 10.0)
    assert b.resolve("bob", "a") == (("bob", ""), 10.0)
    # client id quotas: shared by every user of that client id
    b = QuotaBounds({(None, "etl"): 5.0, (None, DEFAULT): 1.0})
    assert b.resolve("alice", "etl") == b.resolve("bob", "etl") == (("", "etl"), 5.0)
    assert b.resolve("alice", "other") == (("", "other"), 1.0)
    # user/client-id pairs, and mixed levels falling through to the client id
    b = QuotaBounds({("alice", DEFAULT): 3.0, (None, "etl"): 5.0})
    assert b.resolve("alice", "etl") == (("alice", "etl"), 3.0)
    assert b.resolve("bob", "etl") == (("", "etl"), 5.0)
    assert b.resolve("bob", "x") == (("", "x"), None)
    # an empty client id escapes client-id quotas, as in Kafka
    assert QuotaBounds({(None, DEFAULT): 1.0}).resolve("alice", "")[1] is None
    assert not QuotaBounds({})


def test_collected_configs_keep_only_quota_keys():
    got = collect_quota_configs({"alice": {"SCRAM-SHA-512": "x"}, DEFAULT: {"request_percentage": "5.0"}},
                                {("bob", "c"): {"consumer_byte_rate": "10"}, (None, "d"): {}})
    assert got == {(DEFAULT, None): {"request_percentage": "5.0"}, ("bob", "c"): {"consumer_byte_rate": "10"}}


# --- AlterClientQuotas checks ------------------------------------------------------------------


def test_entities_parse_as_kafka_validates_them():
    assert parse_entity([("user", "alice")]) == ("alice", None)
    assert parse_entity([("client-id", None)]) == (None, DEFAULT)
    assert parse_entity([("client-id", "c"), ("user", None)]) == (DEFAULT, "c")
    for bad, why in (([], "empty client quota entity"), ([("user", "a"), ("user", "b")], "duplicate entity entry"),
                     ([("group", "g")], "Unhandled client quota entity type: group"),
                     ([("user", "")], "Empty user not supported"), ([("ip", "1.2.3.4")], "IP quotas"),
                     ([("ip", None), ("user", "a")], "IP entity should not be combined")):
        with pytest.raises(errors.InvalidRequestError, match=why):
            parse_entity(bad)
    assert entity_components((DEFAULT, "c")) == [("user", None), ("client-id", "c")]


def test_ops_store_kafkas_strings_and_refuse_bad_values():
    assert apply_ops({}, [("producer_byte_rate", 1048576.0000001, False), ("request_percentage", 12.5, False),
                          ("controller_mutation_rate", 3, False)]) == {
        "producer_byte_rate": "1048576", "request_percentage": "12.5", "controller_mutation_rate": "3.0"}
    assert apply_ops({"consumer_byte_rate": "5"}, [("consumer_byte_rate", 0, True), ("unknown", 0, True)]) == {}
    for op, why in ((("producer_byte_rate", 1.5, False), "must be a LONG value"),
                    (("consumer_byte_rate", 0.0, False), "must be greater than 0"),
                    (("request_percentage", -1.0, False), "must be greater than 0"),
                    (("bytes_per_second", 1.0, False), "Invalid configuration key bytes_per_second"),
                    (("SCRAM-SHA-256", 1.0, False), "Invalid configuration key")):
        with pytest.raises(errors.InvalidRequestError, match=why):
            apply_ops({}, [op])


# --- DescribeClientQuotas filters --------------------------------------------------------------

ENTITIES = [("alice", None), (DEFAULT, None), (None, "etl"), (None, DEFAULT), ("alice", "etl"), (DEFAULT, DEFAULT)]


def _select(components, strict):
    f = QuotaFilter(components, strict)
    return [e for e in ENTITIES if f.matches(e)]


def test_filter_match_types_and_strictness():
    assert _select([], False) == ENTITIES
    assert _select([], True) == []
    assert _select([("user", MATCH_EXACT, "alice")], False) == [("alice", None), ("alice", "etl")]
    assert _select([("user", MATCH_EXACT, "alice")], True) == [("alice", None)]
    assert _select([("user", MATCH_DEFAULT, None)], False) == [(DEFAULT, None), (DEFAULT, DEFAULT)]
    assert _select([("user", MATCH_SPECIFIED, None)], True) == [("alice", None), (DEFAULT, None)]
    assert _select([("client-id", MATCH_SPECIFIED, None)], False) == [
        (None, "etl"), (None, DEFAULT), ("alice", "etl"), (DEFAULT, DEFAULT)]
    assert _select([("user", MATCH_SPECIFIED, None), ("client-id", MATCH_EXACT, "etl")], True) == [("alice", "etl")]
    assert _select([("ip", MATCH_SPECIFIED, None)], False) == []


def test_bad_filters_are_refused_as_kafka_refuses_them():
    for components, exc, why in (
            ([("", MATCH_EXACT, "x")], errors.InvalidRequestError, "empty entity type"),
            ([("user", MATCH_SPECIFIED, None), ("user", MATCH_EXACT, "a")], errors.InvalidRequestError,
             "more than once"),
            ([("group", MATCH_SPECIFIED, None)], errors.UnsupportedVersionError, "Custom entity type 'group'"),
            ([("user", MATCH_EXACT, None)], errors.InvalidRequestError, "set match string to null"),
            ([("user", MATCH_DEFAULT, "a")], errors.InvalidRequestError, "also specified a match string"),
            ([("user", 7, None)], errors.InvalidRequestError, "Unknown match type 7"),
            ([("ip", MATCH_SPECIFIED, None), ("user", MATCH_SPECIFIED, None)], errors.InvalidRequestError,
             "IP filter component should not be used")):
        with pytest.raises(exc, match=why):
            QuotaFilter(components, False)


def test_token_bucket_strict_and_permissive():
    # 5 per second over 2 windows of 1 s: a burst of 10, full at first
    strict = TokenBucketSensor(bound=5, samples=2, window_ms=1000)
    assert strict.admit(8, 0) == 0 and strict.admit(8, 0) == 0      # -6: admitted, it was not below zero
    assert strict.tokens == -6
    assert strict.admit(1, 0) == 1200                                # refused: nothing taken
    assert strict.tokens == -6
    assert strict.admit(1, 1000) == 200 and strict.admit(1, 1200) == 0
    assert strict.admit(100, 60_000) == 0 and strict.tokens == -90   # refilled to the burst, no further
    permissive = TokenBucketSensor(bound=5, samples=2, window_ms=1000)
    assert permissive.record(8, 0) == 0
    assert permissive.record(3, 0) == 200            # taken anyway, and throttled until back at zero
    assert permissive.record(2, 400) == 200          # +2 refilled, -2 taken: still -1
    # a lower bound lowers the burst at the next refill
    permissive.bound = 1
    assert permissive.record(0, 100_000) == 0 and permissive.tokens == 2
    unlimited = TokenBucketSensor(bound=float("inf"), samples=2, window_ms=1000)
    assert unlimited.admit(10 ** 9, 0) == 0 and unlimited.record(10 ** 9, 0) == 0
