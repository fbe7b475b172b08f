"""Encoders and decoders generated from the schemas, one specialised function per struct and version.

For every (struct, version) we emit Python source and ``exec`` it once at import: runs of
fixed-size fields become a single precompiled ``struct.Struct`` call, variable-size fields call the
readers/writers of :mod:`.types`, and arrays of structs loop inline. Nothing runs per record:
a records field is a ``memoryview`` slice on decode and bytes or a :class:`~.types.Region` on
encode, which is why :class:`Codec.encode_response` returns chunks instead of one buffer.

Decoders read a ``memoryview`` and raise only :class:`~.types.ProtocolError` (any ``struct.error``
or bad UTF-8 from a short or hostile buffer is converted once, at the top).
"""
from __future__ import annotations

import struct
from typing import Any

from .. import errors
from . import types as T
from .headers import read_response_header, response_header_version, request_header_version, \
    write_request_header, write_response_header
from .schema import APIS, Field, Struct, _MISSING

__all__ = ["Codec", "codec_for", "CODECS", "decode_struct", "encode_struct"]

_SIZE = struct.Struct(">i")
# where an encoder left file regions (sendfile ranges) to splice in: (offset in the output, region)
Regions = list[tuple[int, Any]]
_DECODE_ERRORS = (struct.error, ValueError, IndexError, OverflowError, RecursionError)
# Non-flexible strings, bytes and records: their int16/int32 length is generated inline (it joins
# the run of fixed-size fields before it, so a records field costs no call of its own) and so are
# the checks and the slice, which a request's few strings otherwise pay four calls each for.
_BLOB_LENGTH = {"string": "h", "bytes": "i", "records": "i"}
_BLOB_VALUE = {"string": "str(buf[pos:end], 'utf-8')", "bytes": "bytes(buf[pos:end])", "records": "buf[pos:end]"}
_ENCODE_ERRORS = (struct.error, ValueError, OverflowError, TypeError, AttributeError)


def min_size(s: Struct, v: int, flex: bool) -> int:
    """The fewest bytes one encoded ``s`` can take: bounds array counts by the bytes left."""
    total = 1 if flex else 0
    for f in s.fields:
        if not f.present(v) or (flex and f.tag is not None):
            continue
        if f.type in T.SIZES:
            total += T.SIZES[f.type]
        elif f.type == "uuid":
            total += 16
        elif f.type == "struct":
            total += 1 if f.nullable(v) else min_size(f.struct, v, flex)
        else:
            total += 1 if flex else (2 if f.type == "string" else 4)
    return max(total, 1)


class _Gen:
    """Generates and caches the decoder / encoder of each (struct, version, flexible)."""

    def __init__(self):
        self._dec: dict = {}
        self._enc: dict = {}

    # --- per-field readers/writers for variable-size and tagged fields --------------------------

    def reader(self, f: Field, v: int, flex: bool):
        nullable = f.nullable(v)
        if f.type in T.SIZES:
            one = struct.Struct(">" + T.FORMATS[f.type])
            size = one.size
            return lambda buf, pos: (one.unpack_from(buf, pos)[0], pos + size)
        if f.type == "struct":
            dec = self.decoder(f.struct, v, flex)
            return _nullable_struct_reader(dec) if nullable else dec
        if f.type == "array":
            if f.struct is not None:
                return T.make_array_reader(self.decoder(f.struct, v, flex), flex, nullable,
                                           min_size(f.struct, v, flex))
            if f.elem in T.SIZES:
                return T.make_prim_array_reader(f.elem, flex, nullable)
            elem = T.READERS[f.elem, flex, False]
            return T.make_array_reader(elem, flex, nullable, 1 if flex else 2)
        return T.READERS[f.type, flex, nullable]

    def writer(self, f: Field, v: int, flex: bool):
        nullable = f.nullable(v)
        if f.type in T.SIZES:
            pack = struct.Struct(">" + T.FORMATS[f.type]).pack
            return lambda out, x: out.extend(pack(x))
        if f.type == "struct":
            enc = self.encoder(f.struct, v, flex)
            if nullable:
                return lambda out, x: out.append(0xFF) if x is None else (out.append(1), enc(x, out, []))
            return lambda out, x: enc(x, out, [])
        if f.type == "array":
            if f.struct is not None:
                enc = self.encoder(f.struct, v, flex)
                return T.make_array_writer(lambda out, x: enc(x, out, []), flex, nullable)
            if f.elem in T.SIZES:
                return T.make_prim_array_writer(f.elem, flex, nullable)
            return T.make_array_writer(T.WRITERS[f.elem, flex, False], flex, nullable)
        if f.type == "records":
            return lambda out, x: T.write_records(out, [], x, flex)
        return T.WRITERS[f.type, flex, nullable]

    # --- decoders --------------------------------------------------------------------------

    def decoder(self, s: Struct, v: int, flex: bool):
        key = (id(s), v, flex)
        fn = self._dec.get(key)
        if fn is None:
            fn = self._dec[key] = self._gen_decoder(s, v, flex)
        return fn

    def _gen_decoder(self, s: Struct, v: int, flex: bool):
        ns = {"_C": s.cls, "_PE": T.ProtocolError, "_MISSING": _MISSING, "_short": T.too_short,
              "_rlen": T.read_clen if flex else T.read_len32,
              "_rtags": T.read_tagged_fields, "_skip": T.skip_tagged_fields}
        body: list[str] = []
        run: list = []
        known: dict = {}

        def flush():
            if run:
                st = struct.Struct(">" + "".join(fmt for fmt, _ in run))
                name = f"_s{len(body)}"
                ns[name] = st
                body.append(f"{', '.join(var for _, var in run)}, = {name}.unpack_from(buf, pos)")
                body.append(f"pos += {st.size}")
                run.clear()

        for i, f in enumerate(s.fields):
            if not f.present(v):
                continue
            var = f"v{i}"
            if flex and f.tag is not None:
                known[f.tag] = self.reader(f, v, flex)
                ns[f"_d{i}"] = _MISSING if f.default is _MISSING else f.default
                body.append(f"__TAG__{var} = _t.get({f.tag}, _d{i})")
                continue
            if f.type in T.SIZES:
                run.append((T.FORMATS[f.type], var))
                continue
            if not flex and f.type in _BLOB_LENGTH:
                run.append((_BLOB_LENGTH[f.type], "n"))
                flush()
                body += _blob_lines(var, f.type, f.type == "records" or f.nullable(v))
                continue
            flush()
            if f.type == "array" and f.struct is not None:
                ns[f"_e{i}"] = self.decoder(f.struct, v, flex)
                null_ok = f.nullable(v)
                if flex:
                    flush()
                    body.append("n, pos = _rlen(buf, pos)")
                else:                   # the int32 count joins the fixed-size run before it
                    run.append(("i", "n"))
                    flush()
                body.append("if n < 0:")
                body += ["    if n != -1: raise _PE('invalid array length %d' % n)",
                         f"    {var} = None"] if null_ok else \
                    [f"    raise _PE('invalid length %d of non-nullable {f.name}' % n)"]
                body += [
                    "else:",
                    f"    if n * {min_size(f.struct, v, flex)} > len(buf) - pos:",
                    f"        raise _PE('array of %d {f.name} exceeds the buffer' % n)",
                    f"    {var} = []",
                    f"    _a = {var}.append",
                    "    for _ in range(n):",
                    f"        x, pos = _e{i}(buf, pos)",
                    "        _a(x)",
                ]
            else:
                ns[f"_r{i}"] = self.reader(f, v, flex)
                body.append(f"{var}, pos = _r{i}(buf, pos)")
        flush()
        if flex:
            ns["_known"] = known
            tag_lines = [b[7:] for b in body if b.startswith("__TAG__")]
            body = [b for b in body if not b.startswith("__TAG__")]
            if known:
                body.append("_t, pos = _rtags(buf, pos, _known)")
                body += tag_lines
            else:
                body.append("pos = _skip(buf, pos)")
        # filled field by field, not through the keyword constructor (a third of a small
        # request's decoding was spent parsing constructor keywords); same values and defaults
        ns["_new"] = object.__new__
        body.append("o = _new(_C)")
        for i, f in enumerate(s.fields):
            ns[f"_f{i}"] = f
            if not f.present(v):
                ns[f"_a{i}"] = f.default
                body.append(f"o.{f.name} = _f{i}.new_default()" if f.default is _MISSING else
                            f"o.{f.name} = _a{i}")
            elif flex and f.tag is not None and f.default is _MISSING:
                body.append(f"o.{f.name} = _f{i}.new_default() if v{i} is _MISSING else v{i}")
            else:
                body.append(f"o.{f.name} = v{i}")
        body.append("return o, pos")
        return _compile("_decode", "buf, pos", body, ns, f"decode {s.name} v{v}")

    # --- encoders --------------------------------------------------------------------------

    def encoder(self, s: Struct, v: int, flex: bool):
        key = (id(s), v, flex)
        fn = self._enc.get(key)
        if fn is None:
            fn = self._enc[key] = self._gen_encoder(s, v, flex)
        return fn

    def _gen_encoder(self, s: Struct, v: int, flex: bool):
        ns = {"_C": s.cls, "_PE": T.ProtocolError, "_wrec": T.write_records,
              "_wlen": T.write_clen if flex else T.write_len32, "_wtags": T.write_tagged_fields}
        body = ["if o.__class__ is not _C: o = _C.coerce(o)"]
        run: list = []
        tagged: list = []

        def flush():
            if run:
                st = struct.Struct(">" + "".join(T.FORMATS[f.type] for f in run))
                name = f"_s{len(body)}"
                ns[name] = st
                body.append(f"out += {name}.pack({', '.join('o.' + f.name for f in run)})")
                run.clear()

        for i, f in enumerate(s.fields):
            if not f.present(v):
                continue
            if flex and f.tag is not None:
                tagged.append((i, f))
                continue
            if f.type in T.SIZES:
                run.append(f)
                continue
            flush()
            if f.type == "records":
                body.append(f"_wrec(out, regions, o.{f.name}, {flex})")
            elif f.type in ("array", "struct") and f.struct is not None:
                ns[f"_e{i}"] = self.encoder(f.struct, v, flex)
                if f.type == "struct":
                    if f.nullable(v):      # Kafka's nullable struct: int8 -1 for null, 1 before one
                        body += [f"x = o.{f.name}", "if x is None: out.append(0xFF)",
                                 f"else: out.append(1); _e{i}(x, out, regions)"]
                    else:
                        body.append(f"_e{i}(o.{f.name}, out, regions)")
                    continue
                body += [f"x = o.{f.name}", "if x is None:"]
                body.append("    _wlen(out, -1)" if f.nullable(v) else
                            f"    raise _PE('null {f.name} in a non-nullable array')")
                body += ["else:", "    _wlen(out, len(x))",
                         f"    for e in x: _e{i}(e, out, regions)"]
            elif not flex and f.type == "string":
                ns["_sh"] = T.INT16
                body += [f"x = o.{f.name}", "if x is None:"]
                body.append("    out += b'\\xff\\xff'" if f.nullable(v) else
                            "    raise _PE('null string in a non-nullable field')")
                body += ["else:", "    x = x.encode('utf-8')", "    out += _sh.pack(len(x))", "    out += x"]
            else:
                ns[f"_w{i}"] = self.writer(f, v, flex)
                body.append(f"_w{i}(out, o.{f.name})")
        flush()
        if flex:
            if tagged:
                # most objects set none of their tagged fields (KIP-951's leader hints, only on
                # refused partitions): then the count byte alone, without a list or a call
                conds, lines = [], []
                for i, f in sorted(tagged, key=lambda p: p[1].tag):
                    ns[f"_w{i}"] = self.writer(f, v, flex)
                    ns[f"_d{i}"] = f.default
                    cond = (f"o.{f.name}" if f.default is _MISSING else
                            f"o.{f.name} is not None" if f.default is None else f"o.{f.name} != _d{i}")
                    conds.append(f"({cond})")
                    lines.append(f"    if {cond}: tf.append(({f.tag}, _w{i}, o.{f.name}))")
                body += [f"if {' or '.join(conds)}:", "    tf = []", *lines, "    _wtags(out, tf)",
                         "else:", "    out.append(0)"]
            else:
                body.append("out.append(0)")
        return _compile("_encode", "o, out, regions", body, ns, f"encode {s.name} v{v}")


def _nullable_struct_reader(dec):
    """Kafka's nullable struct: an int8, -1 for null (then nothing), else the struct follows."""
    def read(buf, pos):
        if pos >= len(buf):
            raise T.ProtocolError("a nullable struct's marker is missing")
        if buf[pos] == 0xFF:
            return None, pos + 1
        return dec(buf, pos + 1)
    return read


def _blob_lines(var: str, kind: str, nullable: bool) -> list[str]:
    """Generated lines reading a non-flexible string/bytes/records whose length is already in ``n``
    (the errors are those of the :mod:`.types` readers)."""
    return [
        "if n < 0:",
        "    if n != -1: raise _PE('invalid %s length %d' % ('" + kind + "', n))" if nullable else
        "    raise _PE('null %s length %d' % ('" + kind + "', n))",
        f"    {var} = None",
        "else:",
        "    end = pos + n",
        f"    if end > len(buf): raise _short('{kind}', n, len(buf) - pos)",
        f"    {var} = {_BLOB_VALUE[kind]}",
        "    pos = end",
    ]


def _compile(name, args, body, ns, what):
    src = f"def {name}({args}):\n" + "\n".join("    " + line for line in body) + "\n"
    code = compile(src, f"<{what}>", "exec")
    exec(code, ns)
    fn = ns[name]
    fn.__qualname__ = what.replace(" ", "_")
    fn.source = src      # for debugging: print(codec_for(0, 3)._dec_req.source)
    return fn


_GEN = _Gen()


def _splice(out: bytearray, regions: Regions) -> list:
    """Cut ``out`` at each region's offset: [bytes, region, bytes, region, ...]."""
    if not regions:
        return [out]
    view, chunks, prev = memoryview(out), [], 0
    for at, region in regions:
        if at > prev:
            chunks.append(view[prev:at])
        chunks.append(region)
        prev = at
    if prev < len(out):
        chunks.append(view[prev:])
    return chunks


class Codec:
    """The generated functions of one (api, version), plus framing of whole messages.

    Example::

        >>> c = codec_for(18, 0)              # ApiVersions v0
        >>> frame = c.encode_request(7, c.api.request(), client_id="me")
        >>> c.decode_request(memoryview(frame)[4 + 2 + 2 + 4 + 2 + 2:]).__class__.__name__
        'ApiVersionsRequest'
    """

    __slots__ = ("api", "version", "flexible", "request_header_version",
                 "response_header_version", "_dec_req", "_enc_req", "_dec_resp", "_enc_resp")

    def __init__(self, api, version: int):
        self.api, self.version = api, version
        self.flexible = flex = api.flexible(version)
        self.request_header_version = request_header_version(api.key, version)
        self.response_header_version = response_header_version(api.key, version)
        self._dec_req = _GEN.decoder(api.request_struct, version, flex)
        self._enc_req = _GEN.encoder(api.request_struct, version, flex)
        self._dec_resp = _GEN.decoder(api.response_struct, version, flex)
        self._enc_resp = _GEN.encoder(api.response_struct, version, flex)

    def _decode(self, fn, buf, pos):
        if not isinstance(buf, memoryview):
            buf = memoryview(buf)
        try:
            return fn(buf, pos)
        except _DECODE_ERRORS as exc:
            raise T.ProtocolError(f"malformed {self.api.name} v{self.version}: {exc}") from None

    def _encode(self, fn, obj, out, regions):
        try:
            fn(obj, out, regions)
        except _ENCODE_ERRORS as exc:
            raise T.ProtocolError(f"cannot encode {self.api.name} v{self.version}: {exc}") from exc

    # --- bodies (no header, no size prefix) ------------------------------------------------

    def decode_request(self, buf, pos: int = 0):
        """The request object from a body starting at ``pos``; records stay memoryviews of buf."""
        return self._decode(self._dec_req, buf, pos)[0]

    def decode_response(self, buf, pos: int = 0):
        return self._decode(self._dec_resp, buf, pos)[0]

    def encode_request_body(self, obj) -> bytearray:
        out = bytearray()
        regions: Regions = []
        self._encode(self._enc_req, obj, out, regions)
        if regions:
            raise T.ProtocolError("regions are only spliced into responses")
        return out

    def encode_response_body(self, obj) -> list:
        out = bytearray()
        regions: Regions = []
        self._encode(self._enc_resp, obj, out, regions)
        return _splice(out, regions)

    # --- whole frames (int32 size prefix + header + body) ----------------------------------

    def encode_request(self, correlation_id: int, obj, client_id: str | None = "fastkafka"
                       ) -> bytearray:
        """A size-prefixed request frame, ready to send."""
        out = bytearray(4)
        write_request_header(out, self.api.key, self.version, correlation_id, client_id,
                             self.request_header_version)
        regions: Regions = []
        self._encode(self._enc_req, obj, out, regions)
        if regions:
            raise T.ProtocolError("regions are only spliced into responses")
        out[:4] = (len(out) - 4).to_bytes(4, "big", signed=True)
        return out

    def encode_response(self, correlation_id: int, obj) -> list:
        """A size-prefixed response frame as chunks: bytes-likes and the caller's regions, in
        order. Without regions it is a single bytearray in a list."""
        out = bytearray(4)
        write_response_header(out, correlation_id, self.response_header_version)
        regions: Regions = []
        self._encode(self._enc_resp, obj, out, regions)
        if not regions:     # most responses: one buffer, its size patched in front
            _SIZE.pack_into(out, 0, len(out) - 4)
            return [out]
        _SIZE.pack_into(out, 0, len(out) - 4 + sum(len(r) for _, r in regions))
        return _splice(out, regions)

    def decode_response_frame(self, frame) -> tuple[int, object]:
        """``(correlation_id, response)`` from a frame without its size prefix."""
        if not isinstance(frame, memoryview):
            frame = memoryview(frame)
        correlation_id, pos = read_response_header(frame, self.response_header_version)
        return correlation_id, self.decode_response(frame, pos)


CODECS: dict[tuple[int, int], Codec] = {}


def build_all() -> None:
    """Generate every declared (api, version) codec (called once the schemas are imported)."""
    for api in APIS.values():
        for v in range(api.min_version, api.max_version + 1):
            if (api.key, v) not in CODECS:
                CODECS[api.key, v] = Codec(api, v)


def codec_for(api_key: int, version: int) -> Codec:
    """The codec of ``(api_key, version)``.

    Raises ``errors.UnsupportedVersionError`` for a known API at a version we do not declare and
    :class:`~.types.ProtocolError` for an unknown API key.
    """
    try:
        return CODECS[api_key, version]
    except KeyError:
        if api_key in APIS:
            api = APIS[api_key]
            raise errors.UnsupportedVersionError(
                f"{api.name} v{version} (we support v{api.min_version}-{api.max_version})"
            ) from None
        raise T.ProtocolError(f"unknown api key {api_key}") from None


def decode_struct(s: Struct, version: int, buf, pos: int = 0, flexible: bool = False):
    """``(object, end)`` of one struct declared with ``parse_struct`` at ``pos`` of ``buf``: the
    internal formats carried as bytes inside messages (the consumer protocol) or stored as
    records (``__consumer_offsets``; ``flexible`` for Kafka's compact, tagged layouts)."""
    if not isinstance(buf, memoryview):
        buf = memoryview(buf)
    try:
        return _GEN.decoder(s, version, flexible)(buf, pos)
    except _DECODE_ERRORS as exc:
        raise T.ProtocolError(f"malformed {s.name} v{version}: {exc}") from None


def encode_struct(s: Struct, version: int, obj, flexible: bool = False) -> bytes:
    """The bytes of one struct (see :func:`decode_struct`)."""
    out = bytearray()
    regions: Regions = []
    try:
        _GEN.encoder(s, version, flexible)(obj, out, regions)
    except _ENCODE_ERRORS as exc:
        raise T.ProtocolError(f"cannot encode {s.name} v{version}: {exc}") from exc
    return bytes(out)
