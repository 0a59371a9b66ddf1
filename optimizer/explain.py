"""Small pure helpers the plan's explanation shares (optimizer.planning.plan and .explain, gpuopt.focus)."""

from __future__ import annotations


def on_demand_rates(offers, instance_types=None) -> dict[tuple[str, str, str], float]:
    """(provider, region, instance_type) -> on-demand USD/h, from the offers frame (for break-even: a commitment's
    effective rate / this rate is the share of hours it must be busy to pay off). ``instance_types``: only these
    (a plan's lines; a big catalog has hundreds of thousands of rows)."""
    sel = offers["pricing"] == "on_demand"
    if instance_types is not None:
        sel &= offers["instance_type"].isin(sorted(instance_types))
    od = offers[sel.to_numpy()]
    return {
        (r.provider, r.region, r.instance_type): float(r.usd_per_hour)
        for r in od[["provider", "region", "instance_type", "usd_per_hour"]].itertuples(index=False)
    }
