"""Serving demand over the planned month: demand profiles, and the load-duration-curve merge of their blocks.

A *profile* is the demand of one serving workload (generated tokens/s for the whole fleet) in ``n`` blocks that
share the month of ``HOURS_PER_MONTH`` = 730 h equally: each block lasts ``730 / n`` hours, so a block's *hours* are
its share of the month and Σ hours = 730 for every profile.

Layouts (``DemandProfile.period_hours``):

* **cyclic** (24 or 168): an hour-of-day or hour-of-week pattern that repeats all month. Block ``i`` of a cyclic
  profile of period ``P`` covers hours ``[i·P/n, (i+1)·P/n)`` of every day (``P = 24``) or week (``P = 168``;
  hour-of-week 0 is Monday 00:00). Its ``730 / n`` hours are spread evenly over the month.
* **calendar** (730): ``n`` consecutive stretches of the month (a timestamped CSV binned into a number of blocks that
  is neither a day nor a week pattern, or an inline list whose length is not 24 or 168).
* **flat** (``None``): one block of 730 h; it aligns with any other profile.

Every bin of a CSV takes the MAXIMUM demand of the rows that fall in it (never the mean): the fleet must cover the
peak of the bin, and a mean would plan too little capacity for half of it.

``merge_blocks`` aligns the profiles of several workloads on one grid and merges blocks whose demand *vectors*
(one entry per workload) are equal, adding their hours — the load-duration curve of power-system capacity planning
(DESIGN.md, "Making it fast"); ``splits`` (training deadlines, hours from the month start) cut the month into
segments that are never merged across.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.inputs import parse_decimal
from gpuopt.kernel.records import HOURS_PER_MONTH

#: Kinds of profile (``DemandProfile.kind``): where its numbers came from.
KINDS = ("hour_of_day", "hour_of_week", "timestamps", "inline", "flat")
#: Column names of a profile CSV (case-insensitive), one time column and one demand column.
TIME_COLUMNS = ("timestamp", "hour", "hour_of_week")
DEMAND_COLUMNS = ("demand", "tokens_per_second")
DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
CALENDAR = 730  # period_hours of a calendar profile: the month itself
_FIELD = "demand_profile"
_MIN_HOURS = 1e-9  # a piece of a block shorter than this (float dust at a split) is dropped


@dataclass(frozen=True)
class Block:
    """One block of a profile: ``index`` (0-based), a ``label`` for reports ("18:00-19:00", "Mon 09:00"),
    ``hours`` it lasts in the planned month (730 / number of blocks) and ``demand`` in tokens/s (the peak of
    the block)."""

    index: int
    label: str
    hours: float
    demand: float


@dataclass(frozen=True)
class DemandProfile:
    """The demand of one serving workload over the planned month, in blocks (see the module docstring).

    ``kind``: one of KINDS; ``source``: the CSV path, "inline" or "flat"; ``unit``: always "tokens/s" (generated
    tokens per second for the whole fleet); ``peak``: the largest block demand; ``mean``: the hour-weighted mean
    (Σ hours × demand / 730); ``period_hours``: 24 or 168 (cyclic), 730 (calendar) or None (flat); ``note``: how the
    numbers were binned, for the plan's notes; ``span``: first and last timestamp (ISO, UTC) of a timestamped CSV.
    """

    blocks: tuple[Block, ...]
    kind: str
    source: str
    unit: str = "tokens/s"
    peak: float = 0.0
    mean: float = 0.0
    period_hours: int | None = None
    note: str = ""
    span: tuple[str, str] | None = None

    @property
    def total_hours(self) -> float:
        return sum(b.hours for b in self.blocks)

    @property
    def values(self) -> tuple[float, ...]:
        """Demand of each block, tokens/s."""
        return tuple(b.demand for b in self.blocks)

    @property
    def demand_hours(self) -> float:
        """Σ hours × demand (token-seconds per second × hours): the served work of the month / 3600."""
        return sum(b.hours * b.demand for b in self.blocks)


@dataclass(frozen=True)
class MergedBlock:
    """A block of the merged grid: equal demand vectors within one segment between splits, hours added.

    ``index``: position in the merged list; ``start_hour``/``end_hour``: hours from the month start that hold all of
    the block's hours — no split lies strictly between them, so ``end_hour <= deadline`` means "before the deadline";
    (a cyclic block recurs through its whole segment, so these are the segment's bounds; a calendar block's are the
    earliest start and latest end of its members); ``hours`` (sum over members); ``members``: indices into the
    aligned grid (``MergedBlocks.grid_blocks`` blocks; a member cut by a split appears once on each side, with its
    hours divided); ``demand``: workload name -> tokens/s; ``label``: for reports.
    """

    index: int
    start_hour: float
    end_hour: float
    hours: float
    members: tuple[int, ...]
    demand: dict[str, float] = field(hash=False)
    label: str = ""


class MergedBlocks(list):
    """The result of ``merge_blocks``: a list of MergedBlock sorted by start hour, plus ``note`` (what was merged,
    for the plan's notes), ``grid_blocks`` (blocks of the aligned grid before merging), ``splits`` (the split
    hours that fell inside the month), ``grid_labels`` (the label of each grid block, e.g. "09:00-10:00") and
    ``grid_period`` (hours of the grid's cycle: 24, 168, CALENDAR for a calendar month; None for a flat grid)."""

    def __init__(self, blocks: Iterable[MergedBlock] = (), note: str = "", grid_blocks: int = 0,
                 splits: tuple[float, ...] = (), grid_labels: tuple[str, ...] = (), grid_period: int | None = None):
        super().__init__(blocks)
        self.note = note
        self.grid_blocks = grid_blocks
        self.splits = splits
        self.grid_labels = grid_labels
        self.grid_period = grid_period


# ------------------------------------------------------------------------------------------- labels and bins
def _hhmm(hour: int) -> str:
    return f"{hour:02d}:00"


def _cyclic_label(period: int, length: int, index: int) -> str:
    start = index * length
    if period == 24:
        return f"{_hhmm(start)}-{_hhmm(start + length)}"
    day, hour = divmod(start, 24)
    label = f"{DAY_NAMES[day]} {_hhmm(hour)}"
    if length != 1:
        label += f" ({length} h)"
    return label


def _bin_choice(n: int) -> tuple[int, int]:
    """(period_hours, block length in hours) of ``n`` cyclic blocks; period CALENDAR when n fits neither a day
    nor a week. A number of blocks dividing 24 is a day pattern (24 -> hours of the day, 6 -> 4-hour blocks),
    else one dividing 168 a week pattern (168 -> hours of the week, 7 -> days)."""
    if 24 % n == 0:
        return 24, 24 // n
    if 168 % n == 0:
        return 168, 168 // n
    return CALENDAR, 0


def _make(values: Sequence[float], kind: str, source: str, period: int | None, labels: Sequence[str],
          note: str, span: tuple[str, str] | None = None) -> DemandProfile:
    n = len(values)
    hours = HOURS_PER_MONTH / n
    blocks = tuple(Block(i, labels[i], hours, float(v)) for i, v in enumerate(values))
    total = sum(b.hours * b.demand for b in blocks)
    return DemandProfile(blocks=blocks, kind=kind, source=source, peak=max(values), mean=total / HOURS_PER_MONTH,
                         period_hours=period, note=note, span=span)


def _rebin_cyclic(values: Sequence[float], period: int, target: int) -> tuple[list[float], int, int]:
    """Rebin a cyclic profile (``len(values)`` blocks of a ``period``-hour cycle) into ``target`` blocks by MAX.

    Returns (values, period, block length). A day pattern goes into a week by repeating it; a week pattern into
    a day by the max over the seven days; either is then coarsened into blocks of whole hours."""
    new_period, length = _bin_choice(target)
    if new_period == CALENDAR:
        raise InputError("blocks", f"cannot bin a {period}-hour cycle into {target} blocks: {target} divides neither "
                         "24 (a day) nor 168 (a week)", accepted="a divisor of 24 or of 168, e.g. 24, 168, 6, 7, 42")
    src_len = period // len(values)
    hourly = [values[h // src_len] for h in range(period)]
    if new_period == 168 and period == 24:
        hourly = [hourly[h % 24] for h in range(168)]
    elif new_period == 24 and period == 168:
        hourly = [max(hourly[d * 24 + h] for d in range(7)) for h in range(24)]
    return [max(hourly[i * length:(i + 1) * length]) for i in range(target)], new_period, length


def _coarsen_calendar(values: Sequence[float], target: int) -> list[float]:
    n = len(values)
    if n % target:
        raise InputError("blocks", f"cannot bin {n} consecutive blocks into {target}: {target} does not divide {n}",
                         accepted=f"a divisor of {n}")
    step = n // target
    return [max(values[i * step:(i + 1) * step]) for i in range(target)]


def _check_blocks(blocks) -> int | None:
    if blocks is None:
        return None
    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
        raise InputError("blocks", f"must be a whole number of at least 1, got {blocks!r}",
                         accepted="24 (hours of the day), 168 (hours of the week) or a positive whole number")
    return blocks


def _from_cyclic(values: Sequence[float], period: int, kind: str, source: str, blocks: int | None,
                 what: str) -> DemandProfile:
    n = len(values)
    length = period // n
    if blocks is not None and blocks != n:
        old_period = period
        values, period, length = _rebin_cyclic(values, period, blocks)
        n = blocks
        how = {(24, 168): ", repeated over the 7 days of a week", (168, 24): ", max over the 7 days of the week"}
        note = f"{what}{how.get((old_period, period), '')}, in {n} blocks of {length} h" + \
            (" (max of each)" if length > 1 else "")
    else:
        note = what
    labels = [_cyclic_label(period, length, i) for i in range(n)]
    return _make(values, kind, source, period, labels, note)


# ------------------------------------------------------------------------------------------- constructors
def flat_profile(tokens_per_second: float, source: str = "flat") -> DemandProfile:
    """One block of 730 h at ``tokens_per_second`` (a finite number >= 0)."""
    v = _demand_value(tokens_per_second, "tokens_per_second")
    return _make([v], "flat", source, None, ["whole month"], f"flat {v:g} tokens/s")


def _field_of(p: "DemandProfile") -> str:
    """The plan-file key a profile came from: ``demand`` (an inline list) or ``demand_profile`` (a CSV)."""
    return "demand" if p.source == "inline" else _FIELD


def inline_profile(values: Sequence[float], blocks: int | None = None, source: str = "inline") -> DemandProfile:
    """A profile from a list of demands (tokens/s), one per block: 24 values are hours of the day, 168 hours of the
    week (Monday 00:00 first), any other count consecutive stretches of the month. ``blocks`` rebins it (as
    ``load_profile`` does). Raises InputError (field ``demand``) for an empty list or a negative/NaN value."""
    blocks = _check_blocks(blocks)
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
        raise InputError("demand", "must be a non-empty list of numbers (tokens/s), one per block")
    vals = [_demand_value(v, "demand", f"value {i + 1}: ") for i, v in enumerate(values)]
    n = len(vals)
    if n in (24, 168):
        kind_what = "inline demand, " + ("hours of the day" if n == 24 else "hours of the week")
        return _from_cyclic(vals, n, "inline", source, blocks, kind_what)
    note = f"inline demand, {n} consecutive blocks of the month"
    if blocks is not None and blocks != n:
        vals = _coarsen_calendar(vals, blocks)
        note += f", rebinned into {blocks} (max of each)"
    return _make(vals, "inline", source, CALENDAR, [f"block {i + 1}/{len(vals)}" for i in range(len(vals))], note)


def _demand_value(value, field_name: str, prefix: str = "") -> float:
    if isinstance(value, bool):
        raise InputError(field_name, f"{prefix}demand must be a number, got {value!r}")
    try:  # a CSV cell or a YAML string: a decimal number, not "1_8.5" (float() reads it as 18.5: issue 33)
        v = parse_decimal(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise InputError(field_name, f"{prefix}demand must be a number, got {value!r}") from None
    if math.isnan(v) or math.isinf(v):
        raise InputError(field_name, f"{prefix}demand must be a finite number, got {value!r}")
    if v < 0:
        raise InputError(field_name, f"{prefix}demand must be 0 or more tokens/s, got {value!r}")
    return v


# ------------------------------------------------------------------------------------------- CSV
def _rows(path: Path):
    """Yield (line number, cells) of the non-blank, non-comment (#) lines of a CSV file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(_FIELD, f"{path} is not UTF-8 text ({exc.reason})") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        yield lineno, [c.strip() for c in next(csv.reader([line]))]


def _parse_timestamp(text: str, lineno: int) -> datetime:
    t = text.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    try:
        ts = datetime.fromisoformat(t)
    except ValueError:
        raise InputError(_FIELD, f"line {lineno}: {text!r} is not an ISO 8601 timestamp "
                         "(e.g. 2024-03-01T14:00:00Z or 2024-03-01 14:00:00+02:00)") from None
    if ts.tzinfo is None:
        return ts.replace(tzinfo=timezone.utc)
    return ts.astimezone(timezone.utc)


def _parse_hour(text: str, lineno: int, top: int, column: str) -> int:
    try:
        f = parse_decimal(text)
    except ValueError:
        f = math.nan
    if not math.isfinite(f) or f != int(f) or not 0 <= f <= top:
        raise InputError(_FIELD, f"line {lineno}: {column} must be a whole number from 0 to {top}, got {text!r}")
    return int(f)


def _list_some(items: Sequence[str], most: int = 8) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" (and {len(items) - most} more)" if len(items) > most else "")


def load_profile(path: str | Path, blocks: int | None = None) -> DemandProfile:
    """:func:`read_profile`, its errors of one line of the file naming the file ("chat.csv line 25: ...", as the
    --measured and --trace readers do)."""
    try:
        return read_profile(path, blocks)
    except InputError as e:
        if not e.message.startswith("line "):
            raise
        raise InputError(e.field, f"{Path(path).name} {e.message}", accepted=e.accepted) from None


def read_profile(path: str | Path, blocks: int | None = None) -> DemandProfile:
    """Read a demand profile CSV (a header, then one row per time; ``#`` lines are comments).

    Layouts (column names case-insensitive; the demand column is ``demand`` or ``tokens_per_second``, in
    generated tokens/s for the whole fleet, a finite number >= 0):

    * ``hour, demand`` — hour of the day 0..23, every hour once;
    * ``hour_of_week, demand`` — 0..167 from Monday 00:00, every hour once;
    * ``timestamp, demand`` — ISO 8601 times (any timezone, converted to UTC; naive times are UTC), binned by
      hour of the week (168 blocks) by default, by hour of the day when ``blocks`` is 24, by ``blocks`` blocks of a
      day or week when ``blocks`` divides 24 or 168, else into ``blocks`` consecutive stretches of the span the rows
      cover (the month the profile describes). Each bin takes the MAX demand of its rows: capacity must cover the
      peak. A bin without rows is an error naming it.

    ``blocks`` rebins hour layouts too (by max: a day into a week by repetition, a week into a day by the max over
    its seven days). Raises InputError (field ``demand_profile``, message "line N: ...") for a missing file, an
    unknown or missing column, a bad, negative or NaN value, a duplicate hour or an empty bin.
    """
    blocks = _check_blocks(blocks)
    p = Path(path)
    if not p.is_file():
        raise InputError(_FIELD, f"file not found: {p}")
    rows = _rows(p)
    try:
        header_line, header = next(rows)
    except StopIteration:
        raise InputError(_FIELD, f"{p} is empty: expected a header such as 'hour,demand'") from None
    names = [h.lower() for h in header]
    accepted = "one of " + ", ".join(TIME_COLUMNS) + " and one of " + ", ".join(DEMAND_COLUMNS)
    unknown = [h for h, n in zip(header, names) if n not in TIME_COLUMNS + DEMAND_COLUMNS]
    if unknown:
        raise InputError(_FIELD, f"line {header_line}: unknown column {unknown[0]!r} in {p.name}", accepted=accepted)
    time_cols = [n for n in names if n in TIME_COLUMNS]
    demand_cols = [n for n in names if n in DEMAND_COLUMNS]
    if len(time_cols) != 1 or len(demand_cols) != 1:
        raise InputError(_FIELD, f"line {header_line}: {p.name} needs exactly one time column and one demand column, "
                         f"got {', '.join(header)}", accepted=accepted)
    ti, di = names.index(time_cols[0]), names.index(demand_cols[0])
    layout = time_cols[0]
    parsed: list[tuple[int, object, float]] = []
    for lineno, cells in rows:
        if len(cells) != len(header):
            raise InputError(_FIELD, f"line {lineno}: expected {len(header)} values ({', '.join(header)}), "
                             f"got {len(cells)}")
        d = _demand_value(cells[di], _FIELD, f"line {lineno}: ") if cells[di] != "" else None
        if d is None:
            raise InputError(_FIELD, f"line {lineno}: the demand is empty")
        if layout == "timestamp":
            t: object = _parse_timestamp(cells[ti], lineno)
        else:
            t = _parse_hour(cells[ti], lineno, 23 if layout == "hour" else 167, layout)
        parsed.append((lineno, t, d))
    if not parsed:
        raise InputError(_FIELD, f"{p} has a header but no rows")
    if layout == "timestamp":
        return _bin_timestamps(parsed, p, blocks)
    period = 24 if layout == "hour" else 168
    seen: dict[int, int] = {}
    values = [0.0] * period
    for lineno, h, d in parsed:
        if h in seen:
            raise InputError(_FIELD, f"line {lineno}: {layout} {h} is given twice (first on line {seen[h]})")
        seen[h] = lineno
        values[h] = d
    missing = [str(h) for h in range(period) if h not in seen]
    if missing:
        raise InputError(_FIELD, f"{p.name} has no row for {layout} {_list_some(missing)}: give every "
                         f"{layout.replace('_', ' ')} from 0 to {period - 1}")
    what = "hours of the day" if period == 24 else "hours of the week (0 = Monday 00:00)"
    kind = "hour_of_day" if period == 24 else "hour_of_week"
    return _from_cyclic(values, period, kind, str(p), blocks, f"{p.name}: {what}")


def _bin_timestamps(parsed, p: Path, blocks: int | None) -> DemandProfile:
    n = blocks or 168
    period, length = _bin_choice(n)
    times = [t for _, t, _ in parsed]
    t0, t1 = min(times), max(times)
    span = (t0.isoformat(), t1.isoformat())
    values: list[float | None] = [None] * n
    if period != CALENDAR:
        for _, t, d in parsed:
            hour = t.hour if period == 24 else t.weekday() * 24 + t.hour
            i = hour // length
            values[i] = d if values[i] is None else max(values[i], d)
        labels = [_cyclic_label(period, length, i) for i in range(n)]
        unit = ("hour of the day" if period == 24 else "hour of the week") if length == 1 else \
            f"{length}-hour block of the {'day' if period == 24 else 'week'}"
        note = f"{p.name}: {len(parsed)} timestamps binned by {unit} (UTC) into {n} blocks, max of each bin " \
               "(capacity must cover the peak)"
    else:
        distinct = sorted(set(times))
        gaps = sorted((b - a).total_seconds() for a, b in zip(distinct, distinct[1:]))
        step = gaps[len(gaps) // 2] if gaps else 3600.0
        total = (t1 - t0).total_seconds() + step
        width = total / n
        for _, t, d in parsed:
            i = min(int((t - t0).total_seconds() // width), n - 1)
            values[i] = d if values[i] is None else max(values[i], d)
        labels = []
        for i in range(n):
            start = datetime.fromtimestamp(t0.timestamp() + i * width, tz=timezone.utc)
            labels.append(start.strftime("%Y-%m-%d %H:%M"))
        note = f"{p.name}: {len(parsed)} timestamps from {span[0]} to {span[1]} binned into {n} consecutive blocks, " \
               "max of each bin (capacity must cover the peak)"
    empty = [labels[i] for i, v in enumerate(values) if v is None]
    if empty:
        raise InputError(_FIELD, f"{p.name}: no rows fall in {len(empty)} of the {n} blocks: {_list_some(empty)} "
                         "(the timestamps must cover every block; bin into fewer blocks with `blocks`)")
    return _make([float(v) for v in values], "timestamps", str(p), period, labels, note, span)


# ------------------------------------------------------------------------------------------- merge
def _block_length(profile: DemandProfile) -> Fraction:
    return Fraction(profile.period_hours) / len(profile.blocks)


def _align(profiles: Mapping[str, DemandProfile]) -> tuple[int | None, int, dict[str, list[float]], list[str]]:
    """Put every profile on one grid: (period, grid blocks, name -> grid values, grid labels).

    Cyclic profiles share the longest period (a day pattern repeats through a week) and the greatest common block
    length; calendar profiles share the largest block count, which every other count must divide; cyclic and
    calendar profiles do not mix. A flat profile aligns with anything."""
    shaped = {w: p for w, p in profiles.items() if p.period_hours is not None and len(p.blocks) > 1}
    if not shaped:
        return None, 1, {w: [p.blocks[0].demand] for w, p in profiles.items()}, ["whole month"]
    periods = {p.period_hours for p in shaped.values()}
    if CALENDAR in periods and len(periods) > 1:
        cal = next(w for w, p in shaped.items() if p.period_hours == CALENDAR)
        cyc = next(w for w, p in shaped.items() if p.period_hours != CALENDAR)
        raise InputError(_field_of(shaped[cal]), f"cannot align '{cal}' ({len(shaped[cal].blocks)} consecutive blocks of the month) "
                         f"with '{cyc}' (a {shaped[cyc].period_hours}-hour cycle): give both as hours of the day/week "
                         "or both as the same number of blocks", accepted="24, 168, or equal block counts")
    out: dict[str, list[float]] = {}
    if CALENDAR in periods:
        m = max(len(p.blocks) for p in shaped.values())
        for w, p in shaped.items():
            if m % len(p.blocks):
                other = next(x for x, q in shaped.items() if len(q.blocks) == m)
                raise InputError(_field_of(p), f"cannot align '{w}' ({len(p.blocks)} blocks) with '{other}' ({m} blocks): "
                                 "one block count must divide the other", accepted=f"a divisor of {m}")
            n = len(p.blocks)
            out[w] = [p.blocks[j * n // m].demand for j in range(m)]
        ref = next(p for p in shaped.values() if len(p.blocks) == m)
        labels = [b.label for b in ref.blocks]
        period: int | None = CALENDAR
    else:
        period = max(periods)  # 168 when any profile is a week pattern (24 divides 168)
        length = Fraction(0)
        for p in shaped.values():
            length = _gcd_fraction(length, _block_length(p))
        m = int(Fraction(period) / length)
        step = int(length)
        for w, p in shaped.items():
            src_len = int(_block_length(p))
            out[w] = [p.blocks[((j * step) % p.period_hours) // src_len].demand for j in range(m)]
        labels = [_cyclic_label(period, step, j) for j in range(m)]
    for w, p in profiles.items():
        if w not in out:
            out[w] = [p.blocks[0].demand] * m
    return period, m, out, labels


def _gcd_fraction(a: Fraction, b: Fraction) -> Fraction:
    if a == 0:
        return b
    return Fraction(math.gcd(a.numerator * b.denominator, b.numerator * a.denominator), a.denominator * b.denominator)


def merge_blocks(profiles: Mapping[str, DemandProfile], splits: Iterable[float] = ()) -> MergedBlocks:
    """Merge blocks with equal demand vectors (load-duration curve), never across a split.

    Args: ``profiles``: serving workload name -> DemandProfile (may be empty: a training-only plan gets one block per
        segment); ``splits``: hours from the month start (training deadlines); those outside (0, 730) change nothing.
    Alignment (``_align``): cyclic profiles go on the grid of the longest period and the finest block (24 hour-of-day
        blocks inside a 168 hour-of-week grid repeat every day); calendar profiles on the largest block count, which
        every other must divide; a flat profile fits any grid; anything else raises InputError.
    Time: the splits cut the month into segments. A cyclic grid block recurs all month, so each segment [a, b) holds
        (b - a) / m of its hours; a calendar grid block j covers [j·730/m, (j+1)·730/m) and is cut where a split
        falls inside it. Within a segment, blocks with the same demand vector are merged, their hours added.
    Returns MergedBlocks (a list sorted by start hour, then first member) with ``note`` ("168 blocks -> 37 merged
    blocks ..."). Preserved exactly: Σ hours = 730, Σ hours × demand and the peak of every workload.
    """
    cut: list[float] = []
    for s in splits:
        s = float(s)
        if math.isnan(s):
            raise InputError("splits", "a split hour must be a number, got NaN")
        if 0 < s < HOURS_PER_MONTH:
            cut.append(s)
    bounds = [0.0] + sorted(set(cut)) + [HOURS_PER_MONTH]
    period, m, grid, labels = _align(profiles)
    names = list(profiles)
    width = HOURS_PER_MONTH / m
    groups: list[dict] = []  # one per (segment, demand vector), in order of first appearance
    for a, b in zip(bounds, bounds[1:]):
        seg: dict[tuple[float, ...], dict] = {}
        for j in range(m):
            if period != CALENDAR:  # flat or cyclic: spread over the segment
                start, end, hours = a, b, (b - a) / m
            else:
                start, end = max(a, j * width), min(b, (j + 1) * width)
                hours = end - start
            if hours <= _MIN_HOURS:
                continue
            key = tuple(grid[w][j] for w in names)
            g = seg.get(key)
            if g is None:
                g = seg[key] = {"start": start, "end": end, "hours": 0.0, "members": [], "key": key}
                groups.append(g)
            g["start"], g["end"] = min(g["start"], start), max(g["end"], end)
            g["hours"] += hours
            g["members"].append(j)
    groups.sort(key=lambda g: (g["start"], g["members"][0]))
    merged = []
    for i, g in enumerate(groups):
        label = labels[g["members"][0]]
        if len(g["members"]) > 1:
            label += f" (+{len(g['members']) - 1} more)"
        merged.append(MergedBlock(index=i, start_hour=g["start"], end_hour=g["end"], hours=g["hours"],
                                  members=tuple(g["members"]), demand=dict(zip(names, g["key"])), label=label))
    note = f"{m} block{'s' if m != 1 else ''}"
    if cut:
        note += f" x {len(bounds) - 1} segments (split at " + ", ".join(f"{s:g} h" for s in bounds[1:-1]) + ")"
    note += f" -> {len(merged)} merged block{'s' if len(merged) != 1 else ''}"
    if m > 1:
        note += " (equal demand merged, hours added)"
    return MergedBlocks(merged, note=note, grid_blocks=m, splits=tuple(sorted(set(cut))), grid_labels=tuple(labels),
                        grid_period=period)
