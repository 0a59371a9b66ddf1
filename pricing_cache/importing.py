"""`gpuopt prices import FILE --input-format ...`: price files into the user cache, for machines without API access.

Each format goes through the project's own importer (providers.IMPORTERS); then every offer passes the validation
of providers.validate (the snapshot build and the live refresh use the same), and the offers of each provider in
the file are written as a new cache snapshot of that provider, under the cache lock, atomically.

What an import replaces (issue 9, "imports never empty a region silently"):

* By default only the offers the file carries, by offer key (providers._common.OFFER_KEY: provider, region, zone,
  instance_type, pricing, payment, offering_class): an offer of the file replaces the previous offer of the same
  key; every previous offer the file does not mention is kept. A reserved row the SkyPilot importer derives by
  rule (``source=rule:...``) never replaces a quoted previous row.
* With ``replace_region=True`` (``--replace-region``) the regions in the file are replaced whole: their previous
  offers that the file does not list are removed (counted).

The result says, per provider, how many offers were added, changed (price differs), unchanged and kept
(previous offers not in the file) and removed.

The date (``as_of``) is the date the source says its prices held, never the day of the import:

* ``aws-price-list`` / ``aws-bulk-csv``: the file's ``publicationDate`` / ``Publication Date``.
* ``offers``: each row's ``as_of`` column.
* ``skypilot``, ``ec2instances``, ``azure-retail``, ``gcp-skus``: the files carry no date of their own (an Azure
  ``effectiveStartDate`` or a GCP ``effectiveTime`` is when a price began, not when the file was saved), so
  ``as_of`` (``--as-of``) is required.

``as_of`` gives the date of rows the file leaves undated and never overrides a date the file states (a different
``as_of`` for a file whose every row is dated is an error). An import whose date is older than the provider's
current prices (:func:`pricing_cache.refresh.current_as_of`) is written into the price history only: it is merged
with the prices in effect on its date, ``--prices-on`` uses it, and the current prices stay as they are.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from gpuopt.kernel.errors import InputError, PriceDataError

FORMATS = ("skypilot", "ec2instances", "offers", "aws-price-list", "aws-bulk-csv", "azure-retail", "gcp-skus")
SKYPILOT_PROVIDERS = ("aws", "azure", "gcp", "lambda")

#: Formats whose files say when their prices held, and where.
DATED_FORMATS: dict[str, str] = {
    "aws-price-list": "the file's publicationDate",
    "aws-bulk-csv": "the file's Publication Date",
    "offers": "the rows' as_of column",
}
#: Formats whose files carry no date of their own: ``--as-of`` is required (why, for the error message).
UNDATED_FORMATS: dict[str, str] = {
    "skypilot": "a SkyPilot catalog carries no date",
    "ec2instances": "an ec2instances.info instances.json carries no date",
    "azure-retail": "a saved Azure Retail Prices answer carries no date of its own (effectiveStartDate is when a "
                    "price began)",
    "gcp-skus": "a saved Cloud Billing SKU listing carries no date of its own (effectiveTime is when a price "
                "began)",
}
#: The provider of the rows an importer skipped, per format (offers: the file's own providers).
_FORMAT_PROVIDER = {"ec2instances": "aws", "aws-price-list": "aws", "aws-bulk-csv": "aws", "azure-retail": "azure",
                    "gcp-skus": "gcp"}


def _read_json(path: Path) -> Any:
    """The JSON of ``path`` (UTF-8, BOM accepted, gzip decompressed); InputError naming the file otherwise."""
    from providers._input import read_json_file

    return read_json_file(path)


def _today() -> dt.date:
    return dt.datetime.now(dt.timezone.utc).date()


def parse_as_of(value: str | None) -> str | None:
    """``--as-of``: an ISO date (YYYY-MM-DD) or ``today`` (UTC), not in the future; None stays None.

    Raises InputError (field ``as_of``) for anything else."""
    from pricing_cache.history import parse_date

    if value is None:
        return None
    if str(value).strip().lower() == "today":
        return _today().isoformat()
    day = parse_date(value, "as_of")
    if day > _today():
        raise InputError("as_of", f"{day} is in the future: the date the prices were valid cannot be after today")
    return day.isoformat()


def _skypilot(path: Path, provider: str | None, as_of: str):
    """A SkyPilot catalog's on-demand and spot rows, validated, and reservations for them by the snapshot's rule
    (``reserved_rules.derive_by_ratio``: the median ratios of the shipped snapshot's QUOTED reservations, per
    instance type, GPU generation or provider; none for types AWS publishes no reservation for, none from a refused
    on-demand row). A SkyPilot catalog holds no reservation price of its own."""
    import pandas as pd

    from pricing_cache.store import load_offers
    from providers.reserved_rules import derive_by_ratio, quoted_ratios
    from providers.skypilot import parse_skypilot_csv
    from providers.validate import skipped_dicts, validate_offers

    res = parse_skypilot_csv(path, provider, as_of, f"import:{path.name}")
    checked = validate_offers(res.offers, f"import:{path.name}")
    shipped, _ = load_offers(use_cache=False)
    ratios = quoted_ratios(shipped[(shipped["provider"] == provider).to_numpy()])
    reserved = derive_by_ratio(checked.offers, ratios)
    # the refused rows as dicts with their provider (refresh.skipped_rows takes both forms)
    return pd.concat([checked.offers, reserved], ignore_index=True), list(res.skipped) + skipped_dicts(checked), \
        list(res.notes) + list(checked.notes)


def _adapter_file(module: str, path: Path, as_of: str | None):
    """Formats of the live adapters: the module's ``import_file(path, as_of) -> ParseResult`` (``as_of`` None:
    the rows keep the dates the file gives, where the format has them)."""
    from importlib import import_module

    mod = import_module(module)
    fn = getattr(mod, "import_file", None)
    if fn is None:
        raise InputError("format", f"{module} has no file import yet", accepted="skypilot, ec2instances, offers")
    res = fn(path, as_of)
    return res.offers, res.skipped, list(res.notes)


def _parse(path: Path, fmt: str, provider: str | None, as_of: str | None):
    """(offers, skipped rows as dicts with their provider, notes) of the file, rows dated by the file where it
    says, else by ``as_of`` (required before this is called for the undated formats)."""
    from pricing_cache.refresh import skipped_rows
    from providers._input import check_offer_values

    notes: list[str] = []
    if fmt == "skypilot":
        offers, skipped, notes = _skypilot(path, provider, as_of)
    elif fmt == "ec2instances":
        from providers.ec2instances import parse_instances_json

        res = parse_instances_json(_read_json(path), as_of, f"import:{path.name}")
        offers, skipped, notes = res.offers, res.skipped, list(res.notes)
    elif fmt == "offers":
        from providers.offers_csv import read_offers_csv

        offers, skipped = read_offers_csv(path), []
    else:
        module = {"aws-price-list": "providers.aws_import", "aws-bulk-csv": "providers.aws_import",
                  "azure-retail": "providers.azure", "gcp-skus": "providers.gcp"}[fmt]
        offers, skipped, notes = _adapter_file(module, path, None if fmt in DATED_FORMATS else as_of)
    owner = provider if fmt == "skypilot" else _FORMAT_PROVIDER.get(fmt, "")
    # the input boundary (providers._input): no infinite, negative or absurd number leaves an importer
    offers, bad = check_offer_values(offers, f"import:{path.name}")
    return offers, skipped_rows(list(skipped) + bad, owner), notes


def _date_rows(offers, path: Path, fmt: str, as_of: str | None):
    """Give every row its date: the file's own where it states one, ``as_of`` for the rest. Returns (offers,
    where the date came from). Raises InputError (``as_of``) for undated rows without ``as_of``, an unreadable
    row date, a date in the future, or an ``as_of`` contradicting a file whose every row is dated."""
    offers = offers.copy()
    raw = offers["as_of"].astype(object).where(offers["as_of"].notna(), "").astype(str).str.strip()
    undated = raw.isin(["", "unknown", "nan", "<NA>"]).to_numpy()
    where = DATED_FORMATS.get(fmt, "--as-of")
    if undated.all() and fmt in DATED_FORMATS:
        if as_of is None:
            missing = {"aws-price-list": "no publicationDate", "aws-bulk-csv": "no Publication Date",
                       "offers": "no as_of column, or every as_of empty or unknown"}[fmt]
            raise InputError("as_of", f"{path.name} does not say when its prices held ({missing}); give --as-of "
                                      "YYYY-MM-DD, the date the file's prices held", accepted="YYYY-MM-DD or today")
        where = "--as-of (the file gives no date)"
    elif undated.any():
        if as_of is None:
            raise InputError("as_of", f"{int(undated.sum())} of {len(offers)} rows of {path.name} have no as_of; "
                                      "give --as-of YYYY-MM-DD for them", accepted="YYYY-MM-DD or today")
        where = f"{where}; --as-of for {int(undated.sum())} undated rows"
    elif as_of is not None and fmt in DATED_FORMATS:
        stated = sorted(set(raw.str[:10]))
        if stated != [as_of]:
            raise InputError("as_of", f"{path.name} says its prices held on {', '.join(stated)} ({where}); "
                                      f"--as-of {as_of} contradicts it: leave --as-of out")
    days = raw.str[:10].where(~undated, as_of or "")
    for d in sorted(set(days)):
        try:
            day = dt.date.fromisoformat(d)
        except ValueError:
            raise InputError("as_of", f"{path.name}: row date {d!r} is not a date", accepted="YYYY-MM-DD") from None
        if day > _today():
            raise InputError("as_of", f"{path.name}: prices dated {d} are in the future: the date the prices were "
                                      "valid cannot be after today")
    offers.loc[undated, "as_of"] = as_of or ""
    return offers, where


def _validate_in_context(new, previous, replace_regions):
    """providers.validate.validate_offers on the file's rows of one provider, beside the previous offers they
    will sit with (so a spot or reserved row of the file is checked against the on-demand price already in the
    cache). Only the file's rows can be refused. A previous offer stays in the context when the file's row of
    its key is refused (it is kept): a second pass checks the file's other rows against it.

    Returns a providers.validate.Validated of the file's rows (offers: those that pass)."""
    import numpy as np
    import pandas as pd

    from pricing_cache.refresh import offer_keys
    from providers.validate import Validated, validate_offers

    n = len(new)
    new_keys = offer_keys(new)
    prev_keys = offer_keys(previous)
    if replace_regions:
        base_ctx = previous[~previous["region"].astype(str).isin(set(new["region"].astype(str))).to_numpy()]
    refused_keys: set = set()
    for _ in range(2):
        if not replace_regions:
            carried = {k for k in new_keys if k not in refused_keys}
            base_ctx = previous[np.array([k not in carried for k in prev_keys], dtype=bool)] if len(previous) \
                else previous
        frame = pd.concat([new, base_ctx], ignore_index=True) if len(base_ctx) else new.reset_index(drop=True)
        frame = frame.assign(_gpuopt_row=np.arange(len(frame)))
        checked = validate_offers(frame, "")
        kept = checked.offers["_gpuopt_row"].to_numpy()
        refused = sorted(set(range(len(frame))) - set(kept.tolist()))
        again = {new_keys[i] for i in refused if i < n}
        if again == refused_keys or replace_regions:
            break
        refused_keys = again
    mine = checked.offers[kept < n].drop(columns="_gpuopt_row").reset_index(drop=True)
    pairs = [(s, p) for i, s, p in zip(refused, checked.skipped, checked.providers) if i < n]
    notes = list(checked.notes)
    stale = [s for i, s in zip(refused, checked.skipped) if i >= n]
    if stale:
        # previous offers the file does not carry, now inconsistent with its prices (a kept reservation above the
        # file's new on-demand rate): kept, never dropped in silence, and said
        why = sorted({s.reason.split(":")[0] for s in stale})
        ex = stale[0]
        notes.append(f"{len(stale)} kept offer(s) the file does not carry fail the checks against its prices "
                     f"({', '.join(why)}; e.g. {ex.instance_type} in {ex.region}): kept as they were — import "
                     "their prices too, or use --replace-region to drop the region's old offers")
    return Validated(mine.astype(new.dtypes.to_dict()), [s for s, _ in pairs], notes, [p for _, p in pairs])


def _next_as_of(provider: str, day: str) -> str | None:
    """The date of the provider's next newer prices after ``day`` (cache snapshot or shipped snapshot)."""
    from pricing_cache import cache
    from pricing_cache.refresh import shipped_day

    later = [s.as_of[:10] for s in cache.list_snapshots(provider) if s.ok and s.as_of[:10] > day]
    ship = shipped_day(provider)
    if ship and ship > day:
        later.append(ship)
    return min(later) if later else None


def import_file(file: str | Path, fmt: str, *, provider: str | None = None, as_of: str | None = None,
                replace_region: bool = False) -> dict[str, Any]:
    """Import ``file`` of format ``fmt`` into the cache (see the module docstring for what is replaced and dated).

    Args:
        file: the price file.
        fmt: one of FORMATS.
        provider: the provider of a SkyPilot file (SKYPILOT_PROVIDERS); only for ``skypilot``.
        as_of: YYYY-MM-DD or ``today``: the date of the rows the file leaves undated; required for
            UNDATED_FORMATS.
        replace_region: replace the regions of the file whole (their offers not in the file are removed) instead
            of only the offers the file carries.

    Returns:
        {"snapshots": [one dict per provider: provider, file (the snapshot's .csv), rows (offers in it), as_of,
        as_of_from (where the date came from), regions (of the file), mode ("offers" | "region"), current (True:
        these are now the current prices; False: history only), current_as_of (the date of the current prices,
        before the import), next_as_of (history: the date of the next newer prices), added, changed, unchanged,
        kept, removed, kept_quoted, kept_estimated, estimated (offer counts: refresh.MergeCounts),
        kept_previous (regions with kept offers), offers_added / offers_removed (the same counts, older keys),
        skipped, skipped_by_reason, skipped_file (the snapshot's skipped list)]; a provider whose every row was
        refused has written=False and no file},
        "skipped": rows not imported, "skipped_by_reason": {reason code: rows}, "notes": [...],
        "messages": [the lines `gpuopt prices import` prints]}.

    Raises:
        InputError: unknown format, missing file, --provider misused, a missing/bad/contradicting/future date,
            content that is not the format, a file with no usable offer (the message names the field).
        PriceDataError: duplicate offers, non-USD prices. SnapshotError: the lock held by a refresh.
        Every provider's snapshot is merged and checked before any is written; on an error nothing is written
        and the previous snapshots stay the current ones.
    """
    from pricing_cache import cache
    from pricing_cache.refresh import previous_rows, current_as_of, merge_offers, skipped_rows

    path = Path(file)
    if fmt not in FORMATS:
        raise InputError("format", f"unknown import format '{fmt}'", accepted=", ".join(FORMATS))
    if path.is_dir():
        raise InputError("file", f"{path} is a directory, not a price file")
    if not path.is_file():
        raise InputError("file", f"not found: {path}")
    if provider is not None and fmt != "skypilot":
        raise InputError("provider", f"--provider is only for --input-format skypilot (a {fmt} file names its provider)")
    if fmt == "skypilot" and provider not in SKYPILOT_PROVIDERS:
        raise InputError("provider", "a SkyPilot catalog needs --provider", accepted=", ".join(SKYPILOT_PROVIDERS))
    day = parse_as_of(as_of)
    if day is None and fmt in UNDATED_FORMATS:
        raise InputError("as_of", f"{UNDATED_FORMATS[fmt]}: give --as-of YYYY-MM-DD, the date its prices held "
                                  "(when it was fetched, or its commit date); gpuopt never dates prices by the "
                                  "day of the import", accepted="YYYY-MM-DD or today")
    cache.check_settings()
    offers, skipped, notes = _parse(path, fmt, provider, day)
    if offers.empty:
        raise InputError("file", f"{path.name} holds no GPU offers gpuopt can use ({_said(skipped)})")
    bad = sorted(set(offers["currency"].astype(str)) - {"USD"})
    if bad:
        raise PriceDataError(f"{path.name}: prices in {bad}; gpuopt compares prices in USD only (convert first)")
    offers, as_of_from = _date_rows(offers, path, fmt, day)
    source = f"gpuopt prices import {path.name} --input-format {fmt}" + (" --replace-region" if replace_region else "")
    plans = []
    with cache.lock():
        for prov, grp in offers.groupby("provider", sort=True):
            prov = str(prov)
            grp = grp.reset_index(drop=True)
            snap_day = max(grp["as_of"].astype(str).str[:10])
            current = current_as_of(prov)
            is_current = current is None or snap_day >= current
            previous = previous_rows(prov, snap_day)
            checked = _validate_in_context(grp, previous, replace_region)
            mine = [r for r in skipped if r["provider"] in (prov, "")]
            refused = skipped_rows([{"provider": p, **s.__dict__} for s, p in zip(checked.skipped, checked.providers)],
                                   prov)
            notes.extend(checked.notes)
            regions = sorted(set(grp["region"].astype(str)))
            if checked.offers.empty:
                plans.append((prov, None, None, None, regions, snap_day, is_current, current, mine + refused))
                continue
            # --replace-region replaces the regions the file still has offers for after the checks: a region whose
            # rows were all refused is left as it was (a breaker emptied us-west-2 with one refused row)
            kept_regions = sorted(set(checked.offers["region"].astype(str)))
            merged, counts = merge_offers(previous, checked.offers,
                                          replace_regions=kept_regions if replace_region else None)
            plans.append((prov, checked.offers, merged, counts, regions, snap_day, is_current, current,
                          mine + refused))
        if all(p[1] is None for p in plans):
            every = [r for p in plans for r in p[8]]
            raise InputError("file", f"{path.name} holds no GPU offers gpuopt can use ({_said(every)})")
        written = []
        for prov, new, merged, counts, regions, snap_day, is_current, current, sk in plans:
            if new is None:
                written.append({"provider": prov, "file": None, "rows": 0, "as_of": snap_day, "regions": regions,
                                "written": False, "skipped": len(sk), "skipped_by_reason": cache.skipped_counts(sk)})
                continue
            snap = cache.write_snapshot(
                prov, merged, as_of=snap_day,
                regions={"done": regions, "kept_previous": counts.kept_regions},
                skipped=sk,
                extra={"source": source, "mode": "region" if replace_region else "offers",
                       "as_of_from": as_of_from, "history_only": not is_current,
                       "offers_added": counts.added, "offers_changed": counts.changed,
                       "offers_unchanged": counts.unchanged, "offers_kept": counts.kept,
                       "offers_removed": counts.removed, "offers_kept_quoted": counts.kept_quoted,
                       "offers_kept_estimated": counts.kept_estimated})
            written.append({
                "provider": prov, "file": str(snap.csv_path), "written": True, "rows": int(len(merged)),
                "as_of": snap_day, "as_of_from": as_of_from, "regions": regions,
                "mode": "region" if replace_region else "offers", "current": is_current,
                "current_as_of": current, "next_as_of": None if is_current else _next_as_of(prov, snap_day),
                "added": counts.added, "changed": counts.changed, "unchanged": counts.unchanged,
                "kept": counts.kept, "removed": counts.removed, "kept_quoted": counts.kept_quoted,
                "kept_estimated": counts.kept_estimated,
                "estimated": counts.estimated,
                "kept_previous": counts.kept_regions, "offers_added": counts.added,
                "offers_removed": counts.removed, "skipped": len(sk), "skipped_by_reason": cache.skipped_counts(sk),
                "skipped_file": snap.meta.get("skipped_file")})
    every = [r for p in plans for r in p[8]]
    out = {"snapshots": written, "skipped": len(every), "skipped_by_reason": cache.skipped_counts(every),
           "notes": list(dict.fromkeys(notes))}
    out["messages"] = summary_lines(out)
    return out


def _said(skipped: list[dict[str, Any]]) -> str:
    from pricing_cache.cache import skipped_counts

    if not skipped:
        return "no row was skipped"
    by = skipped_counts(skipped)
    return f"{_n(len(skipped), 'row')} not usable: " + ", ".join(f"{k} {v}" for k, v in by.items())


def _n(k: int, what: str = "offer") -> str:
    return f"{k} {what}{'' if k == 1 else 's'}"


def summary_lines(result: dict[str, Any]) -> list[str]:
    """The lines `gpuopt prices import` prints for an :func:`import_file` result, per provider: the date and where
    it came from, current prices or history only, the snapshot written; the offers added, changed, unchanged,
    kept and removed; estimates not written; the rows not imported by reason."""
    lines = []
    for w in result.get("snapshots", []):
        prov = w["provider"]
        if not w.get("written", True):
            lines.append(f"{prov}: nothing written: every row of the file was refused ({_n(w['skipped'], 'row')})")
        else:
            dated = f"prices as of {w['as_of']} ({w['as_of_from']})"
            if w["current"]:
                lines.append(f"{prov}: {dated} are now the current {prov} prices: {w['rows']} offers in {w['file']}")
            else:
                span = f"dates from {w['as_of']}"
                if w.get("next_as_of"):
                    last = dt.date.fromisoformat(w["next_as_of"]) - dt.timedelta(days=1)
                    span += f" to {last.isoformat()}" if last.isoformat() > w["as_of"] else ""
                lines.append(f"{prov}: {dated} are older than the current {prov} prices (as of "
                             f"{w['current_as_of']}): written to the price history only, used by `--prices-on` "
                             f"{span}; the current prices are unchanged ({w['rows']} offers in {w['file']})")
            against = "" if w["current"] else f" (against the prices in effect on {w['as_of']})"
            removed = (f"{w['removed']} removed (offers of the replaced regions {', '.join(w['regions'])} that the "
                       "file does not list)" if w["mode"] == "region" else "none removed")
            lines.append(f"{prov}: {_n(w['added'])} added, {w['changed']} changed (price differs), {w['unchanged']} "
                         f"unchanged, {w['kept']} kept (previous offers not in the file), {removed}{against}")
            if w.get("estimated"):
                lines.append(f"{prov}: {_n(w['estimated'], 'reservation')} of those estimated by rule from the "
                             "file's on-demand prices (source rule:...)")
            if w.get("kept_quoted") or w.get("kept_estimated"):
                lines.append(f"{prov}: {_n(w.get('kept_quoted', 0) + w.get('kept_estimated', 0), 'reservation')} "
                             "the import estimated not written: the previous offers of those keys are quoted, or "
                             "estimated from the same on-demand price, and stay")
        if w.get("skipped"):
            by = ", ".join(f"{k} {v}" for k, v in w["skipped_by_reason"].items())
            lines.append(f"{prov}: {_n(w['skipped'], 'row')} not imported: {by}"
                         + (f" (listed in {w['skipped_file']})" if w.get("skipped_file") else ""))
    notes = result.get("notes") or []
    lines.extend(f"note: {n}" for n in notes[:5])
    if len(notes) > 5:
        lines.append(f"note: {len(notes) - 5} more notes in the JSON summary (--json)")
    return lines
