"""``ssl.principal.mapping.rules``: how a client certificate's subject becomes a principal name,
with Kafka's syntax (KIP-371)::

    rules = rule ("," rule)*
    rule  = DEFAULT | RULE:<regex>/<replacement>/[L|U]

The first rule whose regex matches the whole RFC 2253 subject gives the name: the subject with
every match replaced (``$1`` … refer to the regex's groups; a reference past the last group is
shortened as Kafka does, ``$12`` to ``$1`` with one group), lower- or upper-cased by ``L``/``U``.
``DEFAULT`` keeps the subject as it is. When no rule applies, the client cannot be named and its
connection is refused (:class:`NoMatchingRule`), as in Kafka.

Example::

    >>> m = PrincipalMapper.parse("RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L, DEFAULT")
    >>> m.name("CN=Alice,OU=Sales")
    'alice@sales'
    >>> m.name("CN=bob,O=Acme")
    'CN=bob,O=Acme'
    >>> PrincipalMapper.parse("RULE:^CN=([^,]*).*$/$1/").name("O=Acme")
    Traceback (most recent call last):
    ...
    fastkafka.security.principal_mapping.NoMatchingRule: No rules apply to O=Acme, rules [RULE:^CN=([^,]*).*$/$1/]
"""
from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["PrincipalMapper", "NoMatchingRule"]

# Kafka's grammar (SslPrincipalMapper.RULE_PATTERN): DEFAULT, a RULE, or (a mistake) anything else
_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class NoMatchingRule(ValueError):
    """No rule names this subject: the connection cannot be given a principal."""


def _python_replacement(java: str, groups: int) -> str:
    """A Java ``replaceAll`` replacement (``$n`` groups, ``\\`` escapes) for ``re.sub``."""
    out, i = [], 0
    while i < len(java):
        c = java[i]
        if c == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        m = _BACK_REFERENCE.match(java, i) if c == "$" else None
        if m is None:
            out.append("\\\\" if c == "\\" else c)
            i += 1
            continue
        digits = m.group(1)
        # like Java (and Kafka's literal handling): the longest prefix naming an existing group
        n = len(digits)
        while n > 1 and int(digits[:n]) > groups:
            n -= 1
        if int(digits[:n]) > groups:
            out.append("$" + digits)     # no such group: Kafka leaves it literal
        else:
            out.append(f"\\g<{int(digits[:n])}>" + digits[n:])
        i = m.end()
    return "".join(out)


class _Rule(NamedTuple):
    text: str
    pattern: re.Pattern | None      # None: DEFAULT
    replacement: str
    case: str                       # "", "L" or "U"

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        if not self.pattern.fullmatch(subject):
            return None
        name = self.pattern.sub(self.replacement, subject)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class PrincipalMapper:
    """Immutable: the parsed rules of one ``ssl.principal.mapping.rules`` value."""

    __slots__ = ("rules",)

    def __init__(self, rules: tuple[_Rule, ...]):
        self.rules = rules

    @classmethod
    def parse(cls, text: str | None) -> "PrincipalMapper":
        """ValueError (Kafka's message) for text that is not a list of rules."""
        rules = []
        for found in _SPLITTER.finditer((text or "DEFAULT").strip()):
            rule = found.group(1)
            m = _PARSER.match(rule)
            if m is None or m.end() != len(rule):
                raise ValueError(f"Invalid rule: `{rule}`")
            if m.group(1):
                rules.append(_Rule(rule, None, "", ""))
            elif m.group(2) is not None:
                try:
                    pattern = re.compile(m.group(2))
                except re.error as e:
                    raise ValueError(f"Invalid rule: `{rule}`: {e}") from None
                rules.append(_Rule(rule, pattern, _python_replacement(m.group(3), pattern.groups), m.group(4)))
            elif m.group(5):
                raise ValueError(f"Invalid rule: `{rule}`")
            if found.end() == found.start():
                break
        return cls(tuple(rules))

    def name(self, subject: str) -> str:
        for rule in self.rules:
            name = rule.apply(subject)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {subject}, rules [{', '.join(r.text for r in self.rules)}]")
