"""`gpuopt prices import FILE --format ...`: price files into the user cache, for machines without API access.

Each format goes through the project's own importer (providers.IMPORTERS); the offers of each provider in the file
are written as a new cache snapshot of that provider (regions in the file replace their previous rows; other
regions keep theirs), under the cache lock, atomically. Reserved rows missing from catalogs that have none
(SkyPilot) are derived with the same documented discount rules as the shipped snapshot (``source=rule:...``).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from gpuopt.errors import InputError, PriceDataError

FORMATS = ("skypilot", "ec2instances", "offers", "aws-price-list", "aws-bulk-csv", "azure-retail", "gcp-skus")
SKYPILOT_PROVIDERS = ("aws", "azure", "gcp", "lambda")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError("file", f"{path.name} is not a JSON file ({e})") from None


def _skypilot(path: Path, provider: str | None, as_of: str):
    from providers.reserved_rules import default_ratios, derive_reserved
    from providers.skypilot import parse_skypilot_csv

    if provider not in SKYPILOT_PROVIDERS:
        raise InputError("provider", "a SkyPilot catalog needs --provider", accepted=", ".join(SKYPILOT_PROVIDERS))
    import pandas as pd

    from providers.ec2instances import parse_instances_json
    from pricing_cache.build_snapshot import INPUTS_DIR

    res = parse_skypilot_csv(path, provider, as_of, f"import:{path.name}")
    quotes = parse_instances_json(INPUTS_DIR / "ec2instances_2017-11-12_gpu_subset.json", "2017-11-12",
                                  "ec2instances.info:2017-11-12")
    reserved = derive_reserved(res.offers, default_ratios(quotes.offers), quotes=quotes.offers)
    return pd.concat([res.offers, reserved], ignore_index=True), res.skipped


def _adapter_file(module: str, path: Path, as_of: str):
    """Formats of the live adapters: the module's ``import_file(path, as_of) -> ParseResult``."""
    from importlib import import_module

    mod = import_module(module)
    fn = getattr(mod, "import_file", None)
    if fn is None:
        raise InputError("format", f"{module} has no file import yet", accepted="skypilot, ec2instances, offers")
    res = fn(path, as_of)
    return res.offers, res.skipped


def import_file(file: str | Path, fmt: str, *, provider: str | None = None, as_of: str | None = None) -> dict[str, Any]:
    """Import ``file`` of format ``fmt`` into the cache.

    Returns {"snapshots": [{"provider", "rows", "file", "as_of", "regions"}], "skipped": n, "skipped_by_reason": {}}.
    Raises InputError (unknown format, missing file, bad content: the message names the field), PriceDataError
    (duplicate offers, non-USD prices), SnapshotError (lock held by a refresh)."""
    from pricing_cache import cache
    from pricing_cache.history import parse_date
    from pricing_cache.refresh import merge_and_write
    from providers._common import reason_code

    path = Path(file)
    if fmt not in FORMATS:
        raise InputError("format", f"unknown import format '{fmt}'", accepted=", ".join(FORMATS))
    if path.is_dir():
        raise InputError("file", f"{path} is a directory, not a price file")
    if not path.is_file():
        raise InputError("file", f"not found: {path}")
    if provider is not None and fmt != "skypilot":
        raise InputError("provider", f"--provider is only for --format skypilot (a {fmt} file names its provider)")
    cache.check_settings()
    today = dt.datetime.now(dt.timezone.utc).date()
    day = parse_date(as_of, "as_of").isoformat() if as_of else today.isoformat()
    if dt.date.fromisoformat(day) > today:
        raise InputError("as_of", f"{day} is in the future: the date the prices were valid cannot be after today")
    skipped: list = []
    if fmt == "skypilot":
        offers, skipped = _skypilot(path, provider, day)
    elif fmt == "ec2instances":
        from providers.ec2instances import parse_instances_json

        res = parse_instances_json(_read_json(path), day, f"import:{path.name}")
        offers, skipped = res.offers, res.skipped
    elif fmt == "offers":
        from providers.offers_csv import read_offers_csv

        offers = read_offers_csv(path)
        offers.loc[offers["as_of"].isin(["unknown", ""]), "as_of"] = day  # rows without a date: the import's date
    else:
        module = {"aws-price-list": "providers.aws", "aws-bulk-csv": "providers.aws", "azure-retail": "providers.azure",
                  "gcp-skus": "providers.gcp"}[fmt]
        offers, skipped = _adapter_file(module, path, day)
    if offers.empty:
        raise InputError("file", f"{path.name} holds no GPU offers gpuopt can use ({len(skipped)} rows skipped)")
    bad = sorted(set(offers["currency"].astype(str)) - {"USD"})
    if bad:
        raise PriceDataError(f"{path.name}: prices in {bad}; gpuopt compares prices in USD only (convert first)")
    written = []
    with cache.lock():
        for prov, grp in offers.groupby("provider"):
            regions = sorted(set(grp["region"].astype(str)))
            snap, merged, kept = merge_and_write(str(prov), grp, regions, as_of=day, regions_meta={},
                                                 source=f"gpuopt prices import {path.name} --format {fmt}")
            written.append({"provider": str(prov), "rows": int(len(merged)), "file": str(snap.csv_path),
                            "as_of": day, "regions": regions, "kept_previous": kept,
                            "offers_removed": snap.meta.get("offers_removed", 0),
                            "offers_added": snap.meta.get("offers_added", 0)})
    reasons: dict[str, int] = {}
    for s in skipped:
        code = reason_code(getattr(s, "reason", ""))
        reasons[code] = reasons.get(code, 0) + 1
    return {"snapshots": written, "skipped": len(skipped), "skipped_by_reason": reasons}
