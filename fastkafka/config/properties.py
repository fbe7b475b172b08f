"""Java ``.properties`` files (``server.properties``, a tool's ``--command-config``) and the
``KEY=VALUE`` items of command lines (``--override``, ``--conf``)."""
from __future__ import annotations

__all__ = ["load_properties", "parse_key_values"]


def parse_key_values(items: list[str], flag: str) -> dict[str, str]:
    """``["a=1", "b.c = x=y"]`` -> ``{"a": "1", "b.c": "x=y"}``; ValueError names a malformed item
    and the ``flag`` it came with.

    >>> parse_key_values(["a=1", "b.c = x=y"], "--override")
    {'a': '1', 'b.c': 'x=y'}
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{flag} needs KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            i += 1
            c = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(s[i], s[i])
        out.append(c)
        i += 1
    return "".join(out)


def load_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments;
    a trailing backslash continues the line.

    >>> load_properties("# c\\nlog.dirs = /a,\\\\\\n   /b\\nbroker.id: 3\\n")
    {'log.dirs': '/a,/b', 'broker.id': '3'}
    """
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.lstrip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        # an odd number of trailing backslashes continues the line
        stripped = line.rstrip("\r\n")
        n_bs = len(stripped) - len(stripped.rstrip("\\"))
        if n_bs % 2 == 1:
            logical += stripped[:-1]
            continue
        logical += stripped
        key, value = _split_property(logical)
        props[_unescape(key)] = _unescape(value)
        logical = ""
    if logical:
        key, value = _split_property(logical)
        props[_unescape(key)] = _unescape(value)
    return props


def _split_property(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t")
    return key, rest


