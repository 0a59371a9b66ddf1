"""Build the shipped price snapshot from the input files in ``pricing_cache/data/inputs/`` (and nothing else).

Run: ``python -m pricing_cache.build_snapshot`` (writes ``pricing_cache/data/{offers.csv,skipped.csv,snapshot.json}``),
or ``python -m pricing_cache.build_snapshot --check`` (builds into a temporary folder and fails if the committed
files differ). The build is reproducible: no clock, no network; sorted rows; fixed float formatting, so a rebuild
is byte-identical.

What goes in (see ``data/inputs/PROVENANCE.md``):

* AWS: the all-regions SkyPilot file, plus from the two-region file only the instance types the all-regions file
  lacks (g4dn.8xlarge, g5.4xlarge, g6f.*, p5.4xlarge); where both files have a type, their on-demand prices are
  checked to agree. Reserved: real ec2instances.info quotes (2017-11-12) where their on-demand rate equals the
  snapshot's, else the AWS rule (medians of the real quotes).
* Azure, GCP (the "more" file, 32 regions), Lambda (both files): on-demand (+ spot for Azure/GCP), reserved by rule
  for Azure and GCP (``providers.reserved_rules``), none for Lambda.
* Every row's ``fabric`` and ``zone_kind`` (schema version 2) and ``tier`` (schema version 4) come from the
  documented facts in ``providers/facts.py`` (cited there; no input file), filled by the importers' shared
  ``offers_frame``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuopt.kernel.errors import PriceDataError
from gpuopt.kernel.records import OFFER_COLUMNS, SCHEMA_VERSION

DATA_DIR = Path(__file__).resolve().parent / "data"
INPUTS_DIR = DATA_DIR / "inputs"

#: The date this snapshot is stamped with (``built_at``): the date the input files were copied from the project's
#: shared data (their PROVENANCE.md), not the time the script runs, so rebuilds are byte-identical.
BUILT_AT = "2026-11-30"

#: ``as_of`` of the SkyPilot rows. The dates of the stored skypilot-catalog commits (00148f2a, 006059e0, 0f407038,
#: 098741e7) could not be looked up (see PROVENANCE.md); the rows are stamped with the date the files were copied,
#: which is an UPPER bound: the prices were valid at their commit, on or before this date.
SKYPILOT_AS_OF = "2026-11-30"
EC2INSTANCES_AS_OF = "2017-11-12"
#: ``as_of`` of a catalog row no dated source confirms: the date its prices held is not known (issue 9 point 4:
#: never the copy date). ``gpuopt prices status`` counts these rows per provider.
UNDATED = "unknown"


@dataclass(frozen=True)
class Input:
    provider: str
    file: str
    upstream: str
    commit: str | None
    license: str
    role: str


SKYPILOT_REPO = "skypilot-org/skypilot-catalog"
INPUTS: tuple[Input, ...] = (
    Input("aws", "aws_vms_v8_gpu_all_regions.csv", f"{SKYPILOT_REPO} catalogs/v8/aws/vms.csv", "00148f2a",
          "no license file (prices published by AWS)", "on-demand + spot, 23 regions"),
    Input("aws", "aws_vms_v8_gpu_us-east-1_us-west-2.csv", f"{SKYPILOT_REPO} catalogs/v8/aws/vms.csv", "00148f2a",
          "no license file (prices published by AWS)", "only the instance types the all-regions file lacks"),
    Input("aws", "ec2instances_2017-11-12_gpu_subset.json", "vantage-sh/ec2instances.info www/instances.json "
          "(2017-11-12)", None, "MIT", "real reserved quotes; AWS reserved ratios"),
    Input("aws", "GetProducts_m5_large.json", "aws/amazon-ec2-instance-selector test/static (Pricing API, "
          "publication 2021-02-05)", None, "Apache-2.0", "partial-upfront upfront/recurring split"),
    Input("azure", "azure_vms_v6_gpu_NC_ND_NV_us.csv", f"{SKYPILOT_REPO} catalogs/v6/azure/vms.csv", "098741e7",
          "no license file (prices published by Microsoft)", "on-demand + spot, 9 US regions"),
    Input("gcp", "gcp_vms_v8_gpu_more.csv", f"{SKYPILOT_REPO} catalogs/v8/gcp/vms.csv", "006059e0",
          "no license file (prices published by Google)", "host + accelerator rows, 32 regions"),
    Input("lambda", "lambda_vms_v8_gpu_us-east-1.csv", f"{SKYPILOT_REPO} catalogs/v8/lambda/vms.csv", "0f407038",
          "no license file (prices published by Lambda)", "on-demand, us-east-1"),
    Input("lambda", "lambda_vms_v8_gpu_rest.csv", f"{SKYPILOT_REPO} catalogs/v8/lambda/vms.csv", "0f407038",
          "no license file (prices published by Lambda)", "the last two Lambda types"),
    Input("gcp", "gcp_list_prices.csv", "Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml (generated "
          "2026-07-30), via shared/data/prices", "fd66b26f", "Apache-2.0",
          "on-demand, spot, CUD 1y/3y per machine type and region (A2, A3 High/Mega, G2; 40 regions)"),
    Input("gcp", "gcp_gpu_sku_prices.csv", "Jumbo2020/gpu_prices gcp_gpu_prices.json (Cloud Billing Catalog, "
          "effectiveTime 2025-06-16), via shared/data/prices", "2e0273be", "no license file",
          "per-GPU SKU prices: tells Flex-start/Calendar/commitment SKUs from on-demand ones"),
    Input("aws", "aws_commitments.csv", "tsaol/aws-gpu gpu_instances_raw.json (ec2instances.info, 2025-11-30); "
          "koyakimu/ec2-capacity-blocks-for-ml-pricing-json (2026-01-31, 2026-07-22); AWS capacity blocks page "
          "(late 2024), via shared/data/prices", "2d0108c7", "MIT (ec2instances.info, capacity-block scrape)",
          "reserved instances (standard; convertible where no standard) and capacity blocks"),
    Input("azure", "azure_prices.csv", "Jumbo2020/gpu_prices azure_gpu_prices.json (Azure Retail Prices API, "
          "2025-06-21), via shared/data/prices", "54424a76", "no license file",
          "on-demand, spot, reservations 1y/3y for 9 A100/H100/H200 sizes in 18 regions"),
    Input("lambda", "other_clouds.csv", "api-evangelist/lambda-labs plans (lambda.ai/instances read 2026-09-20), "
          "via shared/data/prices", "1929382e", "not checked", "Lambda on-demand prices of 2026-09-20"),
    Input("coreweave", "other_clouds.csv", "api-evangelist/coreweave plans (coreweave.com/pricing read "
          "2026-09-20), via shared/data/prices", "27bcc25e", "not checked",
          "CoreWeave on-demand and North America spot per instance, 2026-09-20"),
    Input("runpod", "other_clouds.csv", "tgarg01/silybench-data prices/gpu_hourly.yaml (runpod.io/pricing, checked "
          "2026-09-25), via shared/data/prices", "045df3bf", "CC BY 4.0",
          "RunPod Community and Secure Cloud per GPU-hour, 2026-09-25"),
    Input("nebius", "other_clouds.csv", "tgarg01/silybench-data prices/gpu_hourly.yaml (nebius.com prices, checked "
          "2026-09-25), via shared/data/prices", "045df3bf", "CC BY 4.0", "Nebius per GPU-hour, 2026-09-25"),
)


def _skypilot_source(inp: Input) -> str:
    path = inp.upstream.split(" ", 1)[1]
    return f"skypilot-catalog:{path}@{inp.commit}"


def _input(file: str) -> Input:
    return next(i for i in INPUTS if i.file == file)


def _format_frame_csv(df, path: Path) -> None:
    df.to_csv(path, index=False, float_format="%.10g", na_rep="", lineterminator="\n")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_offers(inputs_dir: Path = INPUTS_DIR) -> tuple[Any, list, dict]:
    """(offers DataFrame sorted by the offer key, skipped rows as dicts with ``provider``, rules used).

    Order of authority for each offer (issue 9): a dated published quote (``providers.published``: GCP list prices
    and CUDs, AWS reserved instances and capacity blocks, Azure list prices and reservations, Lambda's page) over
    the SkyPilot catalog row of the same key; catalog rows a quote confirms (same price) take the quote's date;
    reservations derived by rule (``providers.reserved_rules.derive_by_ratio``, ratios from the quotes per type,
    GPU generation or provider) only where no quote exists; then every row through
    ``providers.validate.validate_offers``.
    """
    import pandas as pd

    from providers import published
    from providers._common import OFFER_KEY, check_unique, offers_frame
    from providers.ec2instances import PARTIAL_UPFRONT_SHARE, parse_instances_json, partial_upfront_shares
    from providers.reserved_rules import derive_by_ratio, derive_reserved, quoted_ratios
    from providers.skypilot import parse_skypilot_csv
    from providers.validate import skipped_dicts, validate_offers

    frames = []
    skipped: list[dict] = []

    def add(provider: str, result) -> None:
        frames.append(result.offers)
        skipped.extend({"provider": provider, **s.__dict__} for s in result.skipped)

    # AWS: all regions, then the types only the two-region file has
    all_inp, two_inp = _input("aws_vms_v8_gpu_all_regions.csv"), _input("aws_vms_v8_gpu_us-east-1_us-west-2.csv")
    aws_all = parse_skypilot_csv(inputs_dir / all_inp.file, "aws", UNDATED, _skypilot_source(all_inp))
    import csv

    with open(inputs_dir / all_inp.file, newline="", encoding="utf-8") as fh:
        all_types = {r["InstanceType"] for r in csv.DictReader(fh)}
    aws_two_full = parse_skypilot_csv(inputs_dir / two_inp.file, "aws", UNDATED, _skypilot_source(two_inp))
    _check_overlap(aws_all.offers, aws_two_full.offers)
    aws_two = parse_skypilot_csv(inputs_dir / two_inp.file, "aws", UNDATED, _skypilot_source(two_inp),
                                 exclude_instance_types=all_types)
    add("aws", aws_all)
    add("aws", aws_two)
    for file, prov in (("azure_vms_v6_gpu_NC_ND_NV_us.csv", "azure"), ("gcp_vms_v8_gpu_more.csv", "gcp"),
                       ("lambda_vms_v8_gpu_us-east-1.csv", "lambda"), ("lambda_vms_v8_gpu_rest.csv", "lambda")):
        inp = _input(file)
        add(prov, parse_skypilot_csv(inputs_dir / file, prov, UNDATED, _skypilot_source(inp)))
    catalog = pd.concat(frames, ignore_index=True)

    # the partial-upfront split constants must be the ones the real payload gives
    payload = json.loads((inputs_dir / "GetProducts_m5_large.json").read_text(encoding="utf-8"))
    measured = partial_upfront_shares(payload)
    for k, v in PARTIAL_UPFRONT_SHARE.items():
        if abs(measured[k] - v) > 1e-12:
            raise PriceDataError(f"PARTIAL_UPFRONT_SHARE{k} = {v} but GetProducts_m5_large.json gives {measured[k]}")

    # published quotes, with the catalogs' hardware facts
    rows: list[dict] = []
    for file, fn in (("gcp_list_prices.csv", published.gcp_list_prices), ("azure_prices.csv", published.azure_prices)):
        got, sk = fn(inputs_dir / file)
        rows += got
        skipped.extend({"provider": file.split("_", 1)[0], **s.__dict__} for s in sk)
    aws_rows, sk, older_blocks = published.aws_commitments(inputs_dir / "aws_commitments.csv")
    rows += aws_rows
    skipped.extend({"provider": "aws", **s.__dict__} for s in sk)
    lam = catalog[catalog["provider"] == "lambda"]
    lam_types: dict[tuple[str, float], list[str]] = {}
    for r in lam.to_dict("records"):
        lam_types.setdefault((str(r["gpu_model"]), float(r["gpu_count"])), []).append(str(r["instance_type"]))
    got, sk = published.lambda_prices(inputs_dir / "other_clouds.csv", lam_types)
    rows += got
    skipped.extend({"provider": "lambda", **s.__dict__} for s in sk)
    quoted, sk = published.with_hardware(rows, catalog)
    skipped.extend(sk)
    # CoreWeave, RunPod, Nebius: no catalog describes them; their rows carry what the page and the datasheet give
    got, sk = published.other_cloud_prices(inputs_dir / "other_clouds.csv")
    skipped.extend({"provider": prov, **s.__dict__} for prov, s in sk)
    quoted = pd.concat([quoted, offers_frame(got)], ignore_index=True)

    # a quote replaces the catalog rows of its provider, type, region and pricing (GCP and Azure quotes are per
    # region: they replace the catalog's per-zone spot rows too)
    covered = set(map(tuple, quoted[["provider", "region", "instance_type", "pricing"]].astype(str).values.tolist()))
    ckey = list(map(tuple, catalog[["provider", "region", "instance_type", "pricing"]].astype(str).values.tolist()))
    replaced = [k in covered for k in ckey]
    kept = catalog[[not x for x in replaced]].copy()
    confirm = _confirmations(quoted, inputs_dir)
    kept = _date_catalog_rows(kept, confirm)
    base = pd.concat([kept, quoted], ignore_index=True)

    # AWS p3: the only reservation quotes are ec2instances.info 2017-11-12, used where their on-demand rate equals
    # the snapshot's (as before); then every other reservation by the ratios of the quotes
    quotes17 = parse_instances_json(inputs_dir / "ec2instances_2017-11-12_gpu_subset.json", EC2INSTANCES_AS_OF,
                                    f"ec2instances.info:{EC2INSTANCES_AS_OF}")
    skipped.extend({"provider": "aws", **s.__dict__} for s in quotes17.skipped)
    p3 = derive_reserved(base[(base["provider"] == "aws") & base["instance_type"].astype(str).str.startswith("p3.")],
                         {"aws": {}}, quotes=quotes17.offers)
    base = pd.concat([base, p3], ignore_index=True)
    # validated BEFORE anything is derived from it: a rule never prices a term from an on-demand row that is
    # refused (a3-ultragpu-8g's catalog on-demand row, a shape GCP does not sell on demand)
    checked = validate_offers(base, "snapshot build")
    skipped.extend(skipped_dicts(checked))
    base = checked.offers
    ratios = quoted_ratios(base)
    derived = validate_offers(derive_by_ratio(base, ratios), "snapshot build (derived)")
    skipped.extend(skipped_dicts(derived))
    offers = pd.concat([base, derived.offers], ignore_index=True)
    checked = validate_offers(offers, "snapshot build")  # the derived rows against the terms of the quoted ones
    skipped.extend(skipped_dicts(checked))
    offers = checked.offers
    check_unique(offers, "snapshot")
    offers = offers.sort_values(list(OFFER_KEY), kind="mergesort").reset_index(drop=True)
    skipped = [{k: ("" if v is None else v) for k, v in s.items()} for s in skipped]
    skipped.sort(key=lambda s: (s["provider"], s["source"], s["line"], s["instance_type"], s["region"], s["reason"]))
    rules = {f"{k[0]}:{k[1]}:{k[2] or '*'}:{k[3]}/{k[4]}/{k[5] or '-'}": {"ratio": r.ratio, "quotes": r.quotes}
             for k, r in sorted(ratios.items())}
    rules["older_capacity_blocks"] = [{c: b[c] for c in ("region", "zone", "instance_type", "usd_per_hour", "as_of")}
                                      for b in older_blocks]
    return offers, skipped, rules


def _confirmations(quoted, inputs_dir: Path) -> dict[tuple[str, str, str, str], tuple[float, str, str]]:
    """(provider, region, instance_type, pricing) -> (price, as_of, source) of dated quotes that can confirm a
    catalog row: every quoted row, plus the on-demand rates printed beside the AWS reservations and capacity blocks
    (``on_demand_usd_per_hour``, ec2instances.info Linux rates of 2025-11-30, as the file's notes say)."""
    out = {}
    for r in quoted[["provider", "region", "instance_type", "pricing", "usd_per_hour", "as_of", "source"]]\
            .to_dict("records"):
        out[(str(r["provider"]), str(r["region"]), str(r["instance_type"]), str(r["pricing"]))] = (
            float(r["usd_per_hour"]), str(r["as_of"]), str(r["source"]).split(";", 1)[0])
    import csv

    with open(inputs_dir / "aws_commitments.csv", newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["pricing"] in ("reserved_1y", "reserved_3y", "capacity_block") and r["on_demand_usd_per_hour"]:
                if r["pricing"] == "capacity_block":  # "on_demand column is the ec2instances.info Linux rate of D"
                    m = re.search(r"ec2instances\.info Linux rate of (\d{4}-\d{2}-\d{2})", r["notes"])
                    if not m:
                        continue
                    day, src = m.group(1), "ec2instances.info on-demand rate beside the capacity block quotes"
                else:
                    day, src = r["as_of"], ("ec2instances.info on-demand rate beside its reserved quotes ("
                                            + r["source"].split(" (", 1)[0] + ")")
                out.setdefault(("aws", r["region"], r["instance_type"], "on_demand"),
                               (float(r["on_demand_usd_per_hour"]), day, src))
    return out


def _date_catalog_rows(df, confirm):
    """Catalog rows (``as_of`` = UNDATED) a dated quote of the same provider, region, type and pricing confirms
    (the same price within half a cent per hour) take the quote's date, and their source says so; the others stay
    UNDATED (the catalog commits' dates are unknown: PROVENANCE.md)."""
    if df.empty:
        return df
    as_of, source = df["as_of"].astype(object).tolist(), df["source"].astype(object).tolist()
    keys = df[["provider", "region", "instance_type", "pricing"]].astype(str).values.tolist()
    prices = df["usd_per_hour"].astype(float).tolist()
    for i, k in enumerate(keys):
        c = confirm.get(tuple(k))
        if c is not None and abs(c[0] - prices[i]) <= 0.005:
            as_of[i] = c[1]
            source[i] = f"{source[i]}; price confirmed by {c[2]} as of {c[1]}"
    df = df.copy()
    df["as_of"], df["source"] = as_of, source
    return df.astype({"as_of": "string", "source": "string"})


def _check_overlap(all_regions, two_regions) -> None:
    """Where both AWS files price the same (type, region) on demand, the prices must agree."""
    a = all_regions[all_regions["pricing"] == "on_demand"].set_index(["instance_type", "region"])["usd_per_hour"]
    b = two_regions[two_regions["pricing"] == "on_demand"].set_index(["instance_type", "region"])["usd_per_hour"]
    common = a.index.intersection(b.index)
    bad = [k for k in common if abs(float(a[k]) - float(b[k])) > 1e-9]
    if bad:
        raise PriceDataError(f"the two AWS files disagree on on-demand prices for {bad[:5]}")


def build(out_dir: Path = DATA_DIR, inputs_dir: Path = INPUTS_DIR) -> dict:
    """Write offers.csv, skipped.csv and snapshot.json into ``out_dir``; return the snapshot.json content."""
    import pandas as pd

    from providers._common import reason_code

    offers, skipped, rules = build_offers(inputs_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    offers_path, skipped_path = out_dir / "offers.csv", out_dir / "skipped.csv"
    _format_frame_csv(offers[list(OFFER_COLUMNS)], offers_path)
    sk = pd.DataFrame(skipped, columns=["provider", "source", "line", "instance_type", "region", "reason"])
    _format_frame_csv(sk, skipped_path)
    providers: dict[str, Any] = {}
    for prov in sorted(offers["provider"].unique()):
        grp = offers[offers["provider"] == prov]
        dates = sorted({str(x) for x in grp["as_of"]} - {UNDATED})
        reasons: dict[str, int] = {}
        for s in skipped:
            if s["provider"] == prov:
                code = reason_code(s["reason"])
                reasons[code] = reasons.get(code, 0) + 1
        providers[str(prov)] = {
            "as_of": dates[-1] if dates else None,
            "as_of_dates": dates,
            "rows": int(len(grp)),
            "rows_by_pricing": {str(k): int(v) for k, v in sorted(grp["pricing"].value_counts().items())},
            "estimated_rows": int(grp["source"].str.startswith("rule:").sum()),
            "quoted_rows": int((~grp["source"].str.startswith("rule:")).sum()),
            "undated_rows": int((grp["as_of"] == UNDATED).sum()),
            "skipped": dict(sorted(reasons.items())),
            "skipped_total": int(sum(reasons.values())),
            "sources": [
                {"file": f"inputs/{i.file}", "upstream": i.upstream, "commit": i.commit, "license": i.license,
                 "role": i.role} for i in INPUTS if i.provider == prov],
        }
    snapshot = {
        "schema_version": SCHEMA_VERSION,
        "built_at": BUILT_AT,
        "built_at_note": "fixed date of the input files' provenance (not the build time), so rebuilds are identical",
        "skypilot_as_of_note": "SkyPilot catalog rows carry as_of 'unknown' unless a dated published quote of the "
                               "same price confirms them (then its date): the catalog commits' dates could not be "
                               "looked up, and a copy date is not a price date. The content is from mid-2025 or "
                               "later (AWS p5.48xlarge at 55.04 USD/h in us-east-1 is after AWS's June 2025 P5 "
                               "price cut). See pricing_cache/data/inputs/PROVENANCE.md.",
        "offers_file": offers_path.name,
        "offers_sha256": _sha256(offers_path),
        "skipped_file": skipped_path.name,
        "skipped_sha256": _sha256(skipped_path),
        "rows": int(len(offers)),
        "estimated_rows": int(offers["source"].str.startswith("rule:").sum()),
        "providers": providers,
        "reserved_rules": rules,
    }
    (out_dir / "snapshot.json").write_text(json.dumps(snapshot, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return snapshot


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pricing_cache.build_snapshot", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="build into a temporary folder and compare with the "
                                                         "committed files (exit 1 when they differ)")
    ap.add_argument("--out", type=Path, default=DATA_DIR, help="output folder (default: pricing_cache/data)")
    args = ap.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp))
            diff = [n for n in ("offers.csv", "skipped.csv", "snapshot.json")
                    if (Path(tmp) / n).read_bytes() != (DATA_DIR / n).read_bytes()]
        if diff:
            print(f"snapshot out of date: {', '.join(diff)} differ from a fresh build", file=sys.stderr)
            return 1
        print("snapshot matches a fresh build")
        return 0
    snap = build(args.out)
    counts = {p: v["rows_by_pricing"] for p, v in snap["providers"].items()}
    print(f"wrote {snap['rows']} offers ({snap['estimated_rows']} estimated) to {args.out}: {counts}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
