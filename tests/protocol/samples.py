"""Test helpers: random sample objects drawn from our schemas, and translation to and from
kafka-python's (independent, JSON-driven) message classes."""
from __future__ import annotations

import importlib
import inspect
import random
import uuid

from fastkafka.protocol.schema import Struct, _MISSING

_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_TEXT = "abcxyz-._é日"


def _int(rng: random.Random, bits: int) -> int:
    edge = [0, -1, 1, -(1 << (bits - 1)), (1 << (bits - 1)) - 1]
    return rng.choice(edge) if rng.random() < 0.3 else rng.randint(-(1 << (bits - 1)),
                                                                    (1 << (bits - 1)) - 1)


def prim(rng, type_):
    if type_ in _INT_RANGES:
        return _int(rng, _INT_RANGES[type_])
    if type_ == "uint16":
        return rng.randint(0, 0xFFFF)
    if type_ == "bool":
        return rng.random() < 0.5
    if type_ == "float64":
        return rng.random()
    if type_ == "string":
        return "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 6)))
    if type_ == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if type_ in ("bytes", "records"):
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 12)))
    raise AssertionError(type_)


def sample(struct: Struct, v: int, rng: random.Random, depth: int = 0):
    """A random instance of ``struct`` with every field of version ``v`` filled."""
    values = {}
    for f in struct.present_fields(v):
        if f.nullable(v) and rng.random() < 0.2:
            values[f.name] = None
        elif f.type == "array":
            n = rng.randint(0, 3 if depth < 2 else 1)
            if f.struct is not None:
                values[f.name] = [sample(f.struct, v, rng, depth + 1) for _ in range(n)]
            else:
                values[f.name] = [prim(rng, f.elem) for _ in range(n)]
        elif f.type == "struct":
            values[f.name] = sample(f.struct, v, rng, depth + 1)
        else:
            values[f.name] = prim(rng, f.type)
    return struct.cls(**values)


def plain(obj):
    """Comparable form: dicts/lists, memoryviews as bytes."""
    if hasattr(obj, "to_dict"):
        return {k: plain(v) for k, v in obj.to_dict().items()}
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(x) for x in obj]
    if isinstance(obj, (memoryview, bytearray)):
        return bytes(obj)
    return obj


# --- kafka-python's classes ------------------------------------------------------------------

def _their_classes():
    found = {}
    for pkg in ("admin", "consumer", "metadata", "producer", "sasl"):
        mod = importlib.import_module(f"kafka.protocol.{pkg}")
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if hasattr(cls, "API_KEY") and getattr(cls, "_json", None):
                try:
                    found[cls.API_KEY, cls.type] = cls
                except Exception:
                    pass
    return found


THEIRS = _their_classes()


def their_class(api_key: int, kind: str):
    return THEIRS[api_key, kind]


# kafka-python renames a few of Kafka's fields; ours keep Kafka's names.
RENAMES = {"topic_authorized_operations": "authorized_operations",
           "cluster_authorized_operations": "authorized_operations"}


def _to_bitfield(x):
    # kafka-python shows authorized-operation bitmasks as sets of bit numbers, {31} as None.
    bits = {i for i in range(32) if (x & 0xFFFFFFFF) >> i & 1}
    return None if bits == {31} else bits


def _from_bitfield(bits):
    x = sum(1 << i for i in ({31} if bits is None else bits))
    return x - (1 << 32) if x >= 1 << 31 else x


def _their_name(name, fields):
    return name if name in fields else RENAMES.get(name, name)


def to_theirs(ours, struct: Struct, v: int, flex: bool, their_data_class):
    kwargs = {}
    fields = their_data_class.fields
    for f in struct.present_fields(v):
        value = getattr(ours, f.name)
        if flex and f.tag is not None:
            default = [] if f.default is _MISSING else f.default
            if value == default:
                continue          # both sides write only non-default tagged fields
        if f.struct is not None and value is not None:
            sub = fields[_their_name(f.name, fields)].data_class
            if f.type == "array":
                value = [to_theirs(x, f.struct, v, flex, sub) for x in value]
            else:
                value = to_theirs(value, f.struct, v, flex, sub)
        if f.name.endswith("authorized_operations") and f.type == "int32":
            value = _to_bitfield(value)
        kwargs[_their_name(f.name, fields)] = value
    return their_data_class(**kwargs)


def from_theirs(theirs, struct: Struct, v: int):
    values = {}
    for f in struct.present_fields(v):
        value = getattr(theirs, _their_name(f.name, theirs.fields))
        if f.name.endswith("authorized_operations") and f.type == "int32":
            value = _from_bitfield(value)
        if f.struct is not None and value is not None:
            if f.type == "array":
                value = [from_theirs(x, f.struct, v) for x in value]
            else:
                value = from_theirs(value, f.struct, v)
        values[f.name] = value
    return struct.cls(**values)
