"""What a plan needs beyond money (issue 26): the quotas it draws on and where its replicas are launched."""

from __future__ import annotations

from optimizer.planning.problem import cand_index


def quota_needs(problem, sol) -> dict:
    """The most of each quota the plan draws on in any block: {QuotaKey: (units, limit or None)} (issue 26). Running
    instances count (hourly and committed units; a reservation or savings plan is billing over On-Demand capacity);
    capacity blocks draw on none (providers.quotas)."""
    from providers.quotas import quota_keys

    idx = cand_index(problem)
    training = problem.training_names()
    by_block: dict[int, dict] = {}
    keys_of: dict[str, tuple] = {}
    for store in (sol.A, sol.X):
        for (w, ok, bi), x in store.items():
            if x <= 1e-9:
                continue
            c = idx[(w, ok)]
            if ok not in keys_of:
                pairs = {k: k.units_per_instance for k in quota_keys(c.offer)}
                if problem.quotas is not None:
                    pairs.update(dict(problem.quotas.keys_for(c.offer)))
                keys_of[ok] = tuple(pairs.items())
            for key, per in keys_of[ok]:
                if per is None:
                    continue
                d = by_block.setdefault(bi, {})
                units = problem.running_units(training, w, x)  # a job's: whole instances
                d[key] = d.get(key, 0.0) + float(per) * float(c.instances_per_unit) * units
    out: dict = {}
    for d in by_block.values():
        for key, n in d.items():
            out[key] = max(out.get(key, 0.0), n)
    table = problem.quotas
    return {k: (n, table.limit_of(k) if table is not None else None) for k, n in out.items()}


def quota_notes(problem, sol) -> list[str]:
    """One note per quota the plan needs: its name, the most it runs at once and the limit when known (issue 26: new
    AWS accounts have 0 vCPUs of P-instance quota in most regions)."""
    out = []
    for key, (n, lim) in sorted(quota_needs(problem, sol).items(), key=lambda kv: kv[0].label):
        if lim is None and key.provider not in ("aws", "azure", "gcp"):
            continue  # no published quota system (providers.quotas): only a quota file limits it
        unit = "vCPUs" if key.unit == "vcpus" else "GPUs" if key.unit == "gpus" else key.unit
        name = key.label.rsplit(", ", 1)[0]  # the label ends with its unit
        if lim is None:
            out.append(f"quota: needs {n:,.0f} {unit} of {name} (check it: new accounts often have 0; "
                       + ("your --quota file gives no limit for it)" if problem.quotas is not None else
                          "--quota FILE plans within yours)"))
        else:
            out.append(f"quota: uses {n:,.0f} of the {lim.headroom:,.0f} {unit} left of {name} (--quota)"
                       + (" (at its limit)" if n >= lim.headroom - 1e-9 else ""))
    return out


def zone_notes(problem, lines) -> list[str]:
    """Where to launch the serving replicas (issue 26): regional offers in a region with availability zones are
    launched in distinct zones (the plan counted each instance as one zone under ``--spread zones``; by default two
    replicas are planned and should sit in two zones); a region without zones is one location, said so."""
    from providers.zones import region_has_zones, spread_zones_needed

    out = []
    serving = {w.name: w for w in problem.workloads if not w.training and w.min_replicas > 1}
    seen: set[tuple] = set()
    for ln in lines:
        names = [n for n in (getattr(ln, "workloads", None) or []) if n in serving]
        if not names or ln.zone or getattr(ln, "scope", ""):
            continue  # a savings plan's own line runs nothing: the instances under it have lines of their own
        key = (ln.provider, ln.region, tuple(names))
        if key in seen:
            continue
        seen.add(key)
        # the replicas the plan runs there (at least the floor): a first user read "its 2 replicas" on 3
        here = sum(float(x.replicas or 0) for x in lines if x.provider == ln.provider and x.region == ln.region
                   and set(getattr(x, "workloads", None) or []) & set(names) and not x.zone)
        m = max(serving[n].min_replicas for n in names)
        if region_has_zones(ln.provider, ln.region):
            out.append(f"{', '.join(names)}: launch the {ln.provider} {ln.region} instances in at least "
                       f"{spread_zones_needed(m)} distinct "
                       "availability zones (the price data is regional; "
                       + ("the zone spread counted a region's instances as up to its 3 zones)" if problem.spread == "zones" else
                          "--spread zones makes it a rule of the plan)"))
        else:
            n = max(m, int(round(here)))
            out.append(f"{', '.join(names)}: {ln.provider} {ln.region} has no availability zones: its {n} replicas "
                       "there share one location (a zone outage takes all of them; --spread zones plans across "
                       "zones)")
    return out


def kept_out_notes(problem) -> list[str]:
    """The offers a team would not sign for that were kept from a workload (optimizer.planning.problem_build
    ._signable, issue 26), one note per reason and workload."""
    from optimizer.planning.problem import SPOT_TRAINING_MAX_HOURS, UNDATED_SPOT_MAX_DAYS

    out = []
    for w in problem.workloads:
        rej = problem.rejected.get(w.name, {})
        if rej.get("spot_training_not_allowed"):
            out.append(f"{w.name}: {rej['spot_training_not_allowed']:,} spot offers kept out: a synchronous job whose "
                       f"window is over {SPOT_TRAINING_MAX_HOURS:g} h stops whole at every reclaim "
                       "(--allow-spot-training to allow it)")
        if rej.get("spot_undated"):
            out.append(f"{w.name}: {rej['spot_undated']:,} spot offers without a date kept out (a spot price is not "
                       f"planned on for over {UNDATED_SPOT_MAX_DAYS:g} days unless a dated source gives it)")
    return out
