"""Kafka protocol primitive types: readers, writers and the errors they raise.

Byte layouts (big-endian unless noted; see Kafka's protocol guide, "Protocol Primitive Types"):

    int8/16/32/64, uint16, float64   fixed size, two's complement / IEEE 754
    bool                             int8, 0 = false, anything else = true
    uuid                             16 raw bytes
    string / bytes                   int16 / int32 length, then data; length -1 = null (nullable only)
    compact string / bytes           uvarint (length + 1), then data; 0 = null (flexible versions)
    array                            int32 count (-1 = null), then elements
    compact array                    uvarint (count + 1), 0 = null
    records                          like bytes / compact bytes; kept as a memoryview (never copied)
    tagged fields                    uvarint count, then per field: uvarint tag, uvarint size, data
    uvarint                          little-endian base-128, at most 5 bytes for 32-bit values

Readers take ``(buf, pos)`` where ``buf`` is a ``memoryview`` and return ``(value, new_pos)``.
They check every declared length against the bytes that remain *before* allocating, so a hostile
length fails fast with :class:`ProtocolError`. Writers append to a ``bytearray``.

Example::

    >>> out = bytearray(); write_string(out, "hi"); bytes(out)
    b'\\x00\\x02hi'
    >>> read_string(memoryview(bytes(out)), 0)
    ('hi', 4)
"""
from __future__ import annotations

import struct
import uuid as _uuid

from .. import errors
from ..uuids import UUID_ZERO

__all__ = [
    "ProtocolError", "FramingError", "Region", "UUID_ZERO",
    "read_uvarint", "write_uvarint", "uvarint_size", "skip_tagged_fields", "too_short", "INT16",
]


class ProtocolError(errors.InvalidRequestError):
    """Bytes that do not decode under the schema they claim (Kafka error 42, INVALID_REQUEST).

    The server answers with the error where the API defines one, otherwise it disconnects.
    """


class FramingError(ProtocolError):
    """A frame whose size prefix is negative or above ``socket.request.max.bytes``.

    Such a stream cannot be resynchronised, so the server closes the connection.
    """


class Region:
    """A placeholder for bytes the caller splices into an encoded response (e.g. with sendfile).

    Anything with ``__len__`` works as a region; this class is a convenient default.

    Example::

        >>> r = Region("00000000000000000000.log", position=0, length=4096); len(r)
        4096
    """

    __slots__ = ("source", "position", "length")

    def __init__(self, source, position: int, length: int):
        self.source, self.position, self.length = source, position, length

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"Region({self.source!r}, position={self.position}, length={self.length})"


# One compiled Struct per fixed-size type; generated codecs build wider ones for runs of fields.
FORMATS = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H",
           "float64": "d", "bool": "?"}
SIZES = {k: struct.calcsize(">" + v) for k, v in FORMATS.items()}
# INT16 (a non-flexible string's length): the generated codecs inline it (codec.py)
INT16 = _I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_i16_unpack, _i16_pack = _I16.unpack_from, _I16.pack
_i32_unpack, _i32_pack = _I32.unpack_from, _I32.pack


def too_short(what: str, need: int, have: int) -> ProtocolError:
    """The error for a field of ``need`` bytes with only ``have`` left (generated decoders too)."""
    return ProtocolError(f"{what} needs {need} bytes, {max(have, 0)} remain")


# --- uvarint ---------------------------------------------------------------------------------

def read_uvarint(buf, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes (Kafka's lengths, counts and tags)."""
    result = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise ProtocolError("truncated uvarint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result > 0xFFFFFFFF:
                raise ProtocolError("uvarint exceeds 32 bits")
            return result, pos
        shift += 7
        if shift >= 35:
            raise ProtocolError("uvarint longer than 5 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"uvarint cannot hold {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_size(value: int) -> int:
    n = 1
    while value >= 0x80:
        value >>= 7
        n += 1
    return n


# --- lengths: int16/int32 or compact (uvarint N+1); -1 means null ------------------------------

def read_len16(buf, pos):
    return _i16_unpack(buf, pos)[0], pos + 2


def read_len32(buf, pos):
    return _i32_unpack(buf, pos)[0], pos + 4


def read_clen(buf, pos):
    n, pos = read_uvarint(buf, pos)
    return n - 1, pos


def write_len16(out, n):
    out += _i16_pack(n)


def write_len32(out, n):
    out += _i32_pack(n)


def write_clen(out, n):
    write_uvarint(out, n + 1)


# --- strings and bytes -----------------------------------------------------------------------

def _make_blob_reader(read_len, nullable: bool, kind: str):
    """A reader for string / bytes / records, over a given length encoding."""

    def read(buf, pos):
        n, pos = read_len(buf, pos)
        if n < 0:
            if nullable and n == -1:
                return None, pos
            raise ProtocolError(f"{'invalid' if nullable else 'null'} {kind} length {n}")
        end = pos + n
        if end > len(buf):
            raise too_short(kind, n, len(buf) - pos)
        if kind == "string":
            return str(buf[pos:end], "utf-8"), end
        if kind == "bytes":
            return bytes(buf[pos:end]), end
        return buf[pos:end], end          # records: zero-copy view of the request buffer

    read.__name__ = f"read_{'compact_' if read_len is read_clen else ''}" \
                    f"{'nullable_' if nullable else ''}{kind}"
    return read


def _make_blob_writer(write_len, nullable: bool, kind: str):
    def write(out, v):
        if v is None:
            if not nullable:
                raise ProtocolError(f"null {kind} in a non-nullable field")
            write_len(out, -1)
            return
        if kind == "string":
            v = v.encode("utf-8")
        write_len(out, len(v))
        out += v

    return write


READERS = {}
WRITERS = {}
for _compact, (_rl16, _rl32, _wl16, _wl32) in (
        (False, (read_len16, read_len32, write_len16, write_len32)),
        (True, (read_clen, read_clen, write_clen, write_clen))):
    for _nullable in (False, True):
        READERS["string", _compact, _nullable] = _make_blob_reader(_rl16, _nullable, "string")
        READERS["bytes", _compact, _nullable] = _make_blob_reader(_rl32, _nullable, "bytes")
        READERS["records", _compact, _nullable] = _make_blob_reader(_rl32, True, "records")
        WRITERS["string", _compact, _nullable] = _make_blob_writer(_wl16, _nullable, "string")
        WRITERS["bytes", _compact, _nullable] = _make_blob_writer(_wl32, _nullable, "bytes")
read_string = READERS["string", False, False]
write_string = WRITERS["string", False, False]


def read_uuid(buf, pos):
    end = pos + 16
    if end > len(buf):
        raise too_short("uuid", 16, len(buf) - pos)
    return _uuid.UUID(bytes=bytes(buf[pos:end])), end


def write_uuid(out, v):
    out += v.bytes


READERS["uuid", False, False] = READERS["uuid", True, False] = read_uuid
WRITERS["uuid", False, False] = WRITERS["uuid", True, False] = write_uuid


def records_length(v) -> int:
    """Bytes a records value occupies: bytes-like, a region (anything with len), or a list of them."""
    if isinstance(v, (list, tuple)):
        return sum(map(len, v))
    if isinstance(v, memoryview):
        return v.nbytes
    return len(v)


def write_records(out: bytearray, regions: list, v, compact: bool) -> None:
    """Write a records field. Regions are recorded as ``(offset_in_out, region)`` to splice later."""
    if v is None:
        (write_clen if compact else write_len32)(out, -1)
        return
    (write_clen if compact else write_len32)(out, records_length(v))
    for part in (v if isinstance(v, (list, tuple)) else (v,)):
        if isinstance(part, (bytes, bytearray, memoryview)):
            out += part
        else:
            regions.append((len(out), part))


# --- arrays: int32 count or compact uvarint (count + 1); -1 means null ------------------------
# Every array codec (these, and the inline struct-array code codec.py generates) reads and writes
# its count through the two functions below. They read/write the length themselves rather than
# call read_len32/read_clen, so an array costs the same number of calls as with inline checks.

def array_count_reader(compact: bool, nullable: bool, min_size: int, what: str):
    """``count(buf, pos) -> (n, pos)``: an array's element count, ``None`` for a null array.

    A negative count other than a nullable array's -1 is rejected, and so is a count whose
    elements (at least ``min_size`` bytes each) cannot fit in the bytes left, before anything is
    allocated for them.
    """
    def count(buf, pos):
        if compact:
            n, pos = read_uvarint(buf, pos)
            n -= 1
        else:
            n = _i32_unpack(buf, pos)[0]
            pos += 4
        if n < 0:
            if nullable and n == -1:
                return None, pos
            raise ProtocolError(f"invalid length {n} of {'' if nullable else 'non-nullable '}{what}")
        if n * min_size > len(buf) - pos:
            raise too_short(f"{what}[{n}]", n * min_size, len(buf) - pos)
        return n, pos

    return count


def array_count_writer(compact: bool, nullable: bool, what: str):
    """``count(out, v) -> bool``: writes the count of array ``v`` (-1 for None); False if null."""
    def count(out, v):
        if v is None:
            if not nullable:
                raise ProtocolError(f"null {what} in a non-nullable field")
            n = -1
        else:
            n = len(v)
        if compact:
            write_uvarint(out, n + 1)
        else:
            out += _i32_pack(n)
        return v is not None

    return count


def make_prim_array_reader(type_name: str, compact: bool, nullable: bool):
    """Array of a fixed-size primitive: one struct call for the whole array."""
    fmt, size = FORMATS[type_name], SIZES[type_name]
    count = array_count_reader(compact, nullable, size, f"{type_name} array")
    unpack_from = struct.unpack_from

    def read(buf, pos):
        n, pos = count(buf, pos)
        if n is None:
            return None, pos
        return list(unpack_from(f">{n}{fmt}", buf, pos)), pos + n * size

    return read


def make_prim_array_writer(type_name: str, compact: bool, nullable: bool):
    fmt = FORMATS[type_name]
    count = array_count_writer(compact, nullable, f"{type_name} array")
    pack = struct.pack

    def write(out, v):
        if count(out, v):
            out += pack(f">{len(v)}{fmt}", *v)

    return write


def make_array_reader(elem_read, compact: bool, nullable: bool, min_size: int):
    """Array of variable-size elements (strings); ``min_size`` bounds the count by bytes left."""
    count = array_count_reader(compact, nullable, min_size, "array")

    def read(buf, pos):
        n, pos = count(buf, pos)
        if n is None:
            return None, pos
        items = []
        append = items.append
        for _ in range(n):
            v, pos = elem_read(buf, pos)
            append(v)
        return items, pos

    return read


def make_array_writer(elem_write, compact: bool, nullable: bool):
    count = array_count_writer(compact, nullable, "array")

    def write(out, v):
        if count(out, v):
            for x in v:
                elem_write(out, x)

    return write


# --- tagged fields -----------------------------------------------------------------------------

def read_tagged_fields(buf, pos, known: dict) -> tuple[dict, int]:
    """Read a tagged-field section; ``known`` maps tag -> reader. Unknown tags are skipped."""
    count, pos = read_uvarint(buf, pos)
    values = {}
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise too_short(f"tagged field {tag}", size, len(buf) - pos)
        reader = known.get(tag)
        if reader is not None:
            # Decode inside the declared size so a lying inner length cannot run past it.
            values[tag], _ = reader(buf[:end], pos)
        pos = end
    return values, pos


def skip_tagged_fields(buf, pos) -> int:
    """Skip a tagged-field section whose tags are all unknown to this version."""
    if pos < len(buf) and buf[pos] == 0:    # the common case: no tagged fields
        return pos + 1
    return read_tagged_fields(buf, pos, {})[1]


def write_tagged_fields(out: bytearray, fields) -> None:
    """``fields``: (tag, writer, value) for fields whose value differs from its default, by tag."""
    write_uvarint(out, len(fields))
    for tag, writer, value in fields:
        data = bytearray()
        writer(data, value)
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data
