"""``sasl.jaas.config`` values: the examples of Kafka's security documentation, Java's quoting
rules, and Kafka's errors for malformed text."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastkafka.security import parse_jaas_config, parse_jaas_entries, plain_users

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_broker_plain_example():
    """docs/security.html: listener.name.sasl_ssl.plain.sasl.jaas.config (the properties file's
    backslash continuations already joined), and the same across lines."""
    joined = (f'{PLAIN} required username="admin" password="admin-secret" '
              'user_admin="admin-secret" user_alice="alice-secret";')
    multiline = (f'{PLAIN} required\n    username="admin"\n    password="admin-secret"\n'
                 '    user_admin="admin-secret"\n    user_alice="alice-secret";')
    for text in (joined, multiline):
        module, flag, options = parse_jaas_config(text)
        assert (module, flag) == (PLAIN, "required")
        assert options == {"username": "admin", "password": "admin-secret",
                           "user_admin": "admin-secret", "user_alice": "alice-secret"}
        assert plain_users(options) == {"admin": "admin-secret", "alice": "alice-secret"}


@pytest.mark.parametrize("text, module, options", [
    (f'{SCRAM} required username="admin" password="admin-secret";', SCRAM,
     {"username": "admin", "password": "admin-secret"}),
    (f'{SCRAM} required username="tokenID123" password="lAYYSFmLs4bTjf+lTZ1LCHR/ZZFNA==" tokenauth="true";',
     SCRAM, {"username": "tokenID123", "password": "lAYYSFmLs4bTjf+lTZ1LCHR/ZZFNA==", "tokenauth": "true"}),
    (('com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true  '
      'keyTab="/etc/security/keytabs/kafka_client.keytab" principal="kafka-client-1@EXAMPLE.COM";'),
     "com.sun.security.auth.module.Krb5LoginModule",
     {"useKeyTab": "true", "storeKey": "true", "keyTab": "/etc/security/keytabs/kafka_client.keytab",
      "principal": "kafka-client-1@EXAMPLE.COM"}),
    ("com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true;",
     "com.sun.security.auth.module.Krb5LoginModule", {"useTicketCache": "true"}),
    (('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
      'unsecuredLoginStringClaim_sub="alice";'),
     "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", {"unsecuredLoginStringClaim_sub": "alice"}),
    (f"{PLAIN} required;", PLAIN, {}),
])
def test_docs_examples(text, module, options):
    assert parse_jaas_config(text) == (module, "required", options)


def test_quoting_and_comments():
    text = (f"{PLAIN} REQUIRED // the flag is case-insensitive\n"
            r'''a="x\"y" b='it''' + r"""\'s' c="back\\slash" d="tab\tnl\n" e="\101\60\0" f="\q" """
            "/* a block\n comment */ g = \"semi;colon = // not a comment\" h=$x-y_z.1 i=\"\" 'j'=k ;")
    module, flag, options = parse_jaas_config(text)
    assert (module, flag) == (PLAIN, "required")
    assert options == {"a": 'x"y', "b": "it's", "c": "back\\slash", "d": "tab\tnl\n", "e": "A0\0", "f": "q",
                       "g": "semi;colon = // not a comment", "h": "$x-y_z.1", "i": "", "j": "k"}


def test_flags_and_repeated_options():
    for flag in ("required", "Requisite", "SUFFICIENT", "optional"):
        assert parse_jaas_config(f"x.Y {flag};").control_flag == flag.lower()
    assert parse_jaas_config('x.Y required a="1" a="2";').options == {"a": "2"}   # Kafka's HashMap


def test_several_entries():
    entries = parse_jaas_entries(f'{PLAIN} required user_a="1"; {SCRAM} sufficient username=u password=p;')
    assert [(e.login_module, e.control_flag) for e in entries] == [(PLAIN, "required"), (SCRAM, "sufficient")]
    with pytest.raises(ValueError, match="contains 2 login modules, should be 1 module"):
        parse_jaas_config(f"{PLAIN} required; {SCRAM} required;")


@pytest.mark.parametrize("text, match", [
    ("", "Login module not specified"),
    ("  // only a comment", "Login module not specified"),
    (";", "Login module not specified"),
    (PLAIN, "control flag not specified"),
    (f"{PLAIN};", "control flag not specified"),
    (f"{PLAIN} mandatory;", "Invalid login module control flag 'mandatory'"),
    (f'{PLAIN} required username="admin"', "not terminated by semi-colon"),
    (f"{PLAIN} required username=;", "Value not specified for key 'username'"),
    (f"{PLAIN} required username;", "Value not specified for key 'username'"),
    (f"{PLAIN} required username admin;", "Value not specified for key 'username'"),
    (f"{PLAIN} required username=a=b;", "Unexpected '=' where an option name belongs"),
    (f'{PLAIN} required username="admin;', "Unterminated quoted value"),
    (f'{PLAIN} required username="ad\nmin";', "Unterminated quoted value"),
    (f'{PLAIN} required /* username="admin";', "Unterminated comment"),
    (f'{PLAIN} required username="a", password="b";', "Unexpected character ','"),
    (f"{PLAIN} required = x;", "where an option name belongs"),
    (f'{PLAIN} required user{{}}="x";', "Unexpected character '{'"),
])
def test_malformed(text, match):
    with pytest.raises(ValueError, match=match):
        parse_jaas_config(text)


def test_plain_users_ignores_other_options():
    assert plain_users({"user_": "x", "username": "admin", "password": "p", "user_bob": ""}) == {"bob": ""}


@given(st.one_of(st.text(max_size=80),
                 st.lists(st.sampled_from(["x.Y", " ", "required", "a", "=", ";", '"', "'", "\\", "/*", "*/",
                                           "//", "\n", "v1", "é"]), max_size=12).map("".join)))
@settings(max_examples=400, deadline=None)
def test_random_text_parses_or_raises_value_error(text):
    try:
        entries = parse_jaas_entries(text)
    except ValueError:
        return
    assert entries and all(e.control_flag in ("required", "requisite", "sufficient", "optional") for e in entries)
