"""SASL/PLAIN: Kafka's PlainSaslServer rules, kafka-python's PLAIN message, random input refused."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastkafka import errors
from fastkafka.security import AuthenticationFailed, PlainClient, PlainServer

USERS = {"admin": "admin-secret", "alice": "alice-secret", "ünï": "pässwörd"}


def step(message: bytes) -> PlainServer:
    server = PlainServer(USERS.get)
    assert server.step(message) == b""
    return server


@pytest.mark.parametrize("message, user", [
    (b"\0alice\0alice-secret", "alice"),
    (b"alice\0alice\0alice-secret", "alice"),        # authzid equal to the user
    ("\0ünï\0pässwörd".encode(), "ünï"),
])
def test_good(message, user):
    server = step(message)
    assert server.complete and server.username == server.authorization_id == user


def test_our_client():
    assert step(PlainClient("admin", "admin-secret").first_message()).username == "admin"
    for bad in (("", "pw"), ("u", ""), ("a\0b", "pw"), ("u", "p\0w")):
        with pytest.raises(ValueError):
            PlainClient(*bad)


def test_kafka_pythons_client():
    from kafka.net.sasl import SaslMechanismPlain
    kp = SaslMechanismPlain(sasl_plain_username="alice", sasl_plain_password="alice-secret",
                            security_protocol="SASL_SSL")
    server = PlainServer(USERS.get)
    kp.receive(server.step(kp.auth_bytes()))          # user NUL user NUL password
    assert kp.is_authenticated() and server.username == "alice"


@pytest.mark.parametrize("message, match", [
    (b"\0alice\0wrong", "Invalid username or password"),
    (b"\0alice\0alice-secreT", "Invalid username or password"),
    (b"\0alice\0alice-secret ", "Invalid username or password"),
    (b"\0mallory\0alice-secret", "Invalid username or password"),
    (b"\0Alice\0alice-secret", "Invalid username or password"),
    (b"bob\0alice\0alice-secret", "authorization id that is different from username"),
    (b"\0\0alice-secret", "username not specified"),
    (b"\0alice\0", "password not specified"),
    (b"alice\0alice-secret", "expected 3 tokens, got 2"),
    (b"", "expected 3 tokens, got 1"),
    (b"\0alice\0alice-secret\0", "expected 3 tokens, got 4"),
    (b"\0alice\0alice\0secret\0x", "expected 3 tokens, got 4"),
    (b"\0alice\0alice-secret\xff", "not UTF-8"),
])
def test_refused(message, match):
    server = PlainServer(USERS.get)
    with pytest.raises(AuthenticationFailed, match=match) as e:
        server.step(message)
    assert e.value.public                           # Kafka answers PLAIN failures with their text
    assert e.value.client_message("PLAIN") == str(e.value)
    assert not server.complete and server.username is None


def test_wrong_password_before_authzid():
    """Kafka checks the password first: a bad authzid with a bad password says only 'invalid'."""
    with pytest.raises(AuthenticationFailed, match="Invalid username or password"):
        PlainServer(USERS.get).step(b"bob\0alice\0wrong")


def test_one_step_only():
    server = step(b"\0alice\0alice-secret")
    with pytest.raises(errors.IllegalSaslStateError):
        server.step(b"\0alice\0alice-secret")
    server = PlainServer(USERS.get)
    with pytest.raises(AuthenticationFailed):
        server.step(b"\0alice\0nope")
    with pytest.raises(errors.IllegalSaslStateError):
        server.step(b"\0alice\0alice-secret")


@given(st.one_of(st.binary(max_size=100),
                 st.lists(st.sampled_from(["", "alice", "alice-secret", "bob", "\0", "é", "\udcff"]),
                          max_size=6).map(lambda parts: "".join(parts).encode("utf-8", "surrogatepass"))))
@settings(max_examples=400, deadline=None)
def test_random_input(message):
    server = PlainServer(USERS.get)
    try:
        server.step(message)
    except AuthenticationFailed:
        assert not server.complete
        return
    assert server.username in USERS and message.endswith(USERS[server.username].encode())
