"""Request traces (``--trace FILE``): the request lengths (and arrival times) a serving workload is sized on (part of
:mod:`optimizer.sizing`; re-exported by :mod:`optimizer.sizing.serving`, where it was first written).

Units: tokens, seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.inputs import parse_decimal


#: Column names of a request trace (``--trace FILE``): prompt and generated tokens per request (OpenAI usage
#: ``prompt_tokens``/``completion_tokens``, vLLM benchmark ``input_len``/``output_len``, ISL/OSL).
TRACE_COLUMNS: dict[str, tuple[str, ...]] = {
    "input_tokens": ("input_tokens", "prompt_tokens", "input_len", "isl", "prompt_len"),
    "output_tokens": ("output_tokens", "completion_tokens", "output_len", "osl", "generated_tokens"),
}
#: Optional arrival-time column of a trace: seconds (any origin), or an ISO 8601 timestamp.
TRACE_ARRIVAL_COLUMNS = ("arrival_s", "arrival_time", "timestamp", "time", "arrived_at")


@dataclass(frozen=True)
class TraceLengths:
    """Request lengths of a trace: ``requests`` rows; mean and 99th-percentile input and output tokens; with an
    arrival column, ``arrivals`` (s from the first request, non-decreasing) and ``lengths`` ((input, output) per
    request, in arrival order) for the operating point to replay (issue 27); without, ``arrivals`` is empty and
    ``lengths`` in file order (the request-size mix, optimizer.sizing.buckets)."""

    path: str
    requests: int
    mean_input: int
    mean_output: int
    p99_input: int
    p99_output: int
    arrivals: tuple = ()
    lengths: tuple = ()

    @property
    def rate(self) -> float | None:
        """Requests/s of the trace's arrivals: (n - 1) / span; None without arrivals or with a zero span."""
        if len(self.arrivals) < 2 or self.arrivals[-1] <= self.arrivals[0]:
            return None
        return (len(self.arrivals) - 1) / (self.arrivals[-1] - self.arrivals[0])

    def describe(self) -> str:
        text = (f"lengths from the trace {self.path}: {self.requests:,} requests, mean {self.mean_input:,} input + "
                f"{self.mean_output:,} output tokens (p99 {self.p99_input:,} + {self.p99_output:,})")
        if self.rate:
            text += (f"; arrival times over {self.arrivals[-1] - self.arrivals[0]:,.1f} s ({self.rate:,.3g} "
                     "requests/s), replayed by the operating point")
        return text


#: Most tokens one request of a trace may have: 100x the longest context of any model (Llama 4 Scout's 10,485,760).
MAX_REQUEST_TOKENS = 1_000_000_000


def load_trace(path: str) -> TraceLengths:
    """Mean request lengths from a CSV trace with one row per request and columns :data:`TRACE_COLUMNS` (the rest is
    ignored). The serving model sizes the mean request (a paged KV cache holds what the running requests hold on
    average); the p99 lengths are reported.

    Raises:
        InputError("trace"): missing file, no usable column, a row without a whole number >= 0 (row and column named),
            no rows, or a mean below one token.
    """
    import csv as _csv
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise InputError("trace", f"no such file: {path}", accepted="a CSV with input_tokens and output_tokens columns")
    try:
        with open(p, newline="", encoding="utf-8-sig") as fh:
            reader = _csv.DictReader(fh)
            cols = {c.strip().lower(): c for c in (reader.fieldnames or [])}
            pick = {}
            for key, aliases in TRACE_COLUMNS.items():
                found = next((cols[a] for a in aliases if a in cols), None)
                if found is None:
                    raise InputError("trace", f"{path} has no {key} column", accepted=", ".join(aliases))
                pick[key] = found
            arr_col = next((cols[a] for a in TRACE_ARRIVAL_COLUMNS if a in cols), None)
            ins, outs, arr = [], [], []
            for i, row in enumerate(reader, start=2):
                if arr_col is not None:
                    arr.append(_arrival_s(row.get(arr_col), path, i, arr_col))
                for key, store in (("input_tokens", ins), ("output_tokens", outs)):
                    v = (row.get(pick[key]) or "").strip()
                    try:
                        x = parse_decimal(v)  # not float(): "1_8" is no token count (issue 33)
                    except ValueError:
                        x = -1.0
                    if not math.isfinite(x) or x < 0 or not x.is_integer() or x > MAX_REQUEST_TOKENS:
                        raise InputError("trace", f"{path} line {i}: {pick[key]} {v!r:.40} is not a whole number "
                                         f"from 0 to {MAX_REQUEST_TOKENS:,}", accepted="token counts")
                    store.append(int(x))
    except UnicodeDecodeError as exc:
        raise InputError("trace", f"{path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); save it as UTF-8",
                         accepted="a CSV file in UTF-8") from None
    except (OSError, _csv.Error) as exc:  # unreadable; a NUL byte or a field over csv's 128 KiB limit
        raise InputError("trace", f"cannot read {path}: {exc}", accepted="a CSV file") from None
    if not ins:
        raise InputError("trace", f"{path} has no requests", accepted="one row per request")

    def p99(xs: list[int]) -> int:
        s = sorted(xs)
        return s[min(len(s) - 1, math.ceil(0.99 * len(s)) - 1)]

    mi, mo = round(sum(ins) / len(ins)), round(sum(outs) / len(outs))
    if mi < 1 or mo < 1:
        raise InputError("trace", f"{path}: mean input {mi} and output {mo} tokens; both must be >= 1",
                         accepted="requests with prompts and outputs")
    arrivals, lengths = (), tuple(zip(ins, outs))
    if arr:
        order = sorted(range(len(arr)), key=arr.__getitem__)
        t0 = arr[order[0]]
        arrivals = tuple(arr[k] - t0 for k in order)
        lengths = tuple((ins[k], outs[k]) for k in order)
    return TraceLengths(str(path), len(ins), mi, mo, p99(ins), p99(outs), arrivals, lengths)


def _arrival_s(value, path: str, line: int, col: str) -> float:
    """A trace row's arrival time in seconds: a number, or an ISO 8601 timestamp (its POSIX seconds). Raises
    InputError("trace") naming the row."""
    from datetime import datetime

    v = (value or "").strip()
    try:
        x = parse_decimal(v)
    except ValueError:
        try:
            x = datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
        except ValueError:
            x = math.nan
    if not math.isfinite(x):
        raise InputError("trace", f"{path} line {line}: {col} {v!r:.40} is not a time",
                         accepted="seconds, or an ISO 8601 timestamp such as 2026-01-05T10:00:00.250Z")
    return x
