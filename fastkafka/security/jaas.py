"""Kafka's ``sasl.jaas.config`` value: a JAAS login-module entry (Kafka's JaasConfig grammar).

    config  = entry+
    entry   = login-module-class control-flag (name "=" value)* ";"
    control-flag = required | requisite | sufficient | optional      ; any case
    value   = word | "double-quoted" | 'single-quoted'
    word    = letters, digits and _ - $ .
    comments: // to the end of the line, /* ... */

Quoted values take Java's escapes (``\\"``, ``\\\\``, ``\\n``, ``\\t``, octal ``\\101``, any other
``\\x`` is ``x``). A repeated option keeps its last value, as Kafka does. Malformed text raises
``ValueError`` with Kafka's message where it has one. Unlike Kafka, an unquoted value may start
with a digit (Kafka's tokenizer would read it as a number and refuse it).
"""
from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["JaasEntry", "parse_jaas_entries", "parse_jaas_config", "plain_users"]

CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")
USER_PREFIX = "user_"      # PlainLoginModule's per-user password options on the broker

# one token per match: skipped space/comments, a word, a quoted string, or one punctuation char
_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<word>[\w$.\-]+)
  | (?P<quote>["'])
  | (?P<punct>[=;])
""", re.VERBOSE | re.DOTALL)
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_OCTAL = re.compile(r"[0-3][0-7]{0,2}|[4-7][0-7]?")


class JaasEntry(NamedTuple):
    """One login-module entry: its class, its control flag (lower case) and its options."""

    login_module: str
    control_flag: str
    options: dict[str, str]


def _quoted(text: str, pos: int, quote: str) -> tuple[str, int]:
    """The string starting after the opening ``quote`` at ``pos``, and the position after it."""
    out = []
    while pos < len(text):
        ch = text[pos]
        if ch == quote:
            return "".join(out), pos + 1
        if ch in "\r\n":
            break
        if ch == "\\" and pos + 1 < len(text):
            if m := _OCTAL.match(text, pos + 1):
                out.append(chr(int(m.group(), 8)))
                pos = m.end()
                continue
            nxt = text[pos + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            pos += 2
            continue
        out.append(ch)
        pos += 1
    raise ValueError("Unterminated quoted value in JAAS config")


def _tokens(text: str):
    """(kind, value) pairs: kind is "word" (bare or quoted) or the punctuation itself."""
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text.startswith("/*", pos):
                raise ValueError("Unterminated comment in JAAS config")
            raise ValueError(f"Unexpected character {text[pos]!r} at position {pos} in JAAS config")
        pos = m.end()
        if m.lastgroup == "word":
            yield "word", m.group()
        elif m.lastgroup == "quote":
            value, pos = _quoted(text, pos, m.group())
            yield "word", value
        elif m.lastgroup == "punct":
            yield m.group(), m.group()


def parse_jaas_entries(text: str) -> list[JaasEntry]:
    """Every entry of a JAAS config value (a JAAS file section's body has the same grammar).

    >>> [e.login_module for e in parse_jaas_entries("a.A required; b.B optional x=1;")]
    ['a.A', 'b.B']
    """
    tokens = list(_tokens(text))
    entries: list[JaasEntry] = []
    i = 0

    def word(at: int) -> str | None:
        return tokens[at][1] if at < len(tokens) and tokens[at][0] == "word" else None

    while i < len(tokens):
        module = word(i)
        if module is None:
            raise ValueError("Login module not specified in JAAS config")
        flag = word(i + 1)
        if flag is None:
            raise ValueError("Login module control flag not specified in JAAS config")
        if flag.lower() not in CONTROL_FLAGS:
            raise ValueError(f"Invalid login module control flag '{flag}' in JAAS config")
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            key = word(i)
            if key is None:
                raise ValueError(f"Unexpected {tokens[i][1]!r} where an option name belongs in JAAS config")
            if i + 1 >= len(tokens) or tokens[i + 1][0] != "=" or word(i + 2) is None:
                raise ValueError(f"Value not specified for key '{key}' in JAAS config")
            options[key] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ValueError("JAAS config entry not terminated by semi-colon")
        i += 1
        entries.append(JaasEntry(module, flag.lower(), options))
    if not entries:
        raise ValueError("Login module not specified in JAAS config")
    return entries


def parse_jaas_config(text: str) -> JaasEntry:
    """The one entry of a ``sasl.jaas.config`` value (Kafka allows exactly one).

    >>> module, flag, options = parse_jaas_config(
    ...     'org.apache.kafka.common.security.plain.PlainLoginModule required '
    ...     'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
    >>> module, flag, options["username"]
    ('org.apache.kafka.common.security.plain.PlainLoginModule', 'required', 'admin')
    >>> parse_jaas_config('x.Y required username="admin"')
    Traceback (most recent call last):
    ...
    ValueError: JAAS config entry not terminated by semi-colon
    """
    entries = parse_jaas_entries(text)
    if len(entries) != 1:
        raise ValueError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]


def plain_users(options: dict[str, str]) -> dict[str, str]:
    """The broker's PLAIN users: ``user_<name>="<password>"`` options as ``{name: password}``.

    >>> plain_users({"username": "admin", "user_admin": "admin-secret", "user_alice": "alice-secret"})
    {'admin': 'admin-secret', 'alice': 'alice-secret'}
    """
    return {k[len(USER_PREFIX):]: v for k, v in options.items()
            if k.startswith(USER_PREFIX) and len(k) > len(USER_PREFIX)}
