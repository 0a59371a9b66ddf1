"""Renderers: a rich table for people, JSON for programs. Pure output, no computation."""

from __future__ import annotations

import json
import math
from typing import Any


def _console():
    import shutil

    from rich.console import Console

    width = max(shutil.get_terminal_size((160, 40)).columns, 120)
    return Console(width=width, highlight=False, soft_wrap=False)


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
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    print(json.dumps(clean(obj), indent=2, default=default))


def _usd(x: float | None) -> str:
    return "—" if x is None else f"${x:,.2f}"


def _short_source(source) -> str:
    """The source up to its first space: 'rule:aws-1y-all_upfront' or 'skypilot-catalog:catalogs/v8/aws/vms.csv@00148f2a'."""
    text = str(source or "")
    return text.split(" ", 1)[0]


def _prices_line(prices: dict) -> str:
    parts = []
    snapshot = prices.get("catalog") == "shipped snapshot"
    for prov, p in sorted(prices.get("providers", {}).items()):
        age = p.get("age_days")
        if snapshot:  # the catalog dates are upper bounds: an age of "0 days" would mislead
            parts.append(f"{prov} as of {p.get('as_of') or 'unknown'} or earlier")
        else:
            parts.append(f"{prov} as of {p.get('as_of') or 'unknown'}" + (f", {age:.0f} days old" if age is not None else ""))
    line = f"Prices: {prices.get('catalog')} — " + "; ".join(parts)
    if snapshot:
        line += " (see `gpuopt prices status`)"
    return line


def recommend(result, fmt: str) -> None:
    """Render a gpuopt.api.RecommendResult."""
    if fmt == "json":
        _json(result.to_dict())
        return
    from rich.table import Table

    con = _console()
    plan = result.plan
    con.print(result.headline)
    con.print(_prices_line(result.prices))
    if plan.sizing:
        t = Table(title="Sizing: one replica", title_justify="left")
        for col in ("GPU shape", "GPUs/replica", "memory GiB/replica", "memory GiB/GPU", "tokens/s/replica"):
            t.add_column(col, justify="right" if col != "GPU shape" else "left")
        used = {f"{ln.gpu_model} x{ln.gpu_count:g}" for ln in plan.lines}
        rows = [s for s in plan.sizing if s["gpu_shape"] in used] or plan.sizing[:8]
        for s in rows:
            t.add_row(s["gpu_shape"], f"{s['gpus_per_replica']:g}", f"{s['memory_gib_per_replica']:,.1f}",
                      f"{s['memory_gib_per_gpu']:,.1f}", f"{s['tokens_per_second_per_replica']:,.1f}")
        con.print(t)
    if not plan.feasible:
        reason = plan.reason or {}
        con.print(f"[bold red]No plan:[/] {reason.get('message', plan.status)}")
        return
    t = Table(title=f"Plan ({plan.status}; horizon {plan.horizon_hours:g} h)", title_justify="left")
    for col in ("provider", "region", "instance_type", "pricing", "payment", "count", "hours", "$/h each",
                "$/month" if "work_flops_needed" not in plan.capacity else "$ for the job", "GPUs each", "replicas", "break-even"):
        t.add_column(col, justify="right" if col in ("count", "hours", "$/h each", "$/month", "replicas", "break-even") else "left",
                     no_wrap=col in ("instance_type", "region", "pricing", "GPUs each"))
    for ln in plan.lines:
        be = "—" if ln.break_even_utilization is None else f"{100 * ln.break_even_utilization:.0f} %"
        rate = f"{ln.usd_per_hour:,.4f}" + ("*" if ln.estimated else "")
        t.add_row(ln.provider, ln.region + (f"/{ln.zone}" if ln.zone else ""), ln.instance_type, ln.pricing, ln.payment or "—",
                  str(ln.count), f"{ln.hours:g}", rate, _usd(ln.monthly_usd),
                  f"{ln.gpu_count:g} x {ln.gpu_model}", str(ln.replicas), be)
    con.print(t)
    training = "work_flops_needed" in plan.capacity
    con.print(f"[bold]Total: {_usd(plan.total_usd)} {'for the whole job' if training else 'per month'}[/]")
    cap = plan.capacity
    if "tokens_per_second_needed" in cap:
        con.print(f"Capacity: {cap['tokens_per_second_planned']:,.1f} tokens/s planned for {cap['tokens_per_second_needed']:,.1f} needed")
    else:
        con.print(f"Work: {cap['work_flops_planned']:.3e} FLOPs planned for {cap['work_flops_needed']:.3e} needed; "
                  f"finishes in {cap['finish_hours']:g} h (deadline {cap['deadline_hours']:g} h)")
    if plan.strategies:
        st = Table(title="Same demand, priced by strategy", title_justify="left")
        for col in ("strategy", "$ for the job" if training else "$/month", "savings vs on-demand"):
            st.add_column(col, justify="left" if col == "strategy" else "right")
        for name, s in plan.strategies.items():
            sav = "—" if s.get("savings_usd") is None else f"{_usd(s['savings_usd'])} ({s['savings_pct']:.1f} %)"
            label = name + ("" if s.get("allowed_in_this_plan", True) else " (not allowed by your limits)")
            st.add_row(label, _usd(s.get("monthly_usd")) if s.get("monthly_usd") is not None else s.get("status", "—"), sav)
        con.print(st)
    for b in plan.binding:
        con.print(f"Constraint — {b}")
    for n in plan.notes:
        con.print(f"[yellow]Note:[/] {n}")
    if any(ln.estimated for ln in plan.lines):
        con.print("* estimated price (derived by a documented discount rule; see `gpuopt prices status`)")


def estimate(result, fmt: str) -> None:
    """Render a gpuopt.api.EstimateResult."""
    if fmt == "json":
        _json(result.to_dict())
        return
    from rich.table import Table

    con = _console()
    con.print(f"Estimate: {result.model}, {result.task}, on {result.gpu}")
    t = Table(show_header=True)
    t.add_column("quantity")
    t.add_column("value", justify="right")
    n = result.numbers
    fmt_map = {
        "memory_gib_per_replica": "{:,.2f} GiB", "memory_gib_per_gpu": "{:,.2f} GiB", "gpus_per_replica": "{:g}",
        "tokens_per_second_per_replica": "{:,.1f}", "train_flops": "{:.3e}", "gpu_hours": "{:,.0f}",
        "wall_hours_one_replica": "{:,.1f}", "replicas_needed": "{}", "gpus_needed": "{:g}",
    }
    for k, f in fmt_map.items():
        if k in n and n[k] is not None:
            t.add_row(k, f.format(n[k]))
    for k, v in (n.get("breakdown_gib") or {}).items():
        t.add_row(f"  {k} (GiB/replica)", f"{v:,.2f}")
    con.print(t)
    for a in result.assumptions:
        con.print(f"- {a}")


def known(models: list, gpus: list, fmt: str) -> None:
    if fmt == "json":
        _json({"models": list(models), "gpus": list(gpus)})
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
    for col in ("provider", "region", "zone", "instance_type", "GPUs", "pricing", "payment", "$/h", "$/GPU-h", "upfront $", "source", "as_of"):
        t.add_column(col, justify="right" if col in ("$/h", "$/GPU-h", "upfront $") else "left",
                     no_wrap=col not in ("source",))
    for r in result.rows:
        est = str(r.get("source") or "").startswith("rule:")
        t.add_row(r["provider"], r["region"], r.get("zone") or "", r["instance_type"],
                  f"{r['gpu_count']:g} x {r['gpu_model']} ({r['gpu_memory_gib']:g} GiB)", r["pricing"], r.get("payment") or "",
                  f"{r['usd_per_hour']:,.4f}" + ("*" if est else ""), f"{r['usd_per_gpu_hour']:,.4f}",
                  f"{(r.get('upfront_usd') or 0):,.0f}", _short_source(r.get("source")), str(r.get("as_of") or ""))
    con.print(t)
    if any(str(r.get("source") or "").startswith("rule:") for r in result.rows):
        con.print("* estimated: a reserved rate derived by a documented discount rule, not a quote")


def prices_status(status: dict, fmt: str) -> None:
    """Render the dict of gpuopt.api.prices_status."""
    if fmt == "json":
        _json(status)
        return
    from rich.table import Table

    con = _console()
    prices = status.get("prices", {})
    con.print(f"Prices from: {prices.get('catalog')}" + (f" ({prices.get('snapshot')})" if prices.get("snapshot") else ""))
    if status.get("built_at"):
        con.print(f"Snapshot built: {status.get('built_at')} (schema version {status.get('schema_version')})")
    if status.get("as_of_note"):
        con.print(f"[yellow]Note on dates:[/] {status['as_of_note']}")
    t = Table(title="Rows per provider", title_justify="left")
    for col in ("provider", "rows", "on_demand", "spot", "reserved_1y", "reserved_3y", "estimated", "as of", "age (days)", "skipped"):
        t.add_column(col, justify="left" if col in ("provider", "as of") else "right")
    prov_meta = status.get("providers", {}) if isinstance(status.get("providers"), dict) else {}
    for prov, p in sorted(prices.get("providers", {}).items()):
        rbp = p.get("rows_by_pricing", {})
        meta = prov_meta.get(prov, {})
        skipped = meta.get("skipped_total")
        if skipped is None and isinstance(meta.get("skipped"), dict):
            skipped = sum(meta["skipped"].values())
        t.add_row(prov, str(p.get("rows")), *(str(rbp.get(k, 0)) for k in ("on_demand", "spot", "reserved_1y", "reserved_3y")),
                  str(p.get("estimated_rows")), str(p.get("as_of")), "—" if p.get("age_days") is None else f"{p['age_days']:.0f}",
                  "—" if skipped is None else str(skipped))
    con.print(t)
    for prov, meta in sorted(prov_meta.items()):
        srcs = meta.get("sources") or meta.get("source_files")
        if srcs:
            con.print(f"{prov}: " + "; ".join(str(s) for s in (srcs if isinstance(srcs, list) else [srcs])))
