"""The input boundary of the billing-export readers (``providers.usage``): open one export, check its header, tell
its format from its columns, and read it in batches (pyarrow); the file line of a record.

One line naming the file (InputError field ``usage``) before any row is read where possible: UTF-8 with or without
BOM (a byte that is not UTF-8 in a column gpuopt reads names the file, line and column; columns it does not read are
not decoded, as pyarrow decodes only the columns it projects); header names stripped; a name twice
(case-insensitively) refused; at most :data:`MAX_COLUMNS` columns and a header of at most :data:`MAX_HEADER_CHARS`
characters; a truncated gzip or a corrupt Parquet file (or part of a folder) named. I/O only: what a row means is
``providers.usage_formats``'s business.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from gpuopt.kernel.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Strings read as null in every text column (besides the empty cell).
NULL_STRINGS: tuple[str, ...] = ("", "NULL", "null", "Null", "NaN", "nan", "None")
#: Most columns an export may have: real exports have ~40 (FOCUS) to ~130 (CUR 2.0); a wider file is refused
#: before any row is read, so that a header of a million columns fails fast.
MAX_COLUMNS = 2_000
#: Longest header line read (characters).
MAX_HEADER_CHARS = 1 << 20
#: Rows per batch (CSV: about that many, by a block size of ~48 MB).
BATCH_ROWS = 262_144
_CSV_BLOCK_BYTES = 16 << 20

# ---------------------------------------------------------------------------------------------------------------
# Reading


@dataclass
class Source:
    """One billing export opened for reading: its path (a file, or a folder of Parquet parts), kind ('csv' or
    'parquet'), its column names as in the file (stripped) and the files to read (the parts, in path order)."""

    path: Path
    kind: str            # 'csv' | 'parquet'
    columns: list[str]   # as in the file
    files: list[Path]

    def col(self, *names: str) -> str | None:
        """The file's column matching one of ``names`` case-insensitively (first name first)."""
        low = {c.strip().lower(): c for c in self.columns}
        for n in names:
            c = low.get(n.lower())
            if c is not None:
                return c
        return None


def _open_text(path: Path, errors: str = "strict") -> io.TextIOBase:
    if path.suffix.lower() == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", errors=errors, newline="")
    return open(path, encoding="utf-8-sig", errors=errors, newline="")


def _check_columns(path: Path, names: list[str]) -> list[str]:
    """The column names stripped of spaces; InputError (field ``usage``) for too many columns
    (:data:`MAX_COLUMNS`), an empty name among named ones, or a name that appears twice (compared
    case-insensitively, as columns are looked up)."""
    if len(names) > MAX_COLUMNS:
        raise InputError("usage", f"{path.name} has {len(names):,} columns, more than {MAX_COLUMNS:,}",
                         accepted=f"a billing export of at most {MAX_COLUMNS:,} columns")
    out = [str(h).strip() for h in names]
    seen: dict[str, int] = {}
    for i, h in enumerate(out):
        k = h.lower()
        if k in seen:
            raise InputError("usage", f"{path.name}: column {h!r} appears twice (columns {seen[k] + 1} and {i + 1})",
                             accepted="one column per name")
        seen[k] = i
    return out


def _read_header(p: Path) -> list[str]:
    """The CSV header (first record), read within :data:`MAX_HEADER_CHARS` characters; InputError naming the file
    for a file that is not UTF-8 (with or without BOM), a truncated or corrupt gzip, or an over-long header."""
    op = gzip.open if p.suffix.lower() == ".gz" else open
    try:
        with op(p, "rb") as fh:
            raw = fh.read(MAX_HEADER_CHARS + 1)
    except (OSError, EOFError) as e:
        raise InputError("usage", f"{p.name} cannot be read: {one_line(e)}") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    # the first record: up to the first line end outside quotes
    end, quoted = -1, False
    for i, ch in enumerate(raw):
        if ch == 0x22:
            quoted = not quoted
        elif ch in (0x0A, 0x0D) and not quoted:
            end = i
            break
    if end < 0:
        if len(raw) > MAX_HEADER_CHARS:
            raise InputError("usage", f"{p.name}: header line longer than {MAX_HEADER_CHARS:,} characters",
                             accepted=f"a billing export of at most {MAX_COLUMNS:,} columns")
        end = len(raw)
    try:
        head = raw[:end].decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("usage", f"{p.name} line 1: not UTF-8 text ({e.reason} at byte {e.start})",
                         accepted="UTF-8 CSV, with or without BOM") from None
    try:
        return next(csv.reader(io.StringIO(head)), None) or []
    except csv.Error as e:
        raise InputError("usage", f"{p.name} line 1: the header is not CSV: {one_line(e)}") from None


def _parquet_names(f: Path) -> list[str]:
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(f).names)
    except Exception as e:  # pyarrow raises several types for a broken file
        raise InputError("usage", f"{f} is not a readable Parquet file: {one_line(e)}") from None


def one_line(e: BaseException) -> str:
    """``e`` (an exception, or any text) as one line of at most 200 characters (longer: cut, with '...'), for
    the one-line errors of the input boundary."""
    t = " ".join(str(e).split())
    return t[:200] + ("..." if len(t) > 200 else "")


def open_source(path: "str | Path") -> Source:
    """The export at ``path`` opened for reading (:class:`Source`): a CSV (optionally .gz) or Parquet file, or a
    folder of Parquet parts (all of one format); its header checked (UTF-8, column count, names not twice).

    Raises InputError (field ``usage``) for a missing or empty file, a folder without Parquet parts or mixing
    formats, a header that breaks the rules, an unreadable Parquet file."""
    p = Path(path)
    if not p.exists():
        raise InputError("usage", f"{p} does not exist")
    if p.is_dir():
        files = sorted(x for x in p.rglob("*") if x.is_file() and x.suffix.lower() == ".parquet")
        if not files:
            raise InputError("usage", f"folder {p} holds no .parquet file", accepted="a CSV or Parquet file, or a "
                             "folder of Parquet parts")
        def schema(f):
            return _check_columns(f, _parquet_names(f))

        first = schema(files[0])
        kinds: dict[str, list[str]] = {}
        for f in files:  # every part must be of one format: a part of another is not read as this one in silence
            names = schema(f)  # a broken part is named, not reported as a part of another format
            try:
                kind = detect(Source(f, "parquet", names, [f]))
            except InputError:
                kind = "unknown"
            kinds.setdefault(kind, []).append(f.relative_to(p).as_posix())
        if len(kinds) > 1:
            raise InputError("usage", f"folder {p} mixes export formats: " + "; ".join(
                f"{k}: {', '.join(v[:3])}" + (f" and {len(v) - 3} more" if len(v) > 3 else "") for k, v in kinds.items()),
                accepted="a folder of Parquet parts of one export")
        return Source(p, "parquet", first, files)
    name = p.name.lower()
    if name.endswith(".parquet") or name.endswith(".pq"):
        return Source(p, "parquet", _check_columns(p, _parquet_names(p)), [p])
    header = _read_header(p)
    if not header:
        raise InputError("usage", f"{p} is empty (no header line)")
    return Source(p, "csv", _check_columns(p, header), [p])


def detect_format(path: "str | Path") -> str:
    """The format of a billing export from its column names (matched case-insensitively): one of :data:`FORMATS`.

    FOCUS versions: a 1.2 column (InvoiceId, PricingCurrency, PricingCurrencyEffectiveCost, ...) -> 'focus-1.2';
    else a 1.1 column (SkuPriceDetails, SkuMeter, ServiceSubcategory, CommitmentDiscountQuantity/Unit,
    CapacityReservationId/Status) -> 'focus-1.1'; else 'focus-1.0'. (The lowest version the columns fit: a 1.2 file
    that leaves out every column new in 1.2 reads as 1.1, with the same meaning.)

    Raises InputError (field ``format``) when the columns fit no known format.
    """
    return detect(open_source(path))


_FOCUS_12 = ("invoiceid", "pricingcurrency", "pricingcurrencycontractedunitprice", "pricingcurrencyeffectivecost",
             "pricingcurrencylistunitprice")
_FOCUS_11 = ("skupricedetails", "skumeter", "servicesubcategory", "commitmentdiscountquantity",
             "commitmentdiscountunit", "capacityreservationid", "capacityreservationstatus")


def detect(src: Source) -> str:
    """The format of an opened export from its column names (case-insensitive): one of ``providers.usage.FORMATS``
    (:func:`detect_format` gives the rules). Raises InputError (field ``format``) when the columns fit none."""
    low = {c.strip().lower() for c in src.columns}
    if {"provider", "region", "instance_type", "hour", "usage_hours"} <= low:
        return "hourly"
    if {"line_item_line_item_type", "line_item_usage_start_date"} <= low:
        return "aws-cur-2.0"
    if {"billedcost", "chargeperiodstart"} <= low:
        if low & set(_FOCUS_12):
            return "focus-1.2"
        if low & set(_FOCUS_11):
            return "focus-1.1"
        return "focus-1.0"
    if "metercategory" in low and "quantity" in low and ({"date", "usagedatetime"} & low):
        return "azure-cost-details"
    shown = ", ".join(one_line(c) if c.isprintable() else repr(c) for c in src.columns[:12]) + (
        ", ..." if len(src.columns) > 12 else "")
    raise InputError("format", f"cannot tell the format of {src.path.name} from its columns ({shown})",
                     accepted="FOCUS 1.0-1.2 (BilledCost, ChargePeriodStart, ...), AWS CUR 2.0 "
                     "(line_item_line_item_type, line_item_usage_start_date, ...), Azure cost details (Date, "
                     "MeterCategory, Quantity, ...), hourly (provider, region, instance_type, hour, usage_hours, ...)")


def batches(src: Source, wanted: list[str], numeric: frozenset[str] = frozenset()
             ) -> Iterator[tuple["pd.DataFrame", int, str]]:
    """(frame of the wanted columns, first record index of the batch in its file, file name) per batch.

    CSV: every column read as text, dictionary-encoded (so each distinct value is parsed once); NULL_STRINGS are
    null; the ``numeric`` columns (lower-case names) are cast to float in Arrow when every cell is a number (else
    left as text for the row-level check). Parquet: the file's types, text dictionary-encoded; a map column
    (CUR 2.0 ``product``) becomes its ``instance_type`` and ``region_code`` values (``product.instance_type``...).
    """
    import pyarrow as pa

    if src.kind == "csv":
        import pyarrow.csv as pcsv

        cols = [c for c in src.columns if c in wanted]
        try:
            stream = pa.input_stream(str(src.path), compression="detect")
            reader = pcsv.open_csv(  # the header's names stripped (_check_columns), so 'BilledCost ' is found
                stream, read_options=pcsv.ReadOptions(block_size=_CSV_BLOCK_BYTES, column_names=src.columns,
                                                      skip_rows=1),
                parse_options=pcsv.ParseOptions(newlines_in_values=True),
                convert_options=pcsv.ConvertOptions(column_types={c: (pa.string() if c.strip().lower() in numeric else
                                                                      pa.dictionary(pa.int32(), pa.string()))
                                                                  for c in cols}, include_columns=cols,
                                                    null_values=list(NULL_STRINGS), strings_can_be_null=True,
                                                    quoted_strings_can_be_null=True))
        except (pa.ArrowException, OSError, EOFError) as e:
            raise _csv_error(src, 0, e) from None
        start = 0
        while True:
            try:
                b = reader.read_next_batch()
            except StopIteration:
                break
            except (pa.ArrowException, OSError, EOFError) as e:
                raise _csv_error(src, start, e) from None
            yield _arrow_to_pandas(b, numeric), start, src.path.name
            start += b.num_rows
        return
    import pyarrow.parquet as pq

    for f in src.files:
        start = 0
        try:
            pf = pq.ParquetFile(f)
            names = pf.schema_arrow.names
            cols = [c for c in names if c in wanted]
            batches = pf.iter_batches(batch_size=BATCH_ROWS, columns=cols)
            for b in batches:
                frame = _arrow_to_pandas(b, numeric)
                yield frame, start, f.name
                start += b.num_rows
        except InputError:
            raise
        except Exception as e:  # pyarrow raises OSError, ArrowInvalid, ... for a corrupt page or footer
            raise InputError("usage", f"{f} is not a readable Parquet file (after row {start}): "
                             f"{one_line(e)}") from None


def _csv_error(src: Source, start: int, e: BaseException) -> InputError:
    """One line for a CSV that pyarrow cannot read: the file, and the line of the first byte that is not UTF-8
    when that is the cause (a column gpuopt reads; the columns it does not read are not decoded)."""
    msg = one_line(e)
    if "utf8" in msg.lower() or "utf-8" in msg.lower():
        line = _first_non_utf8_line(src.path)
        col = ""
        m = re.search(r"CSV column #(\d+)", msg)
        if m:
            i = int(m.group(1))
            col = f", column {src.columns[i]!r}" if i < len(src.columns) else ""
        where = f" line {line}" if line else ""
        return InputError("usage", f"{src.path.name}{where}{col}: not UTF-8 text", accepted="UTF-8 CSV, with or "
                          "without BOM (a byte that is not UTF-8 is accepted only in a column gpuopt does not read)")
    return InputError("usage", f"{src.path.name}: cannot be read as CSV (after data row {start}): {msg}")


def _first_non_utf8_line(path: Path) -> int | None:
    """The 1-based physical line holding the first byte that is not UTF-8 (None when none is found)."""
    op = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with op(path, "rb") as fh:
            for i, raw in enumerate(fh, 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return i
    except (OSError, EOFError):
        return None
    return None


def _arrow_to_pandas(b: Any, numeric: frozenset[str] = frozenset()) -> "pd.DataFrame":
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    data = {}
    for name, col in zip(b.schema.names, b.columns):
        if pa.types.is_map(col.type):
            for key in ("instance_type", "region_code"):
                data[f"{name}.{key}"] = pc.map_lookup(col, key, "first").to_pandas()
            continue
        if pa.types.is_struct(col.type) or pa.types.is_list(col.type):
            continue
        if name.strip().lower() in numeric and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            try:
                col = pc.cast(col, pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # a cell is not a number: pandas finds which (num_col)
        elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = pc.dictionary_encode(col)
        data[name] = col.to_pandas()
    return pd.DataFrame(data)

def line_numbers(src: Source, recs: dict[str, list[int]]) -> dict[tuple[str, int], int]:
    """1-based file line of each 0-based data record (CSV: counted with a CSV reader, so blank lines and quoted
    newlines are accounted for; Parquet: record + 2)."""
    out: dict[tuple[str, int], int] = {}
    if src.kind != "csv":
        for f, rs in recs.items():
            for r in rs:
                out[(f, r)] = r + 2
        return out
    want = sorted({r for rs in recs.values() for r in rs})
    if not want:
        return out
    fname = src.path.name
    try:
        _count_lines(src.path, want, fname, out)
    except (OSError, EOFError, csv.Error) as e:
        raise InputError("usage", f"{fname} cannot be read: {one_line(e)}") from None
    for r in want:
        out.setdefault((fname, r), r + 2)
    return out


def _count_lines(path: Path, want: list[int], fname: str, out: dict[tuple[str, int], int]) -> None:
    # errors="replace": bytes that are not UTF-8 can only be in columns gpuopt does not read (pyarrow refuses
    # them in the columns it reads), and they do not change where lines end
    with _open_text(path, errors="replace") as fh:
        rd = csv.reader(fh)
        next(rd, None)
        prev_end = rd.line_num
        rec = -1
        j = 0
        for row in rd:
            start_line = prev_end + 1
            prev_end = rd.line_num
            if not row or all(not x for x in row) and len(row) <= 1:
                continue
            rec += 1
            while j < len(want) and want[j] < rec:
                j += 1
            if j < len(want) and want[j] == rec:
                out[(fname, rec)] = start_line
                j += 1
                if j >= len(want):
                    break
