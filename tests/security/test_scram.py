"""SCRAM: RFC 7677's exchange byte for byte, Kafka's credential format, cross-checks against
kafka-python's client and scramp's client and server, and every malformed or hostile message
refused with AuthenticationFailed (never another exception, never a hang)."""
import base64
import hashlib
import hmac

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastkafka import errors
from fastkafka.security import (MECHANISMS, AuthenticationFailed, ScramClient, ScramCredential, ScramMechanism,
                                ScramServer, credential_from_salted_password, make_credential, salted_password)

# RFC 7677 §3: user "user", password "pencil"
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

PASSWORD = "alice-secret"
CREDS = {m: make_credential(m, PASSWORD) for m in MECHANISMS}     # computed once: PBKDF2 is slow on purpose
RFC_CRED = make_credential("SCRAM-SHA-256", "pencil", salt=RFC_SALT)


def server(mechanism="SCRAM-SHA-256", users=("alice",), nonce="SNONCE"):
    return ScramServer(mechanism, {u: CREDS[mechanism] for u in users}.get, nonce=nonce)


def manual_final(mechanism, bare, server_first, gs2=b"n,,", password=PASSWORD):
    """A client-final computed here from the RFC's formulas, for messages our client never sends."""
    h = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    attrs = dict(a.split("=", 1) for a in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac(h, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.digest(salted, b"Client Key", h)
    without_proof = b"c=" + base64.b64encode(gs2) + b",r=" + attrs["r"].encode()
    auth = bare + b"," + server_first + b"," + without_proof
    proof = bytes(a ^ b for a, b in zip(client_key, hmac.digest(hashlib.new(h, client_key).digest(), auth, h)))
    return without_proof + b",p=" + base64.b64encode(proof)


# --- RFC 7677's test vector ---

def test_rfc7677_client():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first_message() == RFC_CLIENT_FIRST
    assert client.step(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify_server_final(RFC_SERVER_FINAL)
    assert client.complete


def test_rfc7677_server():
    s = ScramServer("SCRAM-SHA-256", {"user": RFC_CRED}.get, nonce=RFC_SERVER_NONCE)
    assert s.username is None
    assert s.step(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not s.complete
    assert s.step(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert s.complete and s.username == "user" and s.authorization_id == "user"


def test_rfc7677_wrong_password_and_tampered_proof():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil!", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    assert client.step(RFC_SERVER_FIRST) != RFC_CLIENT_FINAL
    s = ScramServer("SCRAM-SHA-256", {"user": RFC_CRED}.get, nonce=RFC_SERVER_NONCE)
    s.step(RFC_CLIENT_FIRST)
    tampered = RFC_CLIENT_FINAL.replace(b"p=dHzb", b"p=dHzc")
    with pytest.raises(AuthenticationFailed, match="Invalid client credentials") as e:
        s.step(tampered)
    assert not e.value.public and not s.complete and s.username is None


# --- credentials ---

def test_credential_in_kafkas_format():
    text = RFC_CRED.to_kafka_string()
    assert text.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=") and text.endswith(",iterations=4096")
    assert [k.split("=")[0] for k in text.split(",")] == ["salt", "stored_key", "server_key", "iterations"]
    assert ScramCredential.from_kafka_string(text) == RFC_CRED
    for m in MECHANISMS:
        assert ScramCredential.from_kafka_string(CREDS[m].to_kafka_string()) == CREDS[m]
    assert "stored" not in repr(RFC_CRED) and base64.b64encode(RFC_CRED.stored_key).decode() not in repr(RFC_CRED)


@pytest.mark.parametrize("text", [
    "", "salt=AA==", "salt=AA==,stored_key=AA==,server_key=AA==",
    "salt=AA==,stored_key=AA==,server_key=AA==,iterations=4096,extra=1",
    "salt=AA==,salt=AA==,stored_key=AA==,server_key=AA==,iterations=4096",
    "salt=A,stored_key=AA==,server_key=AA==,iterations=4096",
    "salt=AA==,stored_key=AA==,server_key=AA==,iterations=many",
    "salt=AA==,stored_key=AA==,server_key=AA==,iterations=-1",
    "salt=AA==,stored_key=AA==,server_key=AA==,iterations=99999999999",
    "salt=AA==,,stored_key=AA==,server_key=AA==,iterations=4096",
    "=AA==,stored_key=AA==,server_key=AA==,iterations=4096",
])
def test_bad_credential_strings(text):
    with pytest.raises(ValueError, match="Credentials not valid"):
        ScramCredential.from_kafka_string(text)


@given(st.text(max_size=120))
@settings(max_examples=300, deadline=None)
def test_credential_parser_only_raises_value_error(text):
    try:
        ScramCredential.from_kafka_string(text)
    except ValueError:
        pass


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_credentials_match_scramp_and_kafka_python(mechanism):
    import scramp
    from kafka.admin import UserScramCredentialUpsertion
    salt = b"0123456789abcdef01234567"
    ours = make_credential(mechanism, PASSWORD, 8192, salt=salt)
    assert scramp.ScramMechanism(mechanism).make_auth_info(PASSWORD, 8192, salt) == (
        ours.salt, ours.stored_key, ours.server_key, ours.iterations)
    upsert = UserScramCredentialUpsertion("alice", mechanism, PASSWORD, iterations=8192, salt=salt)
    assert upsert.salted_password == salted_password(mechanism, PASSWORD, salt, 8192)
    assert credential_from_salted_password(mechanism, upsert.salt, upsert.salted_password, 8192) == ours
    assert ScramMechanism.for_name(mechanism).type_id == int(upsert.mechanism)


@pytest.mark.parametrize("iterations, message", [(4095, "Too few iterations"), (16385, "Too many iterations")])
def test_iterations_out_of_range_are_unacceptable(iterations, message):
    for make in (lambda: make_credential("SCRAM-SHA-256", "pw", iterations),
                 lambda: credential_from_salted_password("SCRAM-SHA-256", b"s", b"x" * 32, iterations)):
        with pytest.raises(errors.UnacceptableCredentialError, match=message) as e:
            make()
        assert errors.code_of(e.value) == 93
    assert credential_from_salted_password("SCRAM-SHA-256", b"s", b"x" * 32, 16384).iterations == 16384


def test_unknown_mechanism():
    for make in (lambda: ScramServer("SCRAM-SHA-1", {}.get), lambda: ScramClient("MD5", "a", "b"),
                 lambda: make_credential("PLAIN", "pw"), lambda: ScramMechanism.for_type(3)):
        with pytest.raises(errors.UnsupportedSaslMechanismError):
            make()


# --- full exchanges, ours and independent implementations ---

def exchange(client, s):
    final = s.step(client.step(s.step(client.first_message())))
    client.verify_server_final(final)
    return client.complete and s.complete


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("user", ["alice", "a,b=c", "=2C", "ünïcode"])
def test_our_client_and_server(mechanism, user):
    s = ScramServer(mechanism, {user: CREDS[mechanism]}.get)
    assert exchange(ScramClient(mechanism, user, PASSWORD), s)
    assert s.username == user


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_server_with_kafka_pythons_client(mechanism):
    """kafka-python's SASL mechanism object, driven as its connection drives it."""
    from kafka.net.sasl import SaslMechanismScram

    def kafka_python(password):
        return SaslMechanismScram(sasl_plain_username="alice", sasl_plain_password=password,
                                  sasl_mechanism=mechanism, security_protocol="SASL_SSL")
    kp, s = kafka_python(PASSWORD), server(mechanism, nonce=None)
    kp.receive(s.step(kp.auth_bytes()))
    assert kp.receive(s.step(kp.auth_bytes()))     # raises on a wrong server signature
    assert kp.is_authenticated() and s.complete and s.username == "alice"
    kp, s = kafka_python("wrong"), server(mechanism, nonce=None)
    kp.receive(s.step(kp.auth_bytes()))
    with pytest.raises(AuthenticationFailed, match="Invalid client credentials"):
        s.step(kp.auth_bytes())


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_server_with_scramps_client(mechanism):
    import scramp
    c = scramp.ScramClient([mechanism], "alice", PASSWORD)
    s = server(mechanism, nonce=None)
    c.set_server_first(s.step(c.get_client_first().encode()).decode())
    c.set_server_final(s.step(c.get_client_final().encode()).decode())   # raises on a wrong signature
    assert s.username == "alice"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_client_with_scramps_server(mechanism):
    import scramp
    m = scramp.ScramMechanism(mechanism)
    infos = {"alice": m.make_auth_info(PASSWORD, 4096)}
    srv = m.make_server(infos.__getitem__)
    client = ScramClient(mechanism, "alice", PASSWORD)
    srv.set_client_first(client.first_message().decode())
    srv.set_client_final(client.step(srv.get_server_first().encode()).decode())
    client.verify_server_final(srv.get_server_final().encode())
    assert client.complete
    srv = m.make_server(infos.__getitem__)
    bad = ScramClient(mechanism, "alice", "wrong")
    srv.set_client_first(bad.first_message().decode())
    with pytest.raises(scramp.ScramException):
        srv.set_client_final(bad.step(srv.get_server_first().encode()).decode())
    with pytest.raises(AuthenticationFailed, match="failed with error: invalid-proof"):
        bad.verify_server_final(srv.get_server_final().encode())


# --- the server's rules ---

def test_authzid_must_be_the_user():
    s = server(nonce="SNONCE")
    with pytest.raises(AuthenticationFailed, match="authorization id that is different") as e:
        s.step(b"n,a=bob,n=alice,r=CNONCE")
    assert e.value.public
    s = server(nonce="SNONCE")
    first = s.step(b"n,a=alice,n=alice,r=CNONCE")
    s.step(manual_final("SCRAM-SHA-256", b"n=alice,r=CNONCE", first, gs2=b"n,a=alice,"))
    assert s.complete and s.authorization_id == "alice"


def test_escaped_names():
    s = ScramServer("SCRAM-SHA-256", {"a,b=c": CREDS["SCRAM-SHA-256"]}.get, nonce="S")
    first = s.step(b"n,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=C")
    s.step(manual_final("SCRAM-SHA-256", b"n=a=2Cb=3Dc,r=C", first, gs2=b"n,a=a=2Cb=3Dc,"))
    assert s.username == "a,b=c"
    for bad in (b"n,,n=a=b,r=C", b"n,,n=a=2X,r=C", b"n,,n=a=,r=C", b"n,a=a=4,n=a,r=C"):
        with pytest.raises(AuthenticationFailed, match="Invalid SCRAM username"):
            server().step(bad)


def test_extensions_are_signed_and_ignored_but_tokenauth_is_refused():
    s = server()
    first = s.step(b"n,,n=alice,r=CNONCE,tokenauth=false,foo=bar")
    s.step(manual_final("SCRAM-SHA-256", b"n=alice,r=CNONCE,tokenauth=false,foo=bar", first))
    assert s.complete
    for value in (b"true", b"TRUE"):
        with pytest.raises(AuthenticationFailed, match="tokenauth") as e:
            server().step(b"n,,n=alice,r=CNONCE,tokenauth=" + value)
        assert e.value.public


def test_reserved_m_and_channel_binding_are_refused():
    with pytest.raises(AuthenticationFailed, match="mandatory extension"):
        server().step(b"n,,m=ext,n=alice,r=CNONCE")
    for header in (b"y,,", b"p=tls-unique,,", b"p=tls-server-end-point,a=alice,"):
        with pytest.raises(AuthenticationFailed, match="channel binding is not supported"):
            server().step(header + b"n=alice,r=CNONCE")
    s = server()
    first = s.step(b"n,,n=alice,r=CNONCE")
    final = manual_final("SCRAM-SHA-256", b"n=alice,r=CNONCE", first, gs2=b"p=tls-unique,,")
    with pytest.raises(AuthenticationFailed, match="channel binding"):
        s.step(final)


def test_nonce_must_be_the_combined_one():
    for wrong in (b"CNONCE", b"CNONCESNONCEX", b"XNONCESNONCE", b"SNONCE"):
        s = server()
        first = s.step(b"n,,n=alice,r=CNONCE").replace(b"r=CNONCESNONCE", b"r=" + wrong)
        with pytest.raises(AuthenticationFailed, match="Invalid client nonce"):
            s.step(manual_final("SCRAM-SHA-256", b"n=alice,r=CNONCE", first))


def test_unknown_user_looks_like_a_wrong_password():
    firsts = []
    for _ in range(2):
        s = server(users=())
        first = s.step(b"n,,n=mallory,r=CNONCE")
        firsts.append(first)
        with pytest.raises(AuthenticationFailed) as unknown:
            s.step(manual_final("SCRAM-SHA-256", b"n=mallory,r=CNONCE", first))
    assert firsts[0] == firsts[1]                                          # a stable fake salt
    assert server(users=()).step(b"n,,n=trudy,r=CNONCE") != firsts[0]     # per user
    s = server()
    first = s.step(b"n,,n=alice,r=CNONCE")
    assert len(first) == len(firsts[0]) and first.endswith(b",i=4096")
    with pytest.raises(AuthenticationFailed) as wrong:
        s.step(manual_final("SCRAM-SHA-256", b"n=alice,r=CNONCE", first, password="guess"))
    assert str(unknown.value) == str(wrong.value) == "Invalid client credentials"
    assert unknown.value.client_message("SCRAM-SHA-256") == wrong.value.client_message("SCRAM-SHA-256")


def test_stored_credential_with_too_few_iterations():
    weak = ScramCredential(b"salt", b"k" * 32, b"k" * 32, 1000)
    with pytest.raises(AuthenticationFailed, match="Iterations 1000 is less than the minimum 4096"):
        ScramServer("SCRAM-SHA-256", {"alice": weak}.get).step(b"n,,n=alice,r=CNONCE")


def test_states():
    s = server()
    s.step(b"n,,n=alice,r=CNONCE")
    with pytest.raises(AuthenticationFailed):
        s.step(b"garbage")
    with pytest.raises(errors.IllegalSaslStateError):
        s.step(b"n,,n=alice,r=CNONCE")
    client = ScramClient("SCRAM-SHA-256", "alice", PASSWORD)
    with pytest.raises(errors.IllegalSaslStateError):
        client.step(b"r=x,s=AA==,i=4096")
    s = server(nonce=None)
    assert exchange(client, s)
    with pytest.raises(errors.IllegalSaslStateError):
        s.step(b"c=biws")
    with pytest.raises(errors.IllegalSaslStateError):
        client.first_message()
    assert not s.complete and s.username is None     # a step after completion fails it, as in Kafka
    with pytest.raises(ValueError):
        ScramServer("SCRAM-SHA-256", {}.get, nonce="a,b")
    with pytest.raises(ValueError):
        ScramClient("SCRAM-SHA-256", "", "pw")


def test_authentication_failed_is_kafkas_error_58():
    e = AuthenticationFailed("x")
    assert isinstance(e, errors.SaslAuthenticationFailedError) and errors.code_of(e) == 58
    assert e.client_message("SCRAM-SHA-512", reauthentication=True) == (
        "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")


# --- malformed messages: every one refused with AuthenticationFailed ---

@pytest.mark.parametrize("message", [
    b"", b",", b"n", b"n,", b"n,,", b"n,,n=alice", b"n,,r=CNONCE", b"n,,n=alice,r=", b"n,,n=,r=CNONCE",
    b"n,n=alice,r=CNONCE", b"x,,n=alice,r=CNONCE", b"n,b=alice,n=alice,r=CNONCE", b"n,,n=alice,r=CN\x7fONCE",
    b"n,,n=alice,r=CN ONCE", b"n,,n=\xff\xfe,r=CNONCE", b"n,,n=alice,r=CNONCE,", b"n,,n=alice,r=CNONCE,x",
    b"n,,n=alice,r=CNONCE,1=2", b"n,,n=alice,r=CNONCE,tokenauth=", b"n,,n=al\x00ice,r=CNONCE",
    b"n,,r=CNONCE,n=alice",
])
def test_malformed_client_first(message):
    with pytest.raises(AuthenticationFailed):
        server().step(message)


def valid_final():
    s = server()
    first = s.step(b"n,,n=alice,r=CNONCE")
    return s, manual_final("SCRAM-SHA-256", b"n=alice,r=CNONCE", first)


def test_valid_final_is_valid():
    s, final = valid_final()
    assert s.step(final).startswith(b"v=")


@pytest.mark.parametrize("mutate", [
    lambda f: b"", lambda f: f + b",", lambda f: f + b"=", lambda f: f.replace(b"c=biws", b"c=biw"),
    lambda f: f.replace(b"c=biws,", b""), lambda f: f.replace(b"c=biws", b"c=eSws"),
    lambda f: f.replace(b",p=", b",x=1,q="), lambda f: f[:f.index(b",p=")],
    lambda f: f.replace(b"p=", b"p=AAAA"), lambda f: f[:-4] + b"====", lambda f: f + b"\xff",
    lambda f: f.replace(b"r=", b"n=alice,r="), lambda f: f[:-1], lambda f: f.replace(b"c=", b"C="),
])
def test_malformed_client_final(mutate):
    s, final = valid_final()
    with pytest.raises(AuthenticationFailed):
        s.step(mutate(final))


def test_every_truncation_of_the_final_message_fails():
    _, final = valid_final()
    for n in range(len(final)):
        s, _ = valid_final()
        with pytest.raises(AuthenticationFailed):
            s.step(final[:n])


ATTRISH = st.text(alphabet="nracpsvimey=,+/AZbiwsCNOE0129\x00é", max_size=60)


@given(st.one_of(st.binary(max_size=200), ATTRISH.map(str.encode),
                 ATTRISH.map(lambda t: ("n,," + t).encode()), ATTRISH.map(lambda t: ("n,,n=alice," + t).encode())))
@settings(max_examples=400, deadline=None)
def test_client_first_fuzz(message):
    s = server()
    try:
        out = s.step(message)
    except AuthenticationFailed:
        return
    assert out.startswith(b"r=") and not s.complete


@given(st.one_of(st.binary(max_size=200), ATTRISH.map(str.encode),
                 ATTRISH.map(lambda t: ("c=biws,r=CNONCESNONCE," + t).encode())))
@settings(max_examples=400, deadline=None)
def test_client_final_fuzz(message):
    s = server()
    s.step(b"n,,n=alice,r=CNONCE")
    with pytest.raises(AuthenticationFailed):
        s.step(message)
    assert not s.complete and s.username is None


# --- the client's rules against a hostile or broken server ---

def client_after_first(nonce="CNONCE"):
    c = ScramClient("SCRAM-SHA-256", "alice", PASSWORD, nonce=nonce)
    c.first_message()
    return c


@pytest.mark.parametrize("server_first, match", [
    (b"r=CNONCE,s=c2FsdA==,i=4096", "does not extend"),
    (b"r=XNONCES,s=c2FsdA==,i=4096", "does not extend"),
    (b"r=CNONCES,s=c2FsdA==,i=4095", "less than the minimum 4096"),
    (b"r=CNONCES,s=c2FsdA==,i=0", "less than the minimum"),
    (b"r=CNONCES,s=c2FsdA==,i=16385", "more than the maximum 16384"),
    (b"r=CNONCES,s=c2FsdA==,i=99999999999999999999", "invalid iterations"),
    (b"r=CNONCES,s=c2FsdA==,i=-4096", "invalid iterations"),
    (b"r=CNONCES,s=c2FsdA==,i=4096.0", "invalid iterations"),
    (b"r=CNONCES,s=c2FsdA==", "expected i="),
    (b"r=CNONCES,i=4096", "expected s="),
    (b"s=c2FsdA==,i=4096", "expected r="),
    (b"r=CNONCES,s=,i=4096", "name=value"),
    (b"r=CNONCES,s=c2FsdA,i=4096", "not base64"),
    (b"r=CNONCES,s=c2FsdA==,i=4096,", "name=value"),
    (b"m=x,r=CNONCES,s=c2FsdA==,i=4096", "mandatory extension"),
    (b"r=CNONCES\xff,s=c2FsdA==,i=4096", "not UTF-8"),
    (b"", "name=value"),
])
def test_client_refuses_bad_server_first(server_first, match):
    c = client_after_first()
    with pytest.raises(AuthenticationFailed, match=match):
        c.step(server_first)
    with pytest.raises(errors.IllegalSaslStateError):
        c.verify_server_final(b"v=AAAA")


def test_client_checks_the_server_signature():
    c = client_after_first()
    c.step(b"r=CNONCES,s=c2FsdA==,i=4096,ext=ignored")
    with pytest.raises(AuthenticationFailed, match="Invalid server signature"):
        c.verify_server_final(b"v=" + base64.b64encode(b"\0" * 32))
    for bad in (b"", b"v=", b"v=@@@@", b"x=1", b"e=", b"\xff"):
        c = client_after_first()
        c.step(b"r=CNONCES,s=c2FsdA==,i=4096")
        with pytest.raises(AuthenticationFailed):
            c.verify_server_final(bad)
        assert not c.complete


@given(st.one_of(st.binary(max_size=200), ATTRISH.map(str.encode),
                 ATTRISH.map(lambda t: ("r=CNONCES,s=c2FsdA==," + t).encode())))
@settings(max_examples=300, deadline=None)
def test_server_first_fuzz(message):
    c = client_after_first()
    try:
        out = c.step(message)
    except AuthenticationFailed:
        return
    assert out.startswith(b"c=biws,r=CNONCE")


@given(st.one_of(st.binary(max_size=120), ATTRISH.map(str.encode)))
@settings(max_examples=200, deadline=None)
def test_server_final_fuzz(message):
    c = client_after_first()
    c.step(b"r=CNONCES,s=c2FsdA==,i=4096")
    with pytest.raises(AuthenticationFailed):
        c.verify_server_final(message)
