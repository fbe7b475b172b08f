"""The schema notation every request and response is declared in, and the classes it yields.

One API is declared once with :func:`declare`; each struct is an indented block of field lines::

    name            type        options...

``type`` is a primitive (``int8 int16 int32 int64 uint16 float64 bool string bytes records uuid``),
``[]prim`` (array of a primitive), ``[]`` (array of the struct declared by the indented lines below)
or ``{}`` (one nested struct). Options, in any order:

    v3+  v0-2  v1     versions the field exists in (default v0+)
    null  null4+      nullable in these versions (bare ``null``: wherever the field exists)
    =-1  =null  =true  ="" default used when encoding a missing attribute / decoding an absent field
    tag=N             tagged field (flexible versions only), with this tag
    <src              error responses mirror the request: for an array, one element per element
                      of request field ``src``; for a scalar, copy ``src`` from that element
                      (``<.`` copies the element itself, for arrays of strings)

Field names are Kafka's JSON names in snake_case (``TopicData`` -> ``topic_data``), so they read
the same as Kafka's protocol guide and as kafka-python's message classes.

Objects are instances of generated ``__slots__`` classes, one per struct, whose attributes are the
union of the fields over all versions; fields absent from a version hold their defaults. Nested
struct classes hang off their parent by CamelCase field name. Encoders also accept dicts and
any object with the right attributes.

Example::

    >>> s = parse_struct("ExampleRequest", '''
    ...     topics       []
    ...       name       string
    ...     timeout_ms   int32  v1+  =30000
    ... ''')
    >>> req = s.cls(topics=[s.cls.Topics(name="t")])
    >>> req.timeout_ms, [f.name for f in s.present_fields(0)]
    (30000, ['topics'])

(:func:`declare` does the same for a request/response pair and registers the API.)
"""
from __future__ import annotations

import uuid

from .types import UUID_ZERO, FORMATS

__all__ = ["Field", "Struct", "Api", "declare", "parse_struct", "APIS", "snake"]

PRIMITIVES = frozenset(FORMATS) | {"string", "bytes", "records", "uuid"}
_MISSING = object()
_ANY = (0, 0x7FFF)

# Every declared API by key; filled as the messages modules import.
APIS: dict[int, "Api"] = {}


def snake(name: str) -> str:
    """``TopicData`` -> ``topic_data`` (Kafka JSON names to our attribute names)."""
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def _versions(spec: str) -> tuple[int, int]:
    if spec.endswith("+"):
        return int(spec[:-1]), _ANY[1]
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


class Field:
    """One field: its type, the versions it exists / is nullable / is tagged in, its default."""

    __slots__ = ("name", "type", "elem", "struct", "versions", "nullable_versions",
                 "default", "tag", "src")

    def __init__(self, name, type_, elem=None, struct=None, versions=_ANY,
                 nullable_versions=None, default=_MISSING, tag=None, src=None):
        self.name, self.type, self.elem, self.struct = name, type_, elem, struct
        self.versions, self.nullable_versions = versions, nullable_versions
        self.tag, self.src = tag, src
        self.default = self._natural_default() if default is _MISSING else default

    def _natural_default(self):
        if self.type == "array":
            return _MISSING           # a fresh empty list per object
        if self.type == "struct":
            return _MISSING           # a fresh default instance per object
        return {"string": "", "bytes": b"", "records": None, "uuid": UUID_ZERO,
                "bool": False, "float64": 0.0}.get(self.type, 0)

    def present(self, v: int) -> bool:
        return self.versions[0] <= v <= self.versions[1]

    def nullable(self, v: int) -> bool:
        nv = self.nullable_versions
        return nv is not None and nv[0] <= v <= nv[1]

    def new_default(self):
        if self.default is not _MISSING:
            return self.default
        return [] if self.type == "array" else self.struct.cls()

    def __repr__(self):
        return f"Field({self.name!r}, {self.type!r}, versions={self.versions})"


class Struct:
    """An ordered list of fields and the generated class holding their values."""

    def __init__(self, name: str, fields: list[Field]):
        self.name, self.fields = name, fields
        self.cls = _make_class(self, name)

    def present_fields(self, v: int) -> list[Field]:
        return [f for f in self.fields if f.present(v)]


def _make_class(struct: Struct, name: str) -> type:
    """A ``__slots__`` class with a keyword constructor that fills defaults for missing fields."""
    names = [f.name for f in struct.fields]
    ns = {"_MISSING": _MISSING}
    args, body = [], []
    for i, f in enumerate(struct.fields):
        ns[f"_f{i}"] = f
        if f.default is _MISSING:
            args.append(f"{f.name}=_MISSING")
            body.append(f"    self.{f.name} = _f{i}.new_default() if {f.name} is _MISSING "
                        f"else {f.name}")
        else:
            ns[f"_d{i}"] = f.default
            args.append(f"{f.name}=_d{i}")
            body.append(f"    self.{f.name} = {f.name}")
    src = f"def __init__(self, *, {', '.join(args)}):\n" + ("\n".join(body) or "    pass")
    if not args:
        src = "def __init__(self):\n    pass"
    exec(src, ns)

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__name__}({inner})"

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in names)

    def to_dict(self):
        """Plain dicts and lists all the way down (records stay as they are)."""
        return {n: _plain(getattr(self, n)) for n in names}

    def coerce(cls, obj):
        """Our instance from a dict or any object carrying (some of) the attributes."""
        if type(obj) is cls:
            return obj
        if isinstance(obj, dict):
            unknown = set(obj) - set(names)
            if unknown:
                raise TypeError(f"{cls.__qualname__} has no fields {sorted(unknown)}")
            return cls(**obj)
        return cls(**{n: getattr(obj, n) for n in names if hasattr(obj, n)})

    cls = type(name, (), {
        "__slots__": tuple(names), "__init__": ns["__init__"], "__repr__": __repr__,
        "__eq__": __eq__, "__hash__": None, "to_dict": to_dict, "coerce": classmethod(coerce),
        "_struct": struct, "__module__": __name__,
        "__doc__": f"{name}: " + ", ".join(names),
    })
    for f in struct.fields:
        if f.struct is not None:
            setattr(cls, _camel(f.name), f.struct.cls)
            f.struct.cls.__qualname__ = f"{name}.{_camel(f.name)}"
    return cls


def _plain(v):
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _parse_default(text: str, type_: str):
    if text == "null":
        return None
    if type_ == "bool":
        return {"true": True, "false": False}[text]
    if type_ == "string":
        return text.strip('"')
    if type_ == "uuid":
        return uuid.UUID(text)
    return int(text, 0)


def parse_struct(name: str, text: str) -> Struct:
    """Parse an indented block of field lines into a :class:`Struct` (see the module docs)."""
    lines = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if line.strip():
            lines.append((len(line) - len(line.lstrip()), line.split()))
    if not lines:
        return Struct(name, [])
    pos, struct = _parse_block(name, lines, 0, lines[0][0])
    if pos != len(lines):
        raise SyntaxError(f"{name}: bad indentation near {' '.join(lines[pos][1])!r}")
    return struct


def _parse_block(name, lines, pos, indent):
    fields = []
    while pos < len(lines) and lines[pos][0] == indent:
        tokens = lines[pos][1]
        fname, type_ = tokens[0], tokens[1]
        opts = {}
        for tok in tokens[2:]:
            if tok[0] == "v" and tok[1:2].isdigit():
                opts["versions"] = _versions(tok[1:])
            elif tok.startswith("null"):
                opts["nullable_versions"] = _versions(tok[4:]) if tok[4:] else True
            elif tok.startswith("tag="):
                opts["tag"] = int(tok[4:])
            elif tok.startswith("="):
                opts["default"] = tok[1:]
            elif tok.startswith("<"):
                opts["src"] = tok[1:]
            else:
                raise SyntaxError(f"{name}.{fname}: unknown option {tok!r}")
        if opts.get("nullable_versions") is True:
            opts["nullable_versions"] = opts.get("versions", _ANY)
        pos += 1
        struct = elem = None
        if type_ in ("[]", "{}"):
            if pos >= len(lines) or lines[pos][0] <= indent:
                raise SyntaxError(f"{name}.{fname}: {type_} needs indented fields")
            pos, struct = _parse_block(f"{name}.{_camel(fname)}", lines, pos, lines[pos][0])
            struct.cls.__name__ = _camel(fname)
            kind = "array" if type_ == "[]" else "struct"
        elif type_.startswith("[]"):
            elem, kind = type_[2:], "array"
            if elem not in PRIMITIVES:
                raise SyntaxError(f"{name}.{fname}: unknown element type {elem!r}")
        elif type_ in PRIMITIVES:
            kind = type_
        else:
            raise SyntaxError(f"{name}.{fname}: unknown type {type_!r}")
        if "default" in opts:
            opts["default"] = _parse_default(opts["default"], kind)
        fields.append(Field(fname, kind, elem=elem, struct=struct, **opts))
    if pos < len(lines) and lines[pos][0] > indent:
        raise SyntaxError(f"{name}: unexpected indentation near {' '.join(lines[pos][1])!r}")
    return pos, Struct(name.rsplit(".", 1)[-1], fields)


class Api:
    """One API: key, name, the versions we can decode, and its request/response structs.

    ``first_flexible`` is the first version using compact types and tagged fields (Kafka's
    ``flexibleVersions``); ``None`` if none we declare is flexible.
    """

    def __init__(self, key, name, max_version, first_flexible, request, response, min_version=0):
        self.key, self.name = key, name
        self.min_version, self.max_version = min_version, max_version
        self.first_flexible = first_flexible
        self.request_struct, self.response_struct = request, response
        self.request, self.response = request.cls, response.cls

    def flexible(self, version: int) -> bool:
        return self.first_flexible is not None and version >= self.first_flexible

    def __repr__(self):
        return f"Api({self.key}, {self.name!r}, v{self.min_version}-{self.max_version})"


def declare(key: int, name: str, *, max_version: int, first_flexible: int | None = None,
            request: str, response: str) -> Api:
    """Declare an API from its request and response field blocks and register it in :data:`APIS`."""
    api = Api(key, name, max_version, first_flexible,
              parse_struct(name + "Request", request), parse_struct(name + "Response", response))
    APIS[key] = api
    return api
