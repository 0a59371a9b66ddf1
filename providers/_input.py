"""The input boundary of the price importers (issue 13, point 1): encoding, JSON structure, CSV columns and the
values of the offers every importer returns.

Every reader of ``gpuopt prices import FILE --input-format ...`` and ``--catalog FILE`` goes through here, so a bad file
is one line naming the file (and the line, column or path in the document) and a bad row is skipped with a
reason code, never a traceback and never an infinite, negative or absurd price in the offers:

* **Encoding**: UTF-8, with or without a byte-order mark; anything else is ``InputError("file", "NAME is not
  UTF-8 text (byte 0x.. at offset N)")``. A gzip file (magic bytes ``1f 8b``) is decompressed first, up to
  :data:`MAX_DECOMPRESSED_BYTES`; a truncated or corrupt one is ``InputError("file", "NAME: truncated or corrupt
  gzip ...")``.
* **JSON**: a syntax error names the line and column; nesting deeper than Python's parser handles (a
  ``RecursionError``) is an error, not a crash.
* **CSV**: a column named twice is refused, naming the column (:func:`check_unique_columns`).
* **Values** (:func:`check_offer_values`): the offers an importer built are checked against wide bounds and the
  rows outside are skipped with a reason: ``bad_price`` (``usd_per_hour``, ``recurring_usd_per_hour`` not finite,
  negative or above :data:`MAX_USD_PER_INSTANCE_HOUR`; ``upfront_usd`` not finite, negative or above
  :data:`MAX_UPFRONT_USD`), ``bad_gpu_count`` (not finite or outside (0, :data:`MAX_GPU_COUNT`]) and
  ``bad_gpu_memory`` (``gpu_memory_gib`` not finite or outside (0, :data:`MAX_GPU_MEMORY_GIB`]).
  ``providers.validate`` then applies the narrower per-GPU-hour bounds; these bounds only keep overflow and
  sentinels (``inf``, ``1e308``, ``count x memory`` overflowing to infinity) out of every importer's result.
"""

from __future__ import annotations

import csv
import io
import json
import math
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import SkippedRow

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Highest price of one instance-hour an importer keeps: 10,000 USD. The dearest instance-hour in the shipped
#: snapshot (pricing_cache/data/offers.csv, 7,159 offers) is Azure Standard_ND96isr_H200_v5 on demand at
#: 169.6 USD/h; the bound is ~59x that, so it only catches sentinels and unit faults (a term total read as hourly).
MAX_USD_PER_INSTANCE_HOUR = 10_000.0
#: Highest upfront fee of one reservation an importer keeps: 10,000 USD/h x 26,280 h (3 years) = 262.8 M USD (the
#: largest in the shipped snapshot is 1,961,119.01 USD).
MAX_UPFRONT_USD = MAX_USD_PER_INSTANCE_HOUR * 26_280.0
#: Most GPUs in one offer: 64 (the clouds sell at most 16 per instance: GCP a2-megagpu-16g; providers.validate
#: refuses above that; 64 leaves room for a user's own rack-scale rows before the stricter check explains them).
MAX_GPU_COUNT = 64.0
#: Most memory per GPU (or per instance, when a file gives the instance total, divided later by
#: providers.validate): 16,384 GiB (the largest per GPU in the shipped snapshot is 180 GiB, B200; an instance total
#: of 16 such GPUs is 2,880).
MAX_GPU_MEMORY_GIB = 16_384.0
#: Largest decompressed size of a gzip price file read as a stream (:func:`open_text_stream`: the AWS bulk offer
#: CSV, filtered line by line, memory independent of the size): 4 GiB (a full AmazonEC2 bulk CSV is several GB).
MAX_DECOMPRESSED_BYTES = 4 << 30
#: Largest price file held whole (:func:`read_text_file`: JSON documents, SkyPilot and offers CSVs), counted
#: while reading and decompressing, before it is all in memory (issue 33: a 4 MB .json.gz inflating to 4 GiB peaked
#: at 8 GiB). 1 GiB: the price files gpuopt reads whole are at most tens of MB (ec2instances.info's instances.json,
#: a SkyPilot vms.csv, an Azure retail page set); a JSON document of 1 GiB already takes several GiB as Python
#: objects. Peak while reading: the content twice (bytes, then text), 2 GiB at most.
MAX_WHOLE_BYTES = 1 << 30

_GZIP_MAGIC = b"\x1f\x8b"


def _size(n: int) -> str:
    """A byte count as people read it: "1 GiB", "64 MiB", "900 KiB"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):,.4g} {unit}"
    return f"{n:,} bytes"


def _too_large(name: str, cap: int, what: str = "its content") -> InputError:
    return InputError("file", f"{name}: {what} is larger than {_size(cap)}, the most gpuopt holds in memory for one "
                              f"price file; split it or import the parts", accepted=f"at most {_size(cap)}")


def _decompress(data: bytes, name: str, cap: "int | None" = None) -> bytearray:
    """The content of a gzip file, bounded by ``cap`` (default :data:`MAX_WHOLE_BYTES`) while decompressing: no
    more than ``cap`` + 1 bytes are ever produced. Raises InputError (``file``) when it is truncated, corrupt or too
    large (naming the figure)."""
    cap = MAX_WHOLE_BYTES if cap is None else cap
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    try:
        rest = data
        while True:
            n = min(cap + 1 - len(out), 16 << 20)  # 16 MiB at a time: no second copy of a large content
            chunk = d.decompress(rest, n)
            out += chunk
            if len(out) > cap:
                raise _too_large(name, cap, "the gzip content")
            rest = d.unconsumed_tail
            if d.eof:
                rest = d.unused_data
                if rest[:2] == _GZIP_MAGIC:  # a multi-member gzip file
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    continue
                break
            if not rest and len(chunk) < n:  # all input used and no output pending: the file ends here
                break
    except zlib.error as e:
        raise InputError("file", f"{name}: corrupt gzip file ({e})") from None
    if not d.eof:
        raise InputError("file", f"{name}: truncated gzip file (it ends before its last block; download it again)")
    return out  # not bytes(out): a copy would double the peak


def decode_utf8(data: "bytes | bytearray", name: str) -> str:
    """``data`` as UTF-8 text, a leading byte-order mark removed. Raises InputError (``file``) naming the first
    byte that is not UTF-8 and its offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        bad = data[e.start:e.start + 1].hex()
        raise InputError("file", f"{name} is not UTF-8 text (byte 0x{bad} at offset {e.start}); save it as UTF-8",
                         accepted="UTF-8, with or without a byte-order mark") from None


def read_text_file(path: "str | Path") -> str:
    """The text of a price file: read, decompressed when it is gzip, decoded as UTF-8 (BOM removed).

    Raises:
        InputError (field ``file``): missing or unreadable file, not UTF-8, truncated or corrupt gzip."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_WHOLE_BYTES + 1)  # bounded: a plain file over the cap is not read whole either
    except IsADirectoryError:
        raise InputError("file", f"{p} is a directory, not a price file") from None
    except FileNotFoundError:
        raise InputError("file", f"not found: {p}") from None
    except OSError as e:
        raise InputError("file", f"{p.name} cannot be read ({e.strerror or e})") from None
    if data[:2] == _GZIP_MAGIC:
        data = _decompress(data, p.name)
    elif len(data) > MAX_WHOLE_BYTES:
        raise _too_large(p.name, MAX_WHOLE_BYTES, "the file")
    return decode_utf8(data, p.name)


class _Capped(io.RawIOBase):
    """A readable stream of the decompressed bytes of a gzip file that counts them as they are read and raises
    InputError past ``cap`` (corrupt and truncated files named too): memory stays one buffer whatever the size."""

    def __init__(self, path: Path, cap: int):
        import gzip

        self._gz = gzip.GzipFile(path, "rb")
        self.name, self.cap, self.count = path.name, cap, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        import gzip

        try:
            n = self._gz.readinto(b)
        except EOFError:
            raise InputError("file", f"{self.name}: truncated gzip file (it ends before its last block; download "
                                     "it again)") from None
        except (gzip.BadGzipFile, zlib.error) as e:
            raise InputError("file", f"{self.name}: corrupt gzip file ({e})") from None
        self.count += n
        if self.count > self.cap:
            raise _too_large(self.name, self.cap, "the gzip content")
        return n

    def close(self) -> None:
        self._gz.close()
        super().close()


def open_text_stream(path: "str | Path") -> io.TextIOWrapper:
    """A UTF-8 text stream (BOM removed, newlines untranslated as csv wants) of a price file read as it comes: a
    gzip file is decompressed on the fly, at most :data:`MAX_DECOMPRESSED_BYTES` (InputError past it, naming the
    figure, and for a truncated or corrupt file); a plain file is opened as it is."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            gz = fh.read(2) == _GZIP_MAGIC
        raw: Any = _Capped(p, MAX_DECOMPRESSED_BYTES) if gz else open(p, "rb", buffering=0)
    except OSError as e:
        raise InputError("file", f"{p.name} cannot be read ({e.strerror or e})") from None
    return io.TextIOWrapper(io.BufferedReader(raw, buffer_size=1 << 20), encoding="utf-8-sig", newline="")


def loads_json(text: "str | bytes", name: str = "<text>") -> Any:
    """``json.loads`` with one-line errors: the line and column of a syntax error, nesting too deep, NaN or
    Infinity (not JSON). A leading byte-order mark is accepted.

    Raises:
        InputError (field ``file``)."""
    if isinstance(text, (bytes, bytearray)):
        text = decode_utf8(bytes(text), name)
    text = text.lstrip("\ufeff")

    def constant(word: str) -> Any:
        raise InputError("file", f"{name}: {word} is not a JSON number (prices must be finite)")

    try:
        return json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as e:
        raise InputError("file", f"{name} is not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise InputError("file", f"{name}: JSON nested too deeply to be a price file") from None


def read_json_file(path: "str | Path") -> Any:
    """:func:`read_text_file` then :func:`loads_json`, errors naming the file."""
    p = Path(path)
    return loads_json(read_text_file(p), p.name)


def check_unique_columns(header: Iterable[str], name: str, *, line: int = 1, field: str = "file") -> None:
    """Refuse a CSV header naming a column twice (which of the two would hold the price?).

    Raises:
        InputError: naming the file, the line and the column(s)."""
    seen: set[str] = set()
    dup: list[str] = []
    for h in header:
        if h in seen and h not in dup:
            dup.append(h)
        seen.add(h)
    if dup:
        raise InputError(field, f"{name} line {line}: column(s) given twice: {', '.join(dup)}",
                         accepted="each column once")


class CsvReader(Iterator[list[str]]):
    """``csv.reader`` over ``text`` that reads LF, CRLF and bare-CR line ends alike (issue 33) and turns every
    ``csv.Error`` into a one-line InputError naming the file and the line.

    A file whose lines end with a bare CR (old Mac, some spreadsheet exports) holds no LF at all, and is split on CR;
    in a file with LF line ends, a CR that is neither before an LF nor inside a quoted field is a CR inside an
    unquoted field, refused (which line would it end?). ``line_num`` is the (1-based) line the last record ended on,
    as ``csv.reader``'s. A cell holding a NUL byte is refused naming its column (the first record's cell).

    Raises (while iterating):
        InputError (``field``): "NAME line N: a carriage return (CR) inside an unquoted field ..." or
        "NAME line N: not CSV (...)" (a field over csv's 128 KiB limit, a quote left open...)."""

    def __init__(self, text: str, name: str, field: str = "file"):
        bare_cr = "\r" in text and "\n" not in text
        self._reader = csv.reader(io.StringIO(text, newline="" if bare_cr else "\n"))
        self.name, self.field = name, field
        # cells scanned only when they can hold a NUL or a line break (quoted): checked once, most files have neither
        self._nul = "\x00" in text or '"' in text
        self._header: list[str] | None = None

    @property
    def line_num(self) -> int:
        """The line the last record read ended on (1-based)."""
        return self._reader.line_num

    def __iter__(self) -> "CsvReader":
        return self

    def __next__(self) -> list[str]:
        start = self._reader.line_num + 1  # the record's first line (a quoted line break spans two)
        try:
            rec = next(self._reader)
        except csv.Error as e:
            raise csv_error(e, self.name, self._reader.line_num, self.field) from None
        if self._header is None:
            self._header = [h.strip() for h in rec]
        if self._nul:
            for i, cell in enumerate(rec):
                if "\x00" in cell:
                    col = self._header[i] if i < len(self._header) else f"column {i + 1}"
                    raise InputError(self.field, f"{self.name} line {self._reader.line_num}: {col} holds a NUL "
                                                 "byte (0x00); a text cell cannot", accepted="text without NUL")
                if "\r" in cell or "\n" in cell:  # legal CSV when quoted, never part of a region or a type name
                    col = self._header[i] if i < len(self._header) else f"column {i + 1}"
                    raise InputError(self.field, f"{self.name} line {start}: {col} holds a line "
                                                 "break (CR or LF) inside its quotes; a cell is one line of text",
                                     accepted="text without CR or LF")
        return rec


def stream_lines(fh: Iterable[str], name: str, field: str = "file") -> Iterator[str]:
    """The lines of a text stream opened with ``newline=""`` (line ends kept, as ``csv.reader`` wants), read as they
    come, with :class:`CsvReader`'s rule for a stray CR: the first line's end sets the file's (a file of bare-CR
    lines is read as such); in a file of LF or CRLF lines, a line that ends with a bare CR holds a CR inside a field,
    which ``csv.reader`` would take for a line end and so split the row in two (issue 33). Raises InputError
    (``field``) naming ``name`` and the line; the file's lines are counted as they end (quoted line breaks count)."""
    it = iter(fh)
    first = next(it, None)
    if first is None:
        return
    yield first
    if first.endswith("\r"):  # bare-CR line ends throughout
        yield from it
        return
    for n, line in enumerate(it, start=2):
        if line[-1:] == "\r":
            raise InputError(field, f"{name} line {n}: a carriage return (CR) inside a field; remove the CR",
                             accepted="CSV with LF, CRLF or CR line ends")
        yield line


def csv_error(e: Exception, name: str, line: int, field: str = "file") -> InputError:
    """The one-line InputError for a ``csv.Error`` ``e`` raised reading line ``line`` of ``name``."""
    if "new-line character seen in unquoted field" in str(e):
        return InputError(field, f"{name} line {line}: a carriage return (CR) inside an unquoted field; quote the "
                                 f"field or remove the CR", accepted="CSV with LF, CRLF or CR line ends")
    return InputError(field, f"{name} line {line}: not CSV ({e})")


def where(path: list[Any]) -> str:
    """A path in a JSON document as text: ``Items[3].retailPrice``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "the document"


def _bad_value(row: dict[str, Any]) -> str | None:
    """The reason an offer's numbers are unusable (see the module docstring), or None."""

    def num(c: str) -> float:
        try:
            return float(row.get(c))
        except (TypeError, ValueError):
            return float("nan")

    for c, top in (("usd_per_hour", MAX_USD_PER_INSTANCE_HOUR), ("recurring_usd_per_hour", MAX_USD_PER_INSTANCE_HOUR),
                   ("upfront_usd", MAX_UPFRONT_USD)):
        v = num(c)
        if not (math.isfinite(v) and 0 <= v <= top):
            return f"bad_price: {c} {v:g} is not a finite price in [0, {top:g}] USD"
    g = num("gpu_count")
    if not (math.isfinite(g) and 0 < g <= MAX_GPU_COUNT):
        return f"bad_gpu_count: gpu_count {g:g} is not in (0, {MAX_GPU_COUNT:g}]"
    m = num("gpu_memory_gib")
    if not (math.isfinite(m) and 0 < m <= MAX_GPU_MEMORY_GIB):
        return f"bad_gpu_memory: gpu_memory_gib {m:g} is not in (0, {MAX_GPU_MEMORY_GIB:g}] GiB"
    return None


def check_offer_values(offers: "pd.DataFrame", source: str) -> "tuple[pd.DataFrame, list[SkippedRow]]":
    """(the offers whose numbers are usable, the others as skipped rows with a reason; see the module docstring).

    ``offers`` has OFFER_COLUMNS; the frame returned keeps its dtypes and order. Line 0: frames have no lines."""
    import numpy as np

    if offers.empty:
        return offers, []
    cols = ["usd_per_hour", "recurring_usd_per_hour", "upfront_usd", "gpu_count", "gpu_memory_gib"]
    vals = {c: offers[c].astype(float).to_numpy(dtype=float, na_value=np.nan) for c in cols}
    with np.errstate(invalid="ignore"):
        ok = np.ones(len(offers), dtype=bool)
        for c in cols[:3]:
            top = MAX_UPFRONT_USD if c == "upfront_usd" else MAX_USD_PER_INSTANCE_HOUR
            ok &= np.isfinite(vals[c]) & (vals[c] >= 0) & (vals[c] <= top)
        ok &= np.isfinite(vals["gpu_count"]) & (vals["gpu_count"] > 0) & (vals["gpu_count"] <= MAX_GPU_COUNT)
        ok &= np.isfinite(vals["gpu_memory_gib"]) & (vals["gpu_memory_gib"] > 0) & \
            (vals["gpu_memory_gib"] <= MAX_GPU_MEMORY_GIB)
    if ok.all():
        return offers, []
    skipped = []
    for i in np.flatnonzero(~ok):
        row = {c: vals[c][i] for c in cols}
        skipped.append(SkippedRow(source=str(offers["source"].iloc[i] or source), line=0,
                                  instance_type=str(offers["instance_type"].iloc[i]),
                                  region=str(offers["region"].iloc[i]), reason=_bad_value(row) or "bad_price"))
    return offers[ok].reset_index(drop=True), skipped


#: Shape specs for :func:`check_shape`: ``dict`` = an object whose listed keys, when present and not null, have
#: the given shapes; ``[spec]`` = a list whose every element has ``spec``; ``{"*": spec}`` = an object whose every
#: value has ``spec``; ``object`` = anything.
Shape = Any


def check_shape(value: Any, shape: Shape, name: str, path: "list[Any] | None" = None, field: str = "file") -> None:
    """Refuse a JSON document whose nesting is not what the importer reads: an object where a list is expected,
    a number where an object is (``Items[3] is a str, not an object``). Keys absent or null are left to the
    importer (they are reported per row). Raises InputError naming the file and the path in the document."""
    path = list(path or [])
    if value is None or shape is object:
        return
    if isinstance(shape, list):
        if not isinstance(value, list):
            raise InputError(field, f"{name}: {where(path)} is {_kind(value)}, not a list")
        for i, v in enumerate(value):
            check_shape(v, shape[0], name, path + [i], field)
        return
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            raise InputError(field, f"{name}: {where(path)} is {_kind(value)}, not an object")
        if "*" in shape:
            for k, v in value.items():
                check_shape(v, shape["*"], name, path + [k], field)
            return
        for k, sub in shape.items():
            if k in value:
                check_shape(value[k], sub, name, path + [k], field)
        return
    if shape is str and isinstance(value, (dict, list)):
        raise InputError(field, f"{name}: {where(path)} is {_kind(value)}, not a text or number")


def _kind(value: Any) -> str:
    """What a JSON value is, with its article: "an object", "a list", "a text", "a number"."""
    return {dict: "an object", list: "a list", str: "a text", bool: "a boolean", int: "a number",
            float: "a number"}.get(type(value), f"a {type(value).__name__}")
