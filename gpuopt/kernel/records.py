"""The records every part of gpuopt shares: the normalized offer row and the sizing of a workload.

The offer columns are pinned here, in one list (as gpuhunt and SkyPilot pin theirs); the snapshot file,
the ``--catalog`` offers CSV and every importer produce exactly these columns.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Version of the on-disk offer schema; bump it when OFFER_COLUMNS change.
#: 2: ``fabric`` and ``zone_kind`` added after ``interconnect``.
#: 3: ``offering_class`` added after ``payment``; pricing ``capacity_block`` and ``flex_start``.
#: 4: ``tier`` added after ``zone_kind``.
SCHEMA_VERSION = 4

#: Schema versions the price store still reads: a version-1 file (no ``fabric``/``zone_kind``) gets both
#: columns filled from the documented facts (providers/facts.py) when it is loaded; a file of version 1, 2 or 3
#: gets ``tier`` filled from the same facts; no readable file is refused.
READABLE_SCHEMA_VERSIONS: tuple[int, ...] = (1, 2, 3, 4)

#: The columns version 2 added; what a version-1 file lacks.
FILLED_FROM_FACTS: tuple[str, ...] = ("fabric", "zone_kind")

#: The column version 3 added; a file of version 1 or 2 gets it filled by :func:`default_offering_class`.
ADDED_IN_V3: tuple[str, ...] = ("offering_class",)

#: The column version 4 added; a file of version 1, 2 or 3 gets it filled from the documented facts
#: (``providers.facts.tier_of``) when it is loaded.
ADDED_IN_V4: tuple[str, ...] = ("tier",)

#: Every column an importer leaves to the documented facts (providers._common.fill_facts fills them, in one place).
OFFER_FACT_COLUMNS: tuple[str, ...] = FILLED_FROM_FACTS + ADDED_IN_V4

#: Hours in the billing month used everywhere (AWS, Azure and GCP all bill 730 h/month = 8760 / 12).
HOURS_PER_MONTH = 730.0

#: Term lengths in hours of a 1-year and a 3-year commitment (365 d x 24 h, x 3).
TERM_HOURS = {"reserved_1y": 8760.0, "reserved_3y": 26280.0}

PROVIDERS = ("aws", "azure", "gcp", "lambda")
#: Pricing options of an offer row. ``reserved_1y``/``reserved_3y``: a reservation or committed-use discount for a
#: term (AWS reserved instance, Azure reservation, GCP resource-based CUD). ``capacity_block``: AWS EC2 Capacity
#: Blocks for ML, capacity for a fixed window (a start date and 1-182 days) paid whole when bought; ``usd_per_hour``
#: is the rate per instance-hour, ``upfront_usd`` 0 on the row because it depends on the block's length (rate x
#: hours), ``term_hours`` 0. ``flex_start``: GCP Dynamic Workload Scheduler Flex-start, up to 7 days, queued
#: (Google Cloud docs, "About Flex-start VMs"): whole-instance rows from the live GCP adapter when the GPU, core and
#: RAM Flex-start SKUs are all listed; the shipped data has per-GPU component prices only, so no shipped row.
#: ``savings_plan_1y``/``savings_plan_3y``: the rate one instance-hour of the type is charged against a savings
#: plan (AWS Compute or EC2 Instance Savings Plans, the Azure savings plan for compute): a commitment of a spend
#: per hour for the term, not of an instance; ``offering_class`` says which plan (SAVINGS_PLAN_CLASSES), ``payment``
#: how the commitment is paid; ``upfront_usd`` 0 and ``recurring_usd_per_hour`` = ``usd_per_hour`` on the row (the
#: payment splits the commitment, whose size the plan chooses), ``term_hours`` the plan's term.
PRICING_MODELS = ("on_demand", "spot", "reserved_1y", "reserved_3y", "capacity_block", "flex_start",
                  "savings_plan_1y", "savings_plan_3y")
#: The pricing options the planning model buys (``recommend --pricing``, plan-file ``pricing``): every one.
#: On-demand, spot and Flex-start by the hour (Flex-start for training jobs only); reservations one instance-term at
#: a time; capacity blocks sized by the plan (a training job's unit-days, a short serving period's instances) and
#: paid whole; savings plans as a spend per hour over their scope (optimizer/planning/milp.py).
PLANNED_PRICING: tuple[str, ...] = PRICING_MODELS
#: Savings-plan pricing options and their terms in hours.
SAVINGS_PLAN_TERM_HOURS: dict[str, float] = {"savings_plan_1y": 8760.0, "savings_plan_3y": 26280.0}
#: ``offering_class`` of a savings-plan row: AWS ``compute`` (any family, region, OS) or ``ec2_instance`` (one
#: family in one region; AWS "Savings Plans User Guide", plan types); "" for Azure's one savings plan for compute.
SAVINGS_PLAN_CLASSES: tuple[str, ...] = ("compute", "ec2_instance", "")
#: Pricing options a term commitment is bought under (TERM_HOURS), and the hourly ones.
RESERVED_PRICING: tuple[str, ...] = ("reserved_1y", "reserved_3y")
#: Pricing options bought for a fixed window and paid whole: capacity blocks (AWS, 1-182 days) and Flex-start
#: (GCP, up to 7 days). Rows of these are listed and validated; the planner uses them only where asked.
WINDOW_PRICING: tuple[str, ...] = ("capacity_block", "flex_start")
#: Longest window of each, in days (AWS EC2 User Guide, "Capacity Blocks for ML": 1-14 days in 1-day steps and
#: up to 182 days in 7-day steps; Google Cloud docs, "Flex-start VMs": up to 7 days).
WINDOW_MAX_DAYS: dict[str, int] = {"capacity_block": 182, "flex_start": 7}
PAYMENT_OPTIONS = ("no_upfront", "partial_upfront", "all_upfront")
#: Offering classes of a reservation (the ``offering_class`` column): AWS reserved instances are ``standard`` or
#: ``convertible`` (exchangeable for another family, dearer; AWS EC2 User Guide, "Types of Reserved Instances
#: (offering classes)"). "" for every other row: on-demand, spot, windows, and the one kind of commitment Azure
#: and GCP sell.
OFFERING_CLASSES: tuple[str, ...] = ("", "standard", "convertible", "compute", "ec2_instance")
INTERCONNECTS = ("nvlink", "pcie")
#: Inter-node fabrics of an instance (the ``fabric`` column). Every one but ``ethernet`` is a cluster fabric that
#: allows multi-node training; "" (not listed) means unknown. Values and sources: providers/facts.py.
FABRICS: tuple[str, ...] = ("efa", "infiniband", "rdma", "tcpxo", "tcpx", "ethernet")
#: Kinds of zone (the ``zone_kind`` column): "" a normal region / availability zone, or an AWS Local Zone or
#: Wavelength Zone (which plans use only when asked).
ZONE_KINDS: tuple[str, ...] = ("", "local_zone", "wavelength")
#: Tiers of an offer (the ``tier`` column): who runs the machine it sells, in the provider's own words.
#: ``hyperscaler`` AWS, Azure, GCP; ``neocloud`` a GPU cloud selling capacity in data centres it operates or
#: contracts (Lambda, CoreWeave, Nebius, RunPod Secure Cloud); ``marketplace`` third-party hosts without a
#: data-centre SLA (RunPod Community Cloud, Vast.ai). "" (not listed) means unknown: a provider gpuopt has no
#: documented facts for. Unknown is NOT marketplace (:func:`is_marketplace`); it is shown as "unknown".
#: Values and sources: providers/facts.py (``TIER_FACTS``).
TIERS: tuple[str, ...] = ("hyperscaler", "neocloud", "marketplace")


def _tier_text(tier) -> str:
    """The tier as lower-case text; "" for None, NaN and pandas' NA."""
    try:
        missing = tier is None or bool(tier != tier)
    except TypeError:  # pandas.NA: its comparisons are NA, whose truth value is refused
        missing = True
    return "" if missing else str(tier).strip().lower()


def is_marketplace(tier) -> bool:
    """True for an offer of a marketplace tier (third-party hosts without a data-centre SLA). An unknown tier ("",
    None, NaN) is not: gpuopt does not call a provider a marketplace unless a documented fact says so."""
    return _tier_text(tier) == "marketplace"


def tier_label(tier) -> str:
    """The tier as shown to a person: one of TIERS, or ``unknown`` for "" / None / NaN."""
    t = _tier_text(tier)
    return t if t in TIERS else "unknown"

#: The normalized offer: one row per instance type x region (x zone for spot) x pricing option.
#: Units are in the names. ``gpu_count`` is a float (fractional GPUs exist: AWS g6f, Azure NVads A10 v5);
#: ``gpu_memory_gib`` is the memory of ONE whole GPU, never the instance total.
#: ``usd_per_hour`` is the effective (amortized) hourly rate = recurring + upfront / term_hours.
#: ``source`` starting with ``rule:`` marks an estimated (derived) price.
#: ``fabric`` (FABRICS, or "" unknown) and ``zone_kind`` (ZONE_KINDS) come from documented facts
#: (providers/facts.py), filled by every importer in one place (providers._common.offers_frame); so does
#: ``tier`` (TIERS, or "" unknown).
OFFER_COLUMNS: tuple[str, ...] = (
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu_model",
    "gpu_count",
    "gpu_memory_gib",
    "vcpus",
    "memory_gib",
    "interconnect",
    "fabric",
    "zone_kind",
    "tier",
    "pricing",
    "payment",
    "offering_class",
    "upfront_usd",
    "recurring_usd_per_hour",
    "usd_per_hour",
    "term_hours",
    "currency",
    "source",
    "as_of",
)

OFFER_DTYPES: dict[str, str] = {
    "provider": "string",
    "region": "string",
    "zone": "string",
    "instance_type": "string",
    "gpu_model": "string",
    "gpu_count": "float64",
    "gpu_memory_gib": "float64",
    "vcpus": "float64",
    "memory_gib": "float64",
    "interconnect": "string",
    "fabric": "string",
    "zone_kind": "string",
    "tier": "string",
    "pricing": "string",
    "payment": "string",
    "offering_class": "string",
    "upfront_usd": "float64",
    "recurring_usd_per_hour": "float64",
    "usd_per_hour": "float64",
    "term_hours": "float64",
    "currency": "string",
    "source": "string",
    "as_of": "string",
}


def as_categories(frame: "pd.DataFrame") -> "pd.DataFrame":
    """The offers with their text columns (OFFER_DTYPES "string") as pandas categoricals, for planning.

    Why: every text column of an offer table has few distinct values (providers, regions, instance types, pricing
    models), and selecting rows of a pyarrow-backed string column copies the strings: on 500,000 offers one
    boolean selection of the whole table took 0.72 s with string columns, 0.025 s with categoricals (pandas 3.0,
    this machine, ``benchmarks/bench_recommend.py``). Values and comparisons are unchanged; a categorical's
    ``value_counts`` also lists absent categories (count 0), so callers keep counts > 0. Columns already
    categorical are kept; a frame without the offer columns is returned as is.
    """
    cols = {c: "category" for c, t in OFFER_DTYPES.items()
            if t == "string" and c in frame.columns and str(frame[c].dtype) != "category"}
    return frame.astype(cols) if cols else frame


def default_offering_class(provider, pricing) -> str:
    """The ``offering_class`` of a row that does not give one (a file of schema 1 or 2, an importer's row):
    ``standard`` for an AWS reservation (the only class gpuopt read before version 3), "" otherwise."""
    return "standard" if str(provider) == "aws" and str(pricing) in RESERVED_PRICING else ""


def short_source(source) -> str:
    """The source up to its first space: 'rule:aws-1y-all_upfront' or 'skypilot-catalog:catalogs/v8/aws/vms.csv@00148f2a'."""
    text = str(source or "")
    return text.split(" ", 1)[0]


def is_estimated(source: str) -> bool:
    """True when a price row was derived by a documented rule rather than quoted (``source`` starts with ``rule:``)."""
    return str(source).startswith("rule:")


@dataclass(frozen=True)
class SkippedRow:
    """A price row an importer did not turn into an offer, with why (reported, never silently dropped).

    Attributes:
        source: the file or API the row came from.
        line: 1-based line number in that file (header = line 1), or 0 when not a line-oriented source.
        instance_type, region: what the row was about, when known.
        reason: one of ``unknown_price`` (empty), ``zero_price``, ``placeholder_spot``, ``unknown_gpu``,
            ``no_gpu``, ``duplicate``, ``not_a_gpu_row`` ... followed by detail.
    """

    source: str
    line: int
    instance_type: str
    region: str
    reason: str


#: Canonical GPU model names (the ``gpu_model`` column) and the row of ``optimizer/data/gpu_specs.csv``
#: (column ``name``) that sizing uses for each. ``None``: the GPU is priced and listed, but the spec table has
#: no datasheet row for it, so it cannot be sized or planned (it is reported as such, never guessed).
#: Where a canonical name covers SXM and PCIe boards, the row named is the one the clouds' instances use
#: most (AWS p3/p4/p5, GCP a2/a3 and Azure ND are SXM boards); see docs/architecture.md.
CANONICAL_GPUS: dict[str, str | None] = {
    "V100-16GB": "V100 SXM2 16GB",
    "V100-32GB": "V100 SXM2 32GB",
    "T4": "T4",
    "A10": "A10",
    "A10G": "A10G",
    "L4": "L4",
    "L40S": "L40S",
    "A100-40GB": "A100 40GB SXM4",
    "A100-80GB": "A100 80GB SXM4",
    "H100-80GB": "H100 SXM5 80GB",
    "H100-NVL-94GB": "H100 NVL 94GB",
    "H200-141GB": "H200 SXM 141GB",
    "B200": "B200 (HGX/DGX, 1000 W)",
    "RTX-4090": "GeForce RTX 4090",
    "RTX-3090": "GeForce RTX 3090",
    "MI300X": "Instinct MI300X",
    "Gaudi2": "Gaudi 2",
    # the GPUs of 2026 (issue 27 point 4; sources: optimizer/data/gpu_specs_2026_SOURCES.md)
    "GH200": "GH200 96GB HBM3 (GPU side of Grace Hopper superchip)",
    "GH200-144GB": "GH200 144GB HBM3e (GPU side of Grace Hopper superchip)",
    "GB200": "GB200 (per Blackwell GPU, GB200 NVL72)",
    "B300": "B300 (HGX/DGX B300, Blackwell Ultra)",
    "GB300": "GB300 (per Blackwell Ultra GPU, GB300 NVL72)",
    "H20": "H20 (China-market Hopper)",
    "MI325X": "Instinct MI325X",
    "MI355X": "Instinct MI355X",
    # priced by some clouds, no row in the spec table:
    "K80": None,
    "M60": None,
    "P100": None,
    "P4": None,
    "A6000": None,
}
