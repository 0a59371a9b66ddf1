"""Renderers: a rich table for people, JSON for programs. Pure output, no computation."""

from __future__ import annotations

from pathlib import Path

import json
import math
from typing import Any

from gpuopt.kernel.records import short_source as _short_source, tier_label
from gpuopt.kernel.words import count_range as _count_range
from gpuopt.templating import UNPROVEN_MARK, UNPROVEN_NOTE, not_computed_hint, serving_split_text, unproven_caveat



def _pct(frac: float) -> str:
    """A gap (0..1) as a percent for people: 3 significant digits, float noise (< 1e-9) shown as 0."""
    return "0" if abs(frac) < 1e-9 else f"{100 * frac:.3g}"


def _days(age: float) -> str:
    n = round(age)
    return f"{n:.0f} day" + ("" if n == 1 else "s")

#: --quiet: no warnings on stderr; --no-color: no styles (set by gpuopt.cli for the command being run).
QUIET = False
NO_COLOR = False
#: --format json: warnings are not printed on stderr (the JSON document carries them; stderr is for an error
#: document only)
JSON_STDERR = False


def _console():
    """A rich console for stdout: as wide as the terminal (tables fold long text to fit it, never cutting a number);
    200 columns when stdout is a file or a pipe (COLUMNS overrides both). Colors follow NO_COLOR / --no-color."""
    import os
    import shutil
    import sys

    from rich.console import Console

    if os.environ.get("COLUMNS", "").isdigit():
        width = int(os.environ["COLUMNS"])
    elif sys.stdout.isatty():
        width = shutil.get_terminal_size((100, 40)).columns
    else:
        width = 200
    plain = NO_COLOR or bool(os.environ.get("NO_COLOR"))  # https://no-color.org: set and not empty
    return Console(width=max(width, 40), highlight=False, soft_wrap=False, no_color=plain or None,
                   **({"color_system": None} if plain else {}))


def _fit(con, table, drop: tuple[str, ...] = ()):
    """Make a rich Table fit the console: numbers (right-justified columns) are never broken or cut; text columns
    wrap between words, a word longer than the column folds. When the table is too wide, text columns narrow step by
    step (a word of up to 28, 20, 16 characters on a line), then the columns named in ``drop`` are left out in that
    order (the caption says which: ``--format json`` or a wider terminal shows them), then text narrows further (12,
    8, 6), then the last columns (text first, never the first column). Returns the table."""

    def plain(cell) -> str:
        return getattr(cell, "plain", None) or str(cell)

    def cells(col) -> list[str]:
        return [line for c in [*col._cells, col.header] for line in plain(c).splitlines() or [""]]

    def natural(col) -> int:
        return max((len(x) for x in cells(col)), default=1)

    def need(col, cap: int) -> int:
        if col.justify == "right":
            return natural(col)
        return min(cap, natural(col), max((len(w) for x in cells(col) for w in x.split()), default=1))

    def total(width) -> int:
        return sum(width(c) + 3 for c in table.columns) + 1  # a cell's padding and border: 3 characters

    if total(natural) <= con.width:
        return table
    for col in table.columns:
        number = col.justify == "right"
        col.no_wrap = number
        col.overflow = "ellipsis" if number else "fold"
    hidden = []
    cap = 28
    for cap in (28, 20, 16):
        if total(lambda c: need(c, cap)) <= con.width:
            break
    for name in drop:
        if total(lambda c: need(c, cap)) <= con.width:
            break
        for i, col in enumerate(table.columns):
            if str(col.header) == name:
                del table.columns[i]
                hidden.append(name)
                break
    for cap in (cap, 12, 8, 6):
        if total(lambda c: need(c, cap)) <= con.width:
            break
    # still too wide: leave out the last columns (text first), never the first one, rather than cut a number
    while total(lambda c: need(c, cap)) > con.width and len(table.columns) > 2:
        texts = [i for i, c in enumerate(table.columns) if i > 0 and c.justify != "right"]
        i = texts[-1] if texts else len(table.columns) - 1
        hidden.append(str(table.columns[i].header))
        del table.columns[i]
    # fixed widths: each column its need, the room left shared by how much more the column would use
    spare = max(0, con.width - total(lambda c: need(c, cap)))
    more = {id(c): natural(c) - need(c, cap) for c in table.columns}
    want = sum(more.values()) or 1
    for col in table.columns:
        col.width = need(col, cap) + min(more[id(col)], spare * more[id(col)] // want)
    if hidden:
        note = f"narrow terminal: {', '.join(hidden)} not shown (a wider terminal or --format json shows them)"
        table.caption = f"{table.caption}; {note}" if table.caption else note
        table.caption_justify = "left"
    return table


def _json(obj: Any) -> None:
    def default(o):
        if hasattr(o, "item"):
            return o.item()
        if isinstance(o, set):
            return sorted(o)
        return str(o)

    def clean(o):
        if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
            return None
        if isinstance(o, float):
            return o + 0.0  # -0.0 -> 0.0
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    print(json.dumps(clean(obj), indent=2, default=default))


def _unpriced(alt: dict, time_limit_s: float | None = None) -> str:
    """What an alternative without a total says: no plan exists, or it was not priced in the time it had, and how
    to price it (a longer --time-limit, or a plan of that alternative alone; issue 32)."""
    if alt.get("status") == "infeasible":
        return f"no plan ({alt.get('reason') or 'infeasible'})"
    return not_computed_hint("not priced in the time the alternatives had (the plan above is complete)",
                             time_limit_s) + (", or plan it with that --scenario, --precision or --allow-marketplace")


def _delta(alt: float, base: float) -> str:
    """'$1,234.00 more' / '$1,234.00 less' / 'the same' of an alternative against the plan."""
    d = float(alt) - float(base)
    if abs(d) < 0.005:
        return "the same"
    return f"{_usd(abs(d))} {'more' if d > 0 else 'less'}" + (f", {100 * d / base:+.0f} %" if base else "")


def _usd(x: float | None) -> str:
    """$1,234.56; a negative amount -$91,867.71 (not $-91,867.71)."""
    if x is None:
        return "—"
    return f"-${-x:,.2f}" if x < 0 and round(x, 2) != 0 else f"${abs(x) if round(x, 2) == 0 else x:,.2f}"


def _hours(h: float) -> str:
    """Hours a month of a plan line to the JSON's 6 decimals, trailing zeros dropped (334.583333, 730): with $/h and
    the count they give the line's $/month to the cent (a fresh user could not: 31.2 shown for 31.196319)."""
    return f"{h:,.6f}".rstrip("0").rstrip(".")




def date_span(p: dict) -> str:
    """'as of D' or 'as of D1 to D2' of a provider's prices, with the rows no source dates ("412 undated")."""
    new, old = p.get("as_of"), p.get("oldest_as_of")
    span = f"as of {new or 'unknown'}" if not old or old == new else f"as of {old} to {new}"
    n = p.get("undated_rows") or 0
    return span + (f", {n} rows undated" if n else "")


def _prices_line(prices: dict) -> str:
    """One line: per provider, the date of its prices and where they came from (cache, shipped snapshot, catalog)."""
    parts = []
    for prov, p in sorted(prices.get("providers", {}).items()):
        origin = str(p.get("origin") or prices.get("catalog"))
        age = p.get("age_days")
        if origin == "shipped snapshot":  # rows of several source dates: the span, and how many have none
            parts.append(f"{prov} {date_span(p)} (shipped snapshot)")
        else:  # a cache snapshot keeps the rows a partial import did not carry: their span, not just the newest
            where = "cache" if origin.startswith("cache") else origin
            parts.append(f"{prov} {date_span(p)}"
                         + (f" ({where}, newest {_days(age)} old)" if age is not None else f" ({where})"))
    return "Prices: " + "; ".join(parts)


def recommend(result, fmt: str) -> None:
    """Render a gpuopt.api.RecommendResult (the plan of optimizer.planning and its explanation)."""
    if fmt == "json":
        _json(result.to_dict())
        return
    con = _console()
    plan = result.plan
    limit = (getattr(result, "workload", None) or {}).get("time_limit_s")
    caveat = unproven_caveat(plan.status, getattr(plan, "gap", None), plan.total_usd,
                             objective=getattr(plan, "objective", "cost"), time_limit_s=limit,
                             strategies=getattr(plan, "strategies", None))
    if caveat:  # first, before anything rests on the plan (issue 32)
        from rich.markup import escape

        con.print(f"[bold yellow]{escape(caveat)}[/]; figures marked {UNPROVEN_MARK} rest on this plan",
                  soft_wrap=False)
    con.print(result.headline)
    # a plan counts the rows it may use; `prices status` and `prices list` count every row of the snapshot (issue 32)
    con.print(_prices_line(result.prices) + " (rows counted: the offers this plan may use, by its providers, "
              "regions, GPUs and zones; `gpuopt prices status` counts every row)")
    _plan(con, plan, time_limit_s=limit)


def estimate(result, fmt: str) -> None:
    """Render a gpuopt.api.EstimateResult."""
    if fmt == "json":
        _json(result.to_dict())
        return
    from rich.table import Table

    con = _console()
    n = result.numbers
    head = f"Estimate: {result.model}, {result.task}, on {result.gpu}"
    if "layout" in n and n.get("gpus") and n.get("wall_hours") is not None:  # train/finetune: the answer first
        head += (f": {_n(n['gpus'], 'GPU')}, {n['wall_hours']:,.0f} h ({n['wall_hours'] / 24:,.1f} days), "
                 f"{n['gpu_hours']:,.0f} GPU-hours, MFU {n['mfu']:.0%}")
    con.print(head)
    t = Table(show_header=True)
    t.add_column("quantity")
    t.add_column("value", justify="right")
    n = result.numbers
    fmt_map = {
        "memory_gib_per_replica": "{:,.2f} GiB", "memory_gib_per_gpu": "{:,.2f} GiB", "gpus_per_replica": "{:g}",
        "tensor_parallel": "{}", "pipeline_parallel": "{}", "precision": "{}", "engine": "{}", "scenario": "{}",
        "input_tokens": "{:,}", "output_tokens": "{:,}", "concurrency": "{:,}",
        "tokens_per_second_per_replica": "{:,.1f}", "tokens_per_second_per_gpu": "{:,.1f}", "ttft_ms": "{:,.0f} ms",
        "tpot_ms": "{:,.1f} ms", "ttft_target_ms": "p99 <= {:,.0f} ms", "tpot_target_ms": "p99 <= {:,.0f} ms",
        "kv_capacity_sequences": "{:,}", "meets_targets": "{}", "estimate_source": "{}",
        "gpus": "{:,}", "mfu": "{:.1%}", "step_time_s": "{:,.2f} s", "train_flops": "{:.3e}", "gpu_hours": "{:,.0f}",
        "compute_hours": "{:,.1f}", "wall_hours": "{:,.1f}", "goodput": "{:.2%}", "goodput_spot": "{:.2%}",
        "meets_deadline": "{}", "wall_hours_one_replica": "{:,.1f}", "replicas_needed": "{}", "gpus_needed": "{:g}",
    }
    if "layout" in n:  # train/finetune: the job's layout, and wall_hours replaces wall_hours_one_replica
        for key in ("wall_hours_one_replica", "gpus_per_replica", "memory_gib_per_replica"):
            fmt_map.pop(key)  # the whole job's: gpus, memory_gib_per_gpu and wall_hours say it
        lay = n["layout"]
        from optimizer.sizing.training import TrainLayout

        t.add_row("layout", TrainLayout.from_dict(lay).describe())
        t.add_row("framework / precision / optimizer", f"{lay['framework']} / {lay['precision']} / {lay['optimizer']}")
        t.add_row("global batch", f"{lay['global_batch_tokens']:,.0f} tokens")
    for k, f in fmt_map.items():
        if k in n and n[k] is not None:
            t.add_row(k, f.format(n[k]))
    if result.task == "serve" and n.get("ttft_target_ms") is None and n.get("tpot_target_ms") is None:
        t.add_row("latency targets", "none (offline)")
    op = n.get("operating_point")
    if op:  # issue 27: the replica at the load users send
        t.add_row("load per replica", f"{op['rate']:,.3g} requests/s of {op['request_rate_total']:,.3g} over "
                  f"{op['replicas']} replica{'s' if op['replicas'] > 1 else ''} "
                  f"({'the trace' if 'trace' in op['method'] else 'Poisson arrivals'}, {op['method']})")
        t.add_row("utilization", f"{op['utilization']:.0%} of the {op['max_rate']:,.3g} requests/s it saturates at")
        if not op["saturated"] and op.get("ttft_p99_ms") is not None:
            t.add_row("TTFT p50 / p90 / p99", f"{op['ttft_p50_ms']:,.0f} / {op['ttft_p90_ms']:,.0f} / "
                                               f"{op['ttft_p99_ms']:,.0f} ms")
            t.add_row("TPOT p50 / p90 / p99", f"{op['tpot_p50_ms']:,.1f} / {op['tpot_p90_ms']:,.1f} / "
                                               f"{op['tpot_p99_ms']:,.1f} ms")
        cap = n.get("at_capacity") or {}
        if cap:
            t.add_row("at its sized batch", f"batch {cap['concurrency']:,}, TTFT {cap['ttft_ms']:,.0f} ms, TPOT "
                                              f"{cap['tpot_ms']:,.1f} ms, {cap['tokens_per_second_per_replica']:,.0f} tokens/s")
    dis = n.get("disaggregated")
    if dis:  # issue 27 point 5: prefill and decode on separate replicas
        t.add_row("disaggregated unit", f"{dis['prefill_replicas']} prefill + {dis['decode_replicas']} decode replicas of "
                  f"{dis['gpus_per_replica']} GPU(s), KV over {dis['link']} ({dis['kv_transfer_ms']:.1f} ms/request)")
        t.add_row("  its throughput", f"{dis['tokens_per_second']:,.0f} tokens/s = "
                  f"{dis['tokens_per_second_per_gpu']:,.0f} per GPU; TTFT {dis['ttft_ms']:,.0f} ms, TPOT "
                  f"{dis['tpot_ms']:,.1f} ms")
    for k, v in (n.get("breakdown_gib") or {}).items():
        t.add_row(f"  {k} (GiB/replica)", f"{v:,.2f}")
    con.print(_fit(con, t))
    if n.get("curve") is not None:
        _curve_table(con, n)
    for a in result.assumptions:
        con.print(f"- {a}")


def _curve_table(con, n: dict) -> None:
    """The latency curve of ``estimate --sweep`` (issue 27): one row per operating point, the Pareto front marked."""
    from rich.table import Table

    t = Table(title="Throughput / latency curve (Poisson arrivals, simulated; * = Pareto front: no point has more "
                    "tokens/s per GPU and per user)", show_header=True)
    for c in ("precision", "TP", "load", "req/s", "tok/s/GPU", "tok/s/user", "TTFT p50/p99 ms", "TPOT p50/p99 ms",
              "targets", ""):
        t.add_column(c, justify="right")
    for p in n["curve"]:
        t.add_row(p["precision"], str(p["tensor_parallel"]), f"{p['utilization']:.0%}", f"{p['rate']:,.3g}",
                  f"{p['tokens_per_second_per_gpu']:,.0f}", f"{p['tokens_per_second_per_user']:,.1f}",
                  f"{p['ttft_p50_ms']:,.0f} / {p['ttft_p99_ms']:,.0f}", f"{p['tpot_p50_ms']:,.1f} / {p['tpot_p99_ms']:,.1f}",
                  "met" if p["meets_targets"] else "missed", "*" if p["pareto"] else "")
    con.print(_fit(con, t))
    for note in n.get("curve_notes") or []:
        con.print(f"- left out: {note}")


def curve_png(result) -> bytes:
    """The PNG of ``estimate --sweep``'s curve: tokens/s per GPU against tokens/s per user (1000 / p50 TPOT), one
    line per precision and TP size, the Pareto front drawn over them (gpuopt.charting)."""
    from gpuopt.charting import figure, png_bytes

    pts = result.numbers.get("curve") or []
    fig = figure()
    ax = fig.add_subplot(1, 1, 1)
    for key in dict.fromkeys((p["precision"], p["tensor_parallel"]) for p in pts):
        xs = [p for p in pts if (p["precision"], p["tensor_parallel"]) == key]
        ax.plot([p["tokens_per_second_per_user"] for p in xs], [p["tokens_per_second_per_gpu"] for p in xs],
                marker="o", label=f"{key[0]} TP{key[1]}")
    front = sorted((p for p in pts if p["pareto"]), key=lambda p: p["tokens_per_second_per_user"])
    if front:
        ax.plot([p["tokens_per_second_per_user"] for p in front], [p["tokens_per_second_per_gpu"] for p in front],
                color="black", linestyle="--", label="Pareto front")
    ax.set_xlabel("tokens/s per user (1000 / p50 TPOT)")
    ax.set_ylabel("tokens/s per GPU")
    ax.set_title(f"{result.model} on {result.gpu}: throughput vs latency")
    if pts:
        ax.legend()
    return png_bytes(fig)


def known(models: list, gpus: list, fmt: str) -> None:
    if fmt == "json":
        from gpuopt.schemas import envelope

        _json(envelope("models", {"models": [str(m) for m in models], "gpus": [str(g) for g in gpus]}))
        return
    con = _console()
    con.print("Models: " + ", ".join(str(m) for m in models))
    con.print("GPUs: " + ", ".join(str(g) for g in gpus))


def prices_list(result, fmt: str) -> None:
    """Render a gpuopt.api.PricesResult."""
    if fmt == "json":
        _json(result.to_dict())
        return
    from rich.table import Table

    con = _console()
    con.print(_prices_line(result.prices))
    t = Table(title=f"{len(result.rows)} of {result.total_matching} offers, cheapest first", title_justify="left")
    for col in ("provider", "tier", "region", "zone", "instance_type", "GPUs", "fabric", "pricing", "payment", "$/h",
                "$/GPU-h", "upfront $", "source", "as_of"):
        t.add_column(col, justify="right" if col in ("$/h", "$/GPU-h", "upfront $") else "left",
                     no_wrap=col not in ("source",))
    for r in result.rows:
        est = str(r.get("source") or "").startswith("rule:")
        zone = (r.get("zone") or "") + (f" ({r['zone_kind']})" if r.get("zone_kind") else "")
        t.add_row(r["provider"], tier_label(r.get("tier")), r["region"], zone, r["instance_type"],
                  f"{r['gpu_count']:g} x {r['gpu_model']} ("
                  + ("?" if r.get("gpu_memory_gib") is None else f"{r['gpu_memory_gib']:g}") + " GiB)",
                  r.get("fabric") or "?",
                  r["pricing"], (r.get("payment") or "") + (f" ({r['offering_class']})" if r.get("offering_class")
                                                             and r.get("pricing") != "on_demand" else ""),
                  f"{r['usd_per_hour']:,.4f}" + ("*" if est else ""), f"{r['usd_per_gpu_hour']:,.4f}",
                  f"{(r.get('upfront_usd') or 0):,.0f}", _short_source(r.get("source")), str(r.get("as_of") or ""))
    con.print(_fit(con, t, drop=("fabric", "zone", "source", "upfront $", "as_of", "payment", "$/GPU-h")))
    if not result.rows:
        from gpuopt.kernel.records import SAVINGS_PLAN_TERM_HOURS, WINDOW_PRICING

        asked = set(getattr(result, "pricing", None) or ())
        if asked & (set(SAVINGS_PLAN_TERM_HOURS) | set(WINDOW_PRICING)):
            con.print("No offer matches. The shipped data has no savings-plan or Flex-start rows (no public source "
                      "of GPU rates was found; README \"Where the prices come from\"): `gpuopt prices refresh "
                      "--savings-plans` (AWS), a refresh of Azure, or of GCP for Flex-start, fetches them.")
    if any(str(r.get("source") or "").startswith("rule:") for r in result.rows):
        con.print("* estimated: a reserved rate derived by a documented discount rule, not a quote")


def prices_status(status: dict, fmt: str) -> None:
    """Render the dict of gpuopt.api.prices_status."""
    if fmt == "json":
        _json(status.to_dict() if hasattr(status, "to_dict") else status)
        return
    from rich.table import Table

    con = _console()
    prices = status.get("prices", {})
    if prices.get("catalog") != "shipped snapshot":
        con.print(f"Prices from: {prices.get('catalog')}")
    else:
        con.print(f"Shipped snapshot: {prices.get('snapshot')} (used for every provider without a cached snapshot)")
    if status.get("built_at"):
        con.print(f"Snapshot built: {status.get('built_at')} (schema version {status.get('snapshot_schema_version')})")
    if status.get("as_of_note") and not QUIET:
        con.print(f"[yellow]Note on dates:[/] {status['as_of_note']}")
    t = Table(title="Rows per provider", title_justify="left")
    shown = ["on_demand", "spot", "reserved_1y", "reserved_3y"]
    shown += sorted({k for p in prices.get("providers", {}).values() for k in p.get("rows_by_pricing", {})} - set(shown))
    for col in ("provider", "in use", "rows", *shown, "estimated", "undated", "as of", "age (days)", "skipped"):
        t.add_column(col, justify="left" if col in ("provider", "as of") else "right")
    prov_meta = status.get("providers", {}) if isinstance(status.get("providers"), dict) else {}
    for prov, p in sorted(prices.get("providers", {}).items()):
        rbp = p.get("rows_by_pricing", {})
        meta = prov_meta.get(prov, {})
        skipped = meta.get("skipped_total")
        if skipped is None and isinstance(meta.get("skipped"), dict):
            skipped = sum(meta["skipped"].values())
        if str(p.get("origin", "")).startswith("cache"):  # the cache snapshot in use, not the shipped one
            used = [c for c in (status.get("cache") or {}).get("snapshots") or []
                    if c.get("provider") == prov and c.get("ok") and str(p.get("origin")).endswith(f"({Path(str(c.get('file'))).name})")]
            skipped = used[0].get("skipped_total") if used else None
        old, new = p.get("oldest_as_of"), p.get("as_of")
        dates = str(new) if not old or old == new else f"{old} to {new}"
        ages = "—" if p.get("age_days") is None else (
            f"{p['age_days']:.0f}" if p.get("oldest_age_days") is None or round(p["oldest_age_days"]) == round(p["age_days"])
            else f"{p['age_days']:.0f}-{p['oldest_age_days']:.0f}")
        t.add_row(prov, str(p.get("origin", "")).split(" ")[0], str(p.get("rows")), *(str(rbp.get(k, 0)) for k in shown),
                  str(p.get("estimated_rows")), str(p.get("undated_rows", 0)), dates, ages,
                  "—" if skipped is None else str(skipped))
    con.print(_fit(con, t))
    aged = {prov: p["rows_by_age"] for prov, p in prices.get("providers", {}).items() if p.get("rows_by_age")}
    if aged:  # issue 29: the share of rows by the age of their price
        from gpuopt.price_age import AGE_BUCKETS, OLDER, UNDATED

        keys = [k for _, k in AGE_BUCKETS] + [OLDER, UNDATED]
        heads = ["< 30 days", "30-89 days", "90-364 days", "365+ days", "undated"]
        at = Table(title="Rows by the age of their price (days from its as-of date to today)", title_justify="left")
        for col in ("provider", *heads):
            at.add_column(col, justify="left" if col == "provider" else "right")
        for prov, ages in sorted(aged.items()):
            total = sum(ages.get(k, 0) for k in keys) or 1
            at.add_row(prov, *(f"{ages.get(k, 0)} ({100.0 * ages.get(k, 0) / total:.0f} %)" for k in keys))
        con.print(_fit(con, at))
    if isinstance(status.get("source_dates"), list) and status["source_dates"]:
        st = Table(title="Sources and the dates their prices held", title_justify="left")
        for col in ("provider", "source", "as of", "age (days)", "rows"):
            st.add_column(col, justify="right" if col in ("age (days)", "rows") else "left")
        for r in status["source_dates"]:
            st.add_row(r["provider"], r["source"], r["as_of"], "—" if r["age_days"] is None else f"{r['age_days']:.0f}",
                       str(r["rows"]))
        con.print(_fit(con, st))
    reasons = {}
    for prov, meta in prov_meta.items():
        for code, n in (meta.get("skipped") or {}).items():
            reasons[code] = reasons.get(code, 0) + n
    if reasons:
        con.print("Rows refused or left out (pricing_cache/data/skipped.csv): "
                  + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])))
    snaps = (status.get("cache") or {}).get("snapshots") or []
    con.print(f"Price cache: {(status.get('cache') or {}).get('dir')} — {len(snaps)} snapshot(s), "
              f"history kept {(status.get('cache') or {}).get('retention_days', 0):g} days")
    if snaps:
        ct = Table(title="Cached snapshots (from `gpuopt prices refresh` / `import`)", title_justify="left")
        for col in ("provider", "prices as of", "written", "rows", "regions", "state"):
            ct.add_column(col, justify="right" if col in ("rows", "regions") else "left")
        for sn in snaps:
            regions = sn.get("regions") or {}
            ct.add_row(sn["provider"], str(sn.get("as_of")), str(sn.get("created_at"))[:19], str(sn.get("rows")),
                       str(len(regions.get("done", []))), "ok" if sn.get("ok") else f"[red]unusable: {sn.get('error')}[/]")
        con.print(_fit(con, ct))
    for prov, meta in sorted(prov_meta.items()):
        srcs = meta.get("sources") or meta.get("source_files")
        if srcs:
            con.print(f"{prov}: " + "; ".join(str(s) for s in (srcs if isinstance(srcs, list) else [srcs])))


def warnings(prices: dict, more: list[str] | None = None) -> None:
    """Price warnings (stale prices, corrupted cache snapshots skipped, shipped snapshot in use), then ``more`` (the
    review's data warnings: a window the data covers only in part), on stderr, so that `--format json` on stdout
    stays clean (the JSON carries them too, under prices.warnings and warnings)."""
    import sys

    if QUIET or JSON_STDERR:
        return
    for w in list(prices.get("warnings", []) or []) + list(more or []):
        print(f"gpuopt: warning: {w}", file=sys.stderr)


class RefreshProgress:
    """A rich progress bar per provider for `gpuopt prices refresh` (regions done / regions), on stderr."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._progress = None
        self._tasks: dict[str, Any] = {}
        self._failed: dict[str, int] = {}

    def __enter__(self):
        if self.enabled:
            import os

            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("{task.fields[note]}"), TimeElapsedColumn(),
                                      console=Console(stderr=True, **({"color_system": None} if NO_COLOR or os.environ.get("NO_COLOR") else {})),
                                      transient=False)
            self._progress.__enter__()
        return self

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.__exit__(*exc)
        return False

    def event(self, kind: str, provider: str, **kw) -> None:
        if kind == "waiting":
            import sys

            print(f"gpuopt: {kw.get('message', 'waiting for the cache lock')}", file=sys.stderr)
            return
        if self._progress is None:
            return
        if kind == "start":
            self._tasks[provider] = self._progress.add_task(provider, total=kw.get("total") or 0, note="")
        elif kind == "region" and provider in self._tasks:
            if kw.get("status") != "done":
                self._failed[provider] = self._failed.get(provider, 0) + 1
            note = f"{self._failed.get(provider, 0)} failed/skipped" if self._failed.get(provider) else ""
            self._progress.update(self._tasks[provider], advance=1, note=note)
        elif kind == "provider_failed":
            tid = self._progress.add_task(provider, total=1, note=f"failed: {kw.get('error', '')[:80]}")
            self._tasks[provider] = tid
        elif kind == "message" and provider in self._tasks:  # an adapter's progress, e.g. "EC2 price list: 96 MB"
            self._progress.update(self._tasks[provider], note=f"{kw.get('region', '')}: {kw.get('message', '')}"[:80])


def refresh_summary(summary, fmt: str) -> None:
    """Render a pricing_cache.refresh.RefreshSummary."""
    if fmt == "json":
        _json(summary.to_dict())
        return
    from rich.table import Table

    con = _console()
    t = Table(title=f"Refresh summary ({summary.seconds:.1f} s)", title_justify="left")
    for col in ("provider", "status", "rows", "regions done", "failed", "skipped", "kept previous", "time s"):
        t.add_column(col, justify="left" if col in ("provider", "status") else "right")
    for p in summary.providers:
        t.add_row(p.provider, p.status, str(p.rows), str(len(p.regions_done)), str(len(p.regions_failed)),
                  str(len(p.regions_skipped)), str(len(p.kept_previous)), f"{p.seconds:.1f}")
    con.print(_fit(con, t))
    for p in summary.providers:
        for note in p.notes:  # where the prices came from (aws: the public files without credentials)
            if note.startswith(f"{p.provider}: ") and "Price List files" in note:
                con.print(note)
        if p.error:
            con.print(f"[red]{p.provider}:[/] {p.error}")
        for r, e in sorted(p.regions_failed.items()):
            con.print(f"{p.provider} {r}: failed ({e}); its previous prices are kept")
        for r, e in sorted(p.regions_skipped.items()):
            con.print(f"{p.provider} {r}: skipped ({e})")
        if getattr(p, "skipped_by_reason", None):
            con.print(f"{p.provider}: rows refused or left out: "
                      + ", ".join(f"{k} {v}" for k, v in sorted(p.skipped_by_reason.items(), key=lambda kv: -kv[1])))
        if p.snapshot:
            con.print(f"{p.provider}: wrote {p.snapshot}")


def import_summary(result: dict, fmt: str) -> None:
    if fmt == "json":
        _json(result.to_dict() if hasattr(result, "to_dict") else result)
        return
    for line in result.get("messages") or []:  # pricing_cache.importing.summary_lines: added/changed/kept, dates
        print(line)  # whole lines (a console would wrap them at its width)


def price_diff(diff, fmt: str, limit: int | None) -> None:
    """Render a pricing_cache.history.PriceDiff."""
    if fmt == "json":
        _json(diff.to_dict())
        return
    import sys

    from rich.table import Table

    for w in () if QUIET else diff.warnings:  # --quiet: results and errors only
        print(f"gpuopt: warning: {w}", file=sys.stderr)
    con = _console()
    con.print(f"Prices on {diff.since} vs now: {len(diff.changed)} changed, {len(diff.added)} added, "
              f"{len(diff.removed)} removed, {diff.unchanged} unchanged")
    if diff.changed:
        t = Table(title="Changed (largest change first)", title_justify="left")
        for col in ("provider", "region", "zone", "instance_type", "pricing", "payment", "then $/h", "now $/h", "change"):
            t.add_column(col, justify="right" if col in ("then $/h", "now $/h", "change") else "left")
        for c in diff.changed[: limit or None]:
            t.add_row(c["provider"], c["region"], c["zone"] or "", c["instance_type"], c["pricing"], c["payment"] or "",
                      f"{c['usd_per_hour_then']:,.4f}", f"{c['usd_per_hour_now']:,.4f}",
                      "—" if c["change_pct"] is None else f"{c['change_pct']:+.1f} %")
        con.print(_fit(con, t))


def _rate(usd_per_hour: float) -> str:
    """A plan line's USD per hour to the precision of the price data (6 decimals, trailing zeros dropped, at least
    4): 1.031037, not 1.0310, so $/h x h/month x count gives the line's $/month to the cent."""
    text = f"{usd_per_hour:,.6f}".rstrip("0")
    return text + "0" * max(0, 4 - len(text.split(".")[1]))


def _months(a: int, b: int) -> str:
    return f"{a}" if a == b else f"{a}-{b}"


def _n(x, noun: str, fmt: str = "g") -> str:
    """'1 GPU', '2 GPUs', '0 blocks', '0.5 GPU' (a share of one), '4,096 GPUs' with fmt ",":
    gpuopt.kernel.words.plural."""
    from gpuopt.kernel.words import plural

    return plural(x, noun, fmt)


def _least_headroom(plan) -> str:
    """The least spare capacity of a serving workload in a block of the plan: '0.23 tokens/s (workload in
    08:00-09:00)' (and the period when the horizon has several), or '' without serving blocks."""
    best = None
    for b in getattr(plan, "blocks", None) or []:
        for w, d in (b.get("demand") or {}).items():
            cap = (b.get("capacity") or {}).get(w)
            if cap is None or not d:
                continue
            # under the N+1 rule the spare is what is left after losing the largest instance (a fresh user read
            # 464.76 tokens/s of headroom where the N+1 margin was 42)
            after = (b.get("capacity_after_loss") or {}).get(w)
            spare = cap - d if after is None else after - d
            if best is None or spare < best[0]:
                best = (spare, w, b, after is not None, cap - d)
    if best is None:
        return ""
    spare, w, b, n1, raw = best
    several = len({x.get("period", 0) for x in plan.blocks}) > 1
    return (f"{spare:,.2f} tokens/s" + (f" after losing its largest instance (the N+1 rule; {raw:,.2f} with every "
                                         "instance up)" if n1 else "")
            + f" ({w} in {b.get('label') or 'its peak block'}"
            + (f", period {b.get('period', 0) + 1}" if several else "") + ")")


def _plan(con, plan, time_limit_s: float | None = None) -> None:
    """Render an optimizer.planning.answer.FleetResult: the rules first, then the plan, its money and commitments, the
    workloads, the strategies (each with its commitment) and the explanation. A plan not proven optimal (status
    time_limit) has its totals marked UNPROVEN_MARK; a comparison not computed in time says how to get it
    (``time_limit_s``: the solve's limit, seconds, for the --time-limit to suggest)."""
    from rich.table import Table

    u = UNPROVEN_MARK if plan.status == "time_limit" else ""

    for r in getattr(plan, "rules", []) or []:
        con.print(f"Rule — {r}")
    sv = plan.solver
    how = "exact enumeration (no MILP)" if sv.get("method") == "enumeration" else sv.get("name")
    # no status: the solver never ran (no offer could hold a replica; the reason is below)
    con.print(f"Solver: {how} {sv.get('status') or 'not run'}"
              + (f", gap {_pct(sv['gap'])} %" if sv.get("gap") is not None else "")
              + f", {sv.get('seconds', 0):g} s"
              + (f" ({sv['message']})" if sv.get("status") == "time_limit" and sv.get("message") else "")
              + f"; {_n(sv.get('blocks') or 0, 'block')} in {_n(sv.get('periods', 1), 'period')}"
              + (f" ({sv['merge']})" if sv.get("merge") else "") + f"; {sv.get('pruned', 0)} dominated candidates pruned")
    if not plan.feasible:
        reason = plan.reason or {}
        message = reason.get("message", plan.status)
        if plan.status == "not_solved" and message.startswith("not solved within the limit"):
            con.print(f"[bold red]Not solved within the limit:[/]{message[len('not solved within the limit'):]}")
        else:  # no proof of infeasibility: not "No plan" (issue 33)
            head = "Not solved within the limit" if plan.status == "not_solved" else "No plan"
            con.print(f"[bold red]{head}:[/] {message}")
        return
    H = plan.horizon_months
    t = Table(title=f"Plan ({plan.status}, objective {plan.objective}; "
                    f"{'months 1-' + str(H) if H > 1 else 'month 1'} from {plan.start_month})",
              title_justify="left")
    # h/month: hours a month each instance runs, so $/h x h/month x count = $/month can be checked on every line
    cols = ("where", "instance_type", "purchase", "count", "months", "$/h each", "h/month", "$/month", "upfront",
            "commitment", "term ends", "GPUs each", "replicas", "workloads", "hours used", "break-even")
    # "hours used": the share of its hours an instance is busy (a fresh user read "used 100 %" as its capacity)
    right = {"count", "months", "$/h each", "h/month", "$/month", "upfront", "commitment", "replicas", "hours used",
             "break-even"}
    for col in cols:
        t.add_column(col, justify="right" if col in right else "left", overflow="fold")
    for ln in plan.lines:
        # a savings plan's own line runs nothing itself (its covered lines do)
        layout = "—" if getattr(ln, "scope", "") and not ln.replicas else f"{ln.replicas}"
        if ln.pipeline_parallel > 1 or ln.tensor_parallel > 1:
            layout += f" (TP{ln.tensor_parallel}" + (f"xPP{ln.pipeline_parallel}" if ln.pipeline_parallel > 1 else "") + ")"
        if getattr(ln, "precision", ""):
            layout += (f" {ln.precision}, batch {ln.batch}, TTFT {ln.ttft_ms:,.0f} ms, TPOT {ln.tpot_ms:,.1f} ms"
                       if ln.ttft_ms is not None and ln.tpot_ms is not None else f" {ln.precision}")
        if getattr(ln, "training_layout", ""):
            layout += f" job {ln.training_layout}" + (f", MFU {100 * ln.mfu:.0f} %" if ln.mfu else "")
        days = getattr(ln, "days", 0) or 0
        covered = getattr(ln, "covered_by", "") or ""
        purchase = (ln.pricing + (f" {ln.payment}" if ln.payment else "")
                    + (f" {ln.offering_class}" if ln.offering_class in ("convertible", "compute", "ec2_instance")
                       and not covered else "")
                    + (f", {days} day{'s' if days > 1 else ''} paid whole when bought" if days else "")
                    + (" (runs on the savings plan)" if covered else "")
                    + (f" — owned, reused ({ln.reused})" if getattr(ln, "reused", "") else ""))
        t.add_row(f"{ln.provider} {ln.region}" + (f"/{ln.zone}" if ln.zone else "")
                  + f" ({tier_label(getattr(ln, 'tier', ''))})", ln.instance_type,
                  purchase, str(ln.count),
                  _months(ln.start_month, ln.end_month),
                  _rate(ln.usd_per_hour) + ("*" if ln.estimated else ""),
                  _hours(ln.hours) + (" (the block)" if days else ""),
                  ("$0.00 (owned)" if getattr(ln, "reused", "") else "in the plan's $/h") if covered
                  else _usd(ln.monthly_usd) + (" once" if days else ""),
                  _usd(ln.upfront_usd) if ln.upfront_usd else "—", _usd(ln.commitment_usd) if ln.commitment_usd else "—",
                  ln.term_end or "—", f"{ln.gpu_count:g}x {ln.gpu_model}" if ln.gpu_model else "—", layout,
                  ", ".join(ln.workloads),
                  "—" if ln.utilization is None else f"{100 * ln.utilization:.0f} %",
                  "—" if ln.break_even_utilization is None else f"{100 * ln.break_even_utilization:.0f} %")
    # the purchase (pricing and payment) is among the most needed: at 60 columns months and $/h go before it
    con.print(_fit(con, t, drop=("break-even", "hours used", "workloads", "term ends", "h/month", "GPUs each",
                                 "replicas", "commitment", "upfront", "months", "$/h each")))
    after = plan.after_horizon_usd or 0.0
    if after > 0:
        # a fresh user read an average above the dearest month: the total counts what terms still cost after the
        # horizon, so the cash in the horizon and what is owed after it are said apart
        inside = (plan.total_usd or 0.0) - after + (plan.leftover_credit_usd or 0.0)  # the parts add up to the total
        con.print(f"[bold]Total over {_n(H, 'month')}: {_usd(plan.total_usd)}{u} = {_usd(inside)} paid in the "
                  f"{_n(H, 'month')} + {_usd(after)} still owed after them for terms that outlive the horizon"
                  + (f" - {_usd(plan.leftover_credit_usd)} leftover value" if plan.leftover_credit_usd else "")
                  + f" (average {_usd(plan.monthly_usd)}{u} a month counting what is owed after; "
                  f"the most paid in one month of the horizon {_usd(plan.max_month_usd)}{u})[/]")
    else:
        con.print(f"[bold]Total over {_n(H, 'month')}: {_usd(plan.total_usd)}{u} "
                  f"(average {_usd(plan.monthly_usd)}{u} a month over the horizon"
                  + f"; the most paid in one month of the horizon {_usd(plan.max_month_usd)}{u})[/]")
    if plan.commitment_usd:
        ends = sorted({ln.term_end for ln in plan.lines if ln.term_end})
        con.print(f"Commitments: {_usd(plan.commitment_usd)}{u} owed over their terms (ending {', '.join(ends)}), "
                  f"{_usd(plan.upfront_usd)} of it upfront"
                  + (f"; {_usd(plan.after_horizon_usd)} is paid after the horizon" if plan.after_horizon_usd else ""))
    else:
        con.print("Commitments: none (nothing is owed beyond the hours used)")
    cash = plan.cash_by_month_usd or []
    if cash and len(set(round(c, 2) for c in cash)) > 1:
        con.print("Cash by month: " + ", ".join(f"{i + 1}: {_usd(c)}" for i, c in enumerate(cash)))
    if plan.objective == "roi":
        con.print(f"Value {_usd(plan.value_usd)}, net value {_usd(plan.net_value_usd)}, ROI "
                  + ("—" if plan.roi is None else f"{100 * plan.roi:.1f} %")
                  + f" (Dinkelbach: {len(plan.dinkelbach)} MILPs)")
    wt = Table(title="Workloads", title_justify="left")
    for col in ("workload", "task", "model", "months", "needs", "planned", "replica", "notes"):
        wt.add_column(col, overflow="fold")
    for w in plan.workloads:
        rep = "; ".join(f"{s['gpu_shape'].split(' (')[0]}: {_n(s['gpus_per_replica'], 'GPU')} per replica"
                        + (f" TP{s['tensor_parallel']}xPP{s['pipeline_parallel']}" if s.get("pipeline_parallel", 1) > 1 else "")
                        + (f", {s['tokens_per_second_per_replica']:,.0f} tok/s" if w["task"] == "serve" else "")
                        + (f" ({s['precision']} {s.get('engine')}, batch {s['batch']}"
                           + (f", TTFT {s['ttft_ms']:,.0f} ms" if s.get("ttft_ms") is not None else "")
                           + (f", TPOT {s['tpot_ms']:,.1f} ms" if s.get("tpot_ms") is not None else "") + ")"
                           if s.get("precision") and (s.get("ttft_ms") is not None or s.get("tpot_ms") is not None)
                           else "")
                        + serving_split_text(s)
                        + (f"; per-GPU speed of a job of {s['job_gpus']:,} GPUs: {s['layout_text']}, {s['precision']}, MFU "
                           f"{100 * s['mfu']:.0f} %, {s['tokens_per_second_per_gpu']:,.0f} tok/s/GPU, goodput "
                           f"{100 * s['goodput']:.1f} %" + (f", {s['wall_hours_at_job_gpus']:,.0f} h wall"
                                                             if s.get("wall_hours_at_job_gpus") else "")
                           if s.get("layout_text") else "")
                        for s in (w.get("sizing") or [])[:2])
        if "work_flops_needed" in w:
            wt.add_row(w["name"], w["task"], w["model"], f"from {w.get('start_month', 1)}",
                       f"{w['work_flops_needed']:.3g} FLOPs within {w['deadline_hours']:g} h",
                       f"{w['work_flops_planned']:.3g} FLOPs, done by hour {w['finish_by_hour']:g}"
                       + (f", at most {_n(w['gpus_peak'], 'GPU', ',')} at once" if w.get("gpus_peak") else ""), rep,
                       "" if w.get("completed", True) else "not worth running (ROI)")
        else:
            wt.add_row(w["name"], w["task"], w["model"], _months(w.get("start_month", 1), w.get("end_month", H)),
                       f"peak {w['peak_demand']:,.1f} tokens/s, min {_n(w['min_replicas'], 'replica')}",
                       _count_range(*w['replicas_min_max'][:2], "replica") + " in "
                       + ", ".join(w.get("regions") or []), rep,
                       f"{_n(w['blocks_short'], 'block')} below demand" if w.get("blocks_short") else "")
    con.print(_fit(con, wt))
    if plan.strategies:
        st = Table(title=f"Same demand, priced by strategy (over {_n(H, 'month')})", title_justify="left")
        for col in ("strategy", "total", "total / months", "most paid in a month", "upfront", "commitment",
                    "savings vs on-demand"):
            st.add_column(col, justify="left" if col == "strategy" else "right")
        untimed = []
        for nm, v in plan.strategies.items():
            sav = "—" if v.get("savings_usd") is None else f"{_usd(v['savings_usd'])} ({v['savings_pct']:.1f} %)"
            label = nm.replace("_", " ") + (f" (not proven: gap {100 * (v.get('gap') or 0):.1f} %)"
                                             if v.get("status") == "time_limit" else "")
            m = u if nm == "this_plan" else (UNPROVEN_MARK if v.get("status") == "time_limit" else "")
            if v.get("total_usd") is None and v.get("status") in ("not_computed", "not_solved"):
                untimed.append(f"{nm.replace('_', ' ')}: {v.get('note') or v.get('status')}")
            st.add_row(label, _usd(v.get("total_usd")) + m if v.get("total_usd") is not None else v.get("status", "—"),
                       _usd(v.get("monthly_usd")) + (m if v.get("total_usd") is not None else ""),
                       _usd(v.get("max_month_usd")) + m if v.get("max_month_usd") is not None else "—",
                       _usd(v.get("upfront_usd")) if v.get("total_usd") is not None else "—",
                       _usd(v.get("commitment_usd")) if v.get("total_usd") is not None else "—",
                       sav + (m if sav != "—" else ""))
        con.print(_fit(con, st))
        for why in untimed:  # why each was not computed, and how to get it
            con.print(f"Strategy — {not_computed_hint(why, time_limit_s)}")
    m = plan.marginal or {}
    if m.get("note"):
        con.print(f"Shadow prices — {m['note']}")
    priced = [d for d in (m.get("demand") or []) if round(d["usd_per_month_per_token_per_s"], 4) > 0]
    if m.get("demand") and not priced:
        # the LP's duals are 0 when its fractional floors or commitments cover the demand; the plan bought whole
        # units and may have almost no headroom (a fresh user saw "capacity to spare" at 0.22 tokens/s of it)
        tight = _least_headroom(plan)
        con.print("One more token/s costs nothing more in the LP relaxation (its redundancy floors or commitments "
                  "cover it)" + (f"; this plan's least headroom is {tight}" if tight else ""))
    for d in priced[:3]:
        con.print(f"One more token/s for {d['workload']} in {d['block']}"
                  + (f" (months {d['months']})" if d.get("months") else "")
                  + f" costs about ${d['usd_per_month_per_token_per_s']:,.4f} a month (LP relaxation)")
    pairs = sum(1 for b in (getattr(plan, "blocks", None) or []) for d in (b.get("demand") or {}).values() if d)
    if priced and min(3, len(priced)) < pairs:  # the blocks not listed (a fresh user read their absence as "not computed")
        con.print("In every other block and period one more token/s costs at most the last figure above, and "
                  "nothing where the LP relaxation has capacity to spare")
    for nb in plan.next_best:
        note = nb.get("note") or "no plan"
        if nb.get("total_usd") is None and str(note).startswith("not computed"):
            note = not_computed_hint(note, time_limit_s)
        alone = (f"{nb['provider']} alone: {_usd(nb['total_usd'])} over the horizon" if nb.get("total_usd") is not None
                 else f"{nb['provider']} alone: {note}")
        if nb.get("total_usd") is not None and nb.get("max_month_usd") is not None:
            # what a budget would meet: the dearest month and the upfront (a note says they are shown)
            alone += f", most in a month {_usd(nb['max_month_usd'])}, upfront {_usd(nb.get('upfront_usd') or 0.0)}"
        if nb.get("total_usd") is not None and nb.get("note"):
            alone += f" ({nb['note']})"
        con.print(f"Alternative — {alone}" + (f"; {nb['flip']}" if nb.get("flip") else ""))
    for tg in getattr(plan, "targets", []) or []:
        if tg.get("scenario") == "this plan":
            continue
        what = (f"p99 TTFT <= {tg['ttft_ms']:g} ms, TPOT <= {tg['tpot_ms']:g} ms" if tg.get("tpot_ms") else
                "no latency target: batch")
        con.print(f"Targets — {tg['scenario']} ({what}): "
                  + (f"{_usd(tg['total_usd'])} over the horizon ({_delta(tg['total_usd'], plan.total_usd)})"
                     if tg.get("total_usd") is not None else _unpriced(tg, time_limit_s)))
    mk = getattr(plan, "marketplace", None)
    if mk:
        con.print(f"Tiers — with marketplace offers allowed (--allow-marketplace; {mk['offers_kept_out']:,} kept out "
                  f"of the serving workloads): "
                  + (f"{_usd(mk['total_usd'])} over the horizon ({_delta(mk['total_usd'], plan.total_usd)})"
                     if mk.get("total_usd") is not None else _unpriced(mk, time_limit_s)))
    pc = getattr(plan, "precision", None)
    if pc:
        con.print(f"Precision — {pc.get('label') or 'with fp8 allowed'} for {', '.join(pc['workloads'])}"
                  + ("" if pc.get("label") else " (--precision auto)") + ": "
                  + (f"{_usd(pc['total_usd'])} over the horizon ({_delta(pc['total_usd'], plan.total_usd)}); "
                     f"{pc['rule']}" if pc.get("total_usd") is not None else _unpriced(pc, time_limit_s)))
    for ds in getattr(plan, "demand_sensitivity", []) or []:
        note = (not_computed_hint(ds["note"], time_limit_s) if ds.get("total_usd") is None
                and ds.get("status") == "not_computed" else ds["note"])
        con.print(f"Demand — {note}" + (f" ({_usd(ds['total_usd'])} over the horizon)"
                                         if ds.get("total_usd") is not None else ""))
    for b in plan.binding:
        con.print(f"Constraint — {b}")
    for n in () if QUIET else plan.notes:  # --quiet: results only, no notes
        con.print(f"[yellow]Note:[/] {n}")
    if any(ln.estimated for ln in plan.lines):
        con.print("* estimated price (derived by a documented discount rule; see `gpuopt prices status`)")
    if u or any(v.get("status") == "time_limit" for v in (plan.strategies or {}).values()):
        con.print(f"{UNPROVEN_MARK} {UNPROVEN_NOTE}" if u else
                  f"{UNPROVEN_MARK} not proven optimal: that strategy's solve stopped at its time limit (its gap is "
                  "shown beside it)")
    if not QUIET and any(ln.upfront_usd and ln.pricing != "on_demand" for ln in plan.lines):
        # a fresh user read "$0.00 a month" next to an all-upfront term's $/h as a free instance
        con.print("$/month is the cash paid each month (hourly use, recurring fees); a term paid upfront pays its "
                  "upfront in its first month and its $/h is that upfront spread over the term's hours (amortized)")


def review(result, fmt: str) -> None:
    """Render an optimizer.review.ReviewResult."""
    if fmt == "json":
        _json(result.to_dict())
        return
    from rich.table import Table

    con = _console()
    r = result.rows
    con.print(f"Review of GPU usage {result.period_start[:16]} to {result.period_end[:16]} "
              f"({result.window_hours / 24:g} days, {result.source_format}): {r['read']} rows read, {r['gpu']} GPU "
              f"compute, {r['not_gpu']} other, {r['bad']} bad")
    cov = (f"Data covers {result.coverage_hours:,.0f} of the window's {result.window_hours:,.0f} hours "
           f"({100 * result.covered_fraction:.0f} %)")
    if result.gap_days:
        cov += f"; {len(result.gap_days)} whole day(s) without any row left out"
    con.print(cov + (" [yellow](see the warnings on stderr)[/]" if result.covered_fraction < 1 else ""))
    con.print(_prices_line(result.prices))
    t = Table(title="GPU usage by instance type", title_justify="left")
    for col in ("where", "instance_type", "GPUs", "instance-hours", "by pricing", "peak", "average", "use",
                "billed $", "effective $", "on-demand $/h", "on-demand baseline", "on-demand equiv. $"):
        t.add_column(col, justify="left" if col in ("where", "instance_type", "GPUs", "by pricing",
                                                    "on-demand baseline") else "right")
    for u in result.usage:
        od_h = getattr(u, "on_demand_usd_per_hour", None)
        t.add_row(f"{u.provider} {u.region}", u.instance_type, f"{u.gpu_count:g}x {u.gpu_model}" if u.gpu_model else "?",
                  f"{u.hours_used:,.1f}", ", ".join(f"{k or 'unknown'} {v:,.0f}" for k, v in u.hours_by_pricing.items()),
                  f"{u.peak_instances:g}", f"{u.average_instances:.2f}", f"{100 * u.utilization:.0f} %",
                  _usd(u.billed_cost_usd), _usd(u.effective_cost_usd), "—" if od_h is None else f"{od_h:,.4f}",
                  getattr(u, "on_demand_baseline", "") or "—", _usd(u.on_demand_equivalent_usd))
    con.print(_fit(con, t, drop=("by pricing", "GPUs", "peak", "average", "billed $", "on-demand equiv. $",
                                 "on-demand $/h")))
    if result.recommendations:
        rt = Table(title="Recommended commitments (monthly figures; the MILP over each hourly usage profile; "
                         f"{result.account_scope} scope, generated {result.generation_time})", title_justify="left")
        for col in ("id", "account", "where", "instance_type", "class", "term", "payment", "quantity",
                    "inst/h min/avg/max", "norm. units", "upfront $", "recurring $/mo", "on-demand $/h",
                    "on-demand baseline", "on-demand $/mo", "with it $/mo", "savings $/mo", "use", "break-even mo"):
            rt.add_column(col, justify="left" if col in ("id", "account", "where", "instance_type", "class", "term",
                                                         "payment", "on-demand baseline") else "right")
        for c in result.recommendations:
            rt.add_row(c.recommendation_id[:8], "shared" if c.account_id is None else (c.account_id or "(none)"),
                       f"{c.provider} {c.region}", c.instance_type, (c.offering_class or "").title() or "—",
                       c.term, c.payment, str(c.recommended_quantity),
                       f"{c.minimum_instances_per_hour:g}/{c.average_instances_per_hour:.2f}/"
                       f"{c.maximum_instances_per_hour:g}",
                       "—" if c.normalized_units_to_purchase is None else f"{c.normalized_units_to_purchase:g}",
                       _usd(c.upfront_cost_usd), _usd(c.recurring_monthly_cost_usd),
                       f"{c.on_demand_usd_per_hour:,.4f}", c.on_demand_baseline or "—",
                       _usd(c.estimated_monthly_on_demand_cost_usd), _usd(c.estimated_monthly_cost_with_commitment_usd),
                       f"{_usd(c.estimated_monthly_savings_usd)} ({c.estimated_monthly_savings_pct:.1f} %)"
                       + ("*" if c.estimated_price else ""),
                       "—" if c.average_utilization is None else f"{100 * c.average_utilization:.0f} %",
                       "—" if c.break_even_months is None else f"{c.break_even_months:g}")
        drop = ("id", "norm. units", "inst/h min/avg/max", "account", "on-demand $/mo", "with it $/mo",
                "recurring $/mo", "break-even mo", "use", "on-demand $/h", "on-demand baseline", "payment", "class")
        if result.account_scope == "account":  # whose each recommendation is: kept to the last
            drop = tuple(d for d in drop if d != "account")
        con.print(_fit(con, rt, drop=drop))
    elif any(x.get("kind") == "not_sold" for x in result.unpriced):
        con.print("No commitment pays off for the instance types priced; for the others the provider does not sell "
                  "the payment option asked for (see the warnings).")
    else:
        con.print("No commitment pays off for this usage at these prices.")
    tot = result.totals
    con.print(f"Billed {_usd(tot.get('billed_usd'))}, effective (amortized) {_usd(tot.get('effective_usd'))}, "
              f"on-demand equivalent {_usd(tot.get('on_demand_equivalent_usd'))}; recommended commitments save "
              f"{_usd(tot.get('recommended_monthly_savings_usd'))} a month")
    if result.purchases:
        con.print("Commitment purchases, fees and refunds in the export: "
                  + ", ".join(f"{k} {_usd(v)}" for k, v in result.purchases.items()))
    for b in result.bad_rows[:10]:
        con.print(f"bad row line {b['line']}: {b['reason']}")
    for c in result.recommendations:
        if c.commitment:  # what is bought, in the words of its provider: class, term, payment and what it can become
            con.print(f"{c.instance_type} ({c.provider} {c.region}) x{c.recommended_quantity}: {c.commitment}"
                      + (f" -- {c.flexibility}" if c.flexibility else ""))
    for n in () if QUIET else result.notes:  # --quiet: results only, no notes
        con.print(f"[yellow]Note:[/] {n}")


def plan_diff(d, verdict: str, fmt: str) -> None:
    """Render a gpuopt.plan_diff.PlanDiff (``gpuopt diff``): money changes, then the lines that changed."""
    if fmt == "json":
        out = d.to_dict()
        out["gate"] = verdict or None
        _json(out)
        return
    from rich.table import Table

    con = _console()
    con.print(f"Plan diff: {d.old} ({d.status[0] or '?'}) -> {d.new} ({d.status[1] or '?'})")
    for note in () if QUIET else getattr(d, "notes", []) or []:  # --quiet: results only, no notes
        con.print(f"[yellow]Note:[/] {note}")
    t = Table(show_header=True)
    for col in ("", "old", "new", "change", "change %"):
        t.add_column(col, justify="right" if col else "left")
    for k, (o, n, ch, pct) in d.money.items():
        t.add_row(k, _usd(o), _usd(n), _usd(ch), "—" if pct is None else f"{pct:+.2f} %")
    con.print(_fit(con, t))
    if d.lines:
        lt = Table(title="Lines that changed", title_justify="left")
        for col in ("change", "where", "instance_type", "purchase", "months", "count", "total"):
            lt.add_column(col, justify="right" if col in ("count", "total") else "left", overflow="fold")
        for ln in d.lines:
            lt.add_row(ln["change"], f"{ln['provider']} {ln['region']}" + (f" {ln['zone']}" if ln["zone"] else ""),
                       ln["instance_type"], ln["pricing"] + (f" {ln['payment']}" if ln["payment"] else ""),
                       f"{ln['start_month']}-{ln['end_month']}", f"{ln['count_old']} -> {ln['count_new']}",
                       f"{_usd(ln['total_usd_old'])} -> {_usd(ln['total_usd_new'])}")
        con.print(_fit(con, lt))
    else:
        con.print("No line changed.")
    if verdict:
        con.print(f"Cost gate: {verdict}")

