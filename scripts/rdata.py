"""R data packages read in pure Python: R's XDR serialisation, lazy-load databases, ``.rda`` files.

Debian's R packages (``r-cran-*``) store data sets as R lazy-load data (``data/Rdata.rdx``, an
index, and ``data/Rdata.rdb``, zlib-compressed serialisations) or as gzip'd ``.rda`` files; text
data sets hold one printed line per element, which ``book_to_text`` joins into paragraphs.
"""

from __future__ import annotations

import gzip
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

# R SEXP type codes used by the serialisation format (R Internals, "Serialization Formats").
_NILSXP, _SYMSXP, _LISTSXP, _CLOSXP, _ENVSXP, _LANGSXP = 0, 1, 2, 3, 4, 6
_CHARSXP, _LGLSXP, _INTSXP, _REALSXP, _STRSXP, _VECSXP = 9, 10, 13, 14, 16, 19
_ALTREP, _EMPTYENV, _BASEENV, _GLOBALENV = 238, 242, 241, 253
_NILVALUE, _REFSXP = 254, 255
_SPECIAL_ENVS = {_EMPTYENV, _BASEENV, _GLOBALENV, 247, 248, 249, 250, 251, 252}

@dataclass(frozen=True)
class RAttr:
    """An R value that carried attributes (names, class, ...)."""

    value: object
    attributes: dict


class _XdrReader:
    """Minimal reader for R's XDR serialisation: enough for vectors, lists and pairlists."""

    def __init__(self, data: bytes) -> None:
        if data[:2] != b"X\n":
            raise ValueError(f"data: expected an XDR R serialisation ('X\\n'), got {data[:2]!r}")
        self.buf, self.pos, self.refs = data, 2, []
        version = self._int()
        self._int(), self._int()  # writer version, minimal reader version
        if version == 3:
            self._bytes(self._int())  # native encoding name

    def _int(self) -> int:
        (v,) = struct.unpack_from(">i", self.buf, self.pos)
        self.pos += 4
        return v

    def _bytes(self, n: int) -> bytes:
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def read(self) -> object:
        flags = self._int()
        kind, has_attr, has_tag = flags & 0xFF, bool(flags & 0x200), bool(flags & 0x400)
        if kind == _NILVALUE:
            return None
        if kind in _SPECIAL_ENVS:
            return f"<env {kind}>"
        if kind == _REFSXP:
            index = flags >> 8 or self._int()
            return self.refs[index - 1]
        if kind == _SYMSXP:
            name = self.read()
            self.refs.append(name)
            return name
        if kind in (_LISTSXP, _LANGSXP):
            attrs = self.read() if has_attr else None
            tag = self.read() if has_tag else None
            car, cdr = self.read(), self.read()
            items = [(tag, car)] + (cdr if isinstance(cdr, list) else [])
            return items if attrs is None else RAttr(items, dict(attrs))
        if kind == _ENVSXP:
            slot = len(self.refs)
            self.refs.append(None)
            self._int()  # locked
            env = {"enclos": self.read(), "frame": self.read(), "hashtab": self.read(), "attr": self.read()}
            self.refs[slot] = env
            return env
        if kind == _CHARSXP:
            n = self._int()
            return None if n == -1 else self._bytes(n).decode("utf-8", errors="replace")
        if kind == _ALTREP:
            info, state, _attr = self.read(), self.read(), self.read()  # the attributes: read past, unused
            return _altrep_value(info, state)
        if kind in (_LGLSXP, _INTSXP):
            n = self._int()
            value: object = list(struct.unpack_from(f">{n}i", self.buf, self.pos))
            self.pos += 4 * n
        elif kind == _REALSXP:
            n = self._int()
            value = list(struct.unpack_from(f">{n}d", self.buf, self.pos))
            self.pos += 8 * n
        elif kind in (_STRSXP, _VECSXP, 20):
            value = [self.read() for _ in range(self._int())]
        else:
            raise ValueError(f"R serialisation: unsupported SEXP type {kind} at byte {self.pos}")
        if has_attr:
            return RAttr(value, dict(self.read()))
        return value


def _altrep_value(info: object, state: object) -> object:
    """Expand the ALTREP classes R uses for lazily stored vectors (compact sequences, wrappers)."""
    cls = info[0][1] if isinstance(info, list) else None
    if cls == "compact_intseq":
        n, start, step = (int(x) for x in state)
        return list(range(start, start + n * step, step))
    if cls and cls.startswith("wrap_"):
        return state[0] if isinstance(state, list) else state
    return state


def _unpack_rdb_entry(blob: bytes, compression: int) -> bytes:
    """One lazy-load entry: 4-byte big-endian length, then zlib (1) or typed (2/3) payload."""
    if compression == 1:
        return zlib.decompress(blob[4:])
    kind = blob[4:5]
    if kind == b"Z":
        return zlib.decompress(blob[5:])
    if kind == b"0":
        return blob[5:]
    raise ValueError(f"rdb entry: unsupported compression type {kind!r} (only zlib is implemented)")


def read_lazyload(rdx: Path, rdb: Path) -> dict[str, object]:
    """All variables of an R lazy-load database, as Python values."""
    raw = rdx.read_bytes()
    # R writes the index with saveRDS (gzip) for data/, with a length-prefixed zlib stream for R/.
    index_bytes = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else zlib.decompress(raw[4:])
    index = _XdrReader(index_bytes).read()
    fields = dict(zip(index.attributes["names"], index.value))
    compression = int(fields["compressed"][0])
    blob = rdb.read_bytes()
    out = {}
    names = fields["variables"].attributes["names"]
    for name, (offset, length) in zip(names, fields["variables"].value):
        raw = _unpack_rdb_entry(blob[int(offset) : int(offset) + int(length)], compression)
        out[name] = _XdrReader(raw).read()
    return out


def book_to_text(lines: list[str | None]) -> str:
    """Join wrapped lines into paragraphs (one per line) and drop the ``_italic_`` markup."""
    paragraphs, current = [], []
    for line in lines:
        line = (line or "").strip()
        if line:
            current.append(line)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    text = "\n".join(paragraphs).replace("_", "")
    return re.sub(r"[ \t]+", " ", text)


def read_rda(path: Path) -> dict[str, object]:
    """Variables of an ``.rda`` / ``.RData`` file (gzip'd ``RDX2``/``RDX3`` header + XDR)."""
    raw = path.read_bytes()
    raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    if raw[:4] not in (b"RDX2", b"RDX3"):
        raise ValueError(f"{path}: not an RData file (header {raw[:5]!r})")
    pairs = _XdrReader(raw[5:]).read()
    return {tag: value for tag, value in pairs}
