"""ssl.principal.mapping.rules (KIP-371): Kafka's rule grammar and its results."""
import pytest

from fastkafka.security.principal_mapping import NoMatchingRule, PrincipalMapper

SUBJECT = "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US"


@pytest.mark.parametrize("rules,expected", [
    ("DEFAULT", SUBJECT),
    ("", SUBJECT),                                                           # unset: DEFAULT
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L", "duke@javasoft"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U", "DUKE@JAVASOFT"),
    ("RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT", "duke"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, DEFAULT", SUBJECT),             # first rule misses
    ("RULE:^CN=([^,]*),(.*)$/$1$12/", "DukeDuke2"),                         # $12 of 2 groups: $1 then 2
    (r"RULE:^CN=([^,]*),.*$/\$1 is $1/", "$1 is Duke"),                       # escaped dollar
    (r"RULE:^CN=(Duke)\,.*$/$1/", "Duke"),                                    # escaped comma in a regex
    ("RULE:^CN=([^,]*),.*$/$3/", "$3"),                                       # no third group: literal
])
def test_rules(rules, expected):
    assert PrincipalMapper.parse(rules).name(SUBJECT) == expected


def test_no_rule_applies():
    with pytest.raises(NoMatchingRule, match="No rules apply to CN=x"):
        PrincipalMapper.parse("RULE:^O=(.*)$/$1/").name("CN=x")


@pytest.mark.parametrize("bad", ["RULE:a/b", "DEFAULT, nonsense", "RULE:(unclosed/$1/"])
def test_malformed_rules_are_refused(bad):
    with pytest.raises(ValueError, match="Invalid rule"):
        PrincipalMapper.parse(bad)
