"""Instance types, providers, regions and hour units named in billing-export text, and the GPU test
(``providers.usage``'s module doc gives the rules by format).

Pure functions of one value each (the readers apply them once per distinct value of a column).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any


#: Documented GPU instance families, by provider (regular expressions over the instance type).
GPU_PATTERNS: dict[str, tuple[str, ...]] = {
    # p2/p3/p3dn/p4d/p4de/p5/p5e/p5en/p6-b200/p6e-gb200; g2/g3/g3s/g4dn/g4ad/g5/g5g/g6/g6e/g6f/gr6/gr6f/g7e
    "aws": (r"^p\d+[a-z]*(-[a-z0-9]+)?\.[a-z0-9-]+$", r"^gr?\d+[a-z]*\.[a-z0-9-]+$"),
    # NC / ND / NV / NG / NCC sizes (armSkuName)
    "azure": (r"^Standard_N[CDVG][A-Za-z0-9_]*$",),
    # A2/A3/A4/A4X/G2/G4 machine types; accelerator names of GPU SKU rows
    "gcp": (r"^(a2|a3|a4|a4x|g2|g4)-[a-z0-9-]+$", r"^nvidia-[a-z0-9-]+$"),
    "lambda": (r"^gpu_\d+x_[a-z0-9_]+$",),
}
_GPU_RES = {p: tuple(re.compile(x) for x in pats) for p, pats in GPU_PATTERNS.items()}
_PROVIDERS = {"aws": "aws", "amazon web services": "aws", "amazon web services, inc.": "aws", "amazon": "aws",
              "microsoft": "azure", "azure": "azure", "microsoft azure": "azure", "google cloud": "gcp",
              "google": "gcp", "gcp": "gcp", "google cloud platform": "gcp", "lambda": "lambda",
              "lambda labs": "lambda", "oracle": "oracle", "oracle cloud infrastructure": "oracle"}

# ---------------------------------------------------------------------------------------------------------------
# GPU instances


_SNAPSHOT_TYPES: dict[str, frozenset[str]] | None = None


def _snapshot_types() -> dict[str, frozenset[str]]:
    global _SNAPSHOT_TYPES
    if _SNAPSHOT_TYPES is None:
        from pricing_cache.store import load_offers

        df, _info = load_offers(use_cache=False)
        _SNAPSHOT_TYPES = {str(p): frozenset(str(t) for t in g["instance_type"].unique())
                           for p, g in df.groupby("provider")}
    return _SNAPSHOT_TYPES


def gpu_pattern_match(provider: str, instance_type: str) -> bool:
    """True when ``instance_type`` matches a documented GPU family of ``provider`` (:data:`GPU_PATTERNS`);
    for an unknown provider, of any provider."""
    if not instance_type:
        return False
    pats = _GPU_RES.get(provider)
    groups = [pats] if pats else list(_GPU_RES.values())
    return any(r.match(instance_type) for g in groups for r in g)


def default_is_gpu_instance(provider: str, instance_type: str) -> bool:
    """The default GPU test: the type is in the shipped snapshot's offers of that provider, or matches
    :data:`GPU_PATTERNS`."""
    if not instance_type:
        return False
    if instance_type in _snapshot_types().get(provider, frozenset()):
        return True
    return gpu_pattern_match(provider, instance_type)


# ---------------------------------------------------------------------------------------------------------------
# Instance types from text

_AWS_TYPE = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)?\.(?:nano|micro|small|medium|large|\d*xlarge|metal(?:-\d+xl)?)"
_AWS_TYPE_RE = re.compile(rf"^{_AWS_TYPE}$")
# "per On Demand Linux p3.2xlarge Instance Hour", "per Linux/UNIX (Amazon VPC), m5.large reserved instance applied",
# "Linux p3.2xlarge Spot Instance-hour"; not "for 1750 Mbps per p3.2xlarge instance-hour" (EBS-optimized).
_AWS_DESC_RE = re.compile(rf"(?<![\w.-])({_AWS_TYPE})(?:\s+(?:Dedicated|Spot|Dedicated Host))*\s+"
                          r"(?:Instance Hour|Instance-hour|reserved instance applied|instance hour)", re.IGNORECASE)
_AWS_MBPS_RE = re.compile(r"\bMbps per\b", re.IGNORECASE)
AWS_USAGE_RE = re.compile(r"(BoxUsage|SpotUsage|DedicatedUsage|HostUsage|HostBoxUsage|DedicatedRes)")
_AZ_DESC_RE = re.compile(r"Virtual Machines\s+(?P<series>.+?)\s+Series(?:\s+\w+)?\s+-\s+(?P<meter>[^-]+?)"
                         r"(?:\s+-\s+.*)?$", re.IGNORECASE)
AZ_SIZE_RE = re.compile(r"\bStandard_[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*")
_AZ_METER_SUFFIX_RE = re.compile(r"\s+(Spot|Low Priority|Windows|Linux|Dev/Test)$", re.IGNORECASE)
AZ_GPU_SERIES_RE = re.compile(r"^N[CDVG]", re.IGNORECASE)
_GCP_GPU_SKU_RE = re.compile(r"^(?:Commitment v\d+: )?(?P<gpu>(?:Nvidia|NVIDIA)\s.+?)\s+GPU\b", re.IGNORECASE)
_GCP_GPU_FAMILY_RE = re.compile(r"^(?:Spot Preemptible |Preemptible )?(A2|A3|A4X?|G2|G4)\b.*\b(Core|Ram|Instance)\b",
                                re.IGNORECASE)
GPU_WORD_RE = re.compile(r"\b(?:GPU|NVIDIA|Tesla)\b", re.IGNORECASE)
_HOUR_UNIT_RE = re.compile(r"^\s*(?:(?P<n>\d+(?:\.\d+)?)\s*(?P<k>[KkMm])?\s+)?(?P<u>hours?|hrs?|hr|h)\s*$",
                           re.IGNORECASE)
_AZ_REGION_WORDS = {"us", "europe", "asia", "australia", "brazil", "canada", "india", "japan", "korea", "uk",
                    "france", "germany", "norway", "switzerland", "uae", "southafrica", "sweden", "qatar", "italy",
                    "poland", "israel", "mexico", "spain", "newzealand", "chile", "indonesia", "malaysia"}
_JSON_TYPE_KEYS = ("instancetype", "instance_type", "x_instancetype", "vmsize", "x_vmsize", "servicetype",
                   "machinetype", "machine_type", "x_machinetype", "armskuname", "x_armskuname")


def azure_size_from_meter(meter: str | None) -> str:
    """'NC24ads A100 v4' (or '... Spot' / '... Low Priority') -> 'Standard_NC24ads_A100_v4'; 'D11 v2/DS11 v2' ->
    'Standard_D11_v2' (the first alternative); '' when the text is not a size."""
    if not meter:
        return ""
    s = str(meter).strip()
    m = AZ_SIZE_RE.search(s)
    if m:
        return m.group(0)
    s = s.split("/")[0].strip()
    while True:
        t = _AZ_METER_SUFFIX_RE.sub("", s)
        if t == s:
            break
        s = t
    if not re.match(r"^[A-Z]{1,4}\d+[A-Za-z0-9-]*(\s+[A-Za-z0-9]+)*$", s):
        return ""
    return "Standard_" + "_".join(s.split())


def aws_type_from_usage_type(usage_type: str | None) -> str:
    """'USE1-BoxUsage:p4d.24xlarge' -> 'p4d.24xlarge'; '' when there is no type after ':'."""
    if not usage_type or ":" not in usage_type:
        return ""
    t = usage_type.rsplit(":", 1)[1].strip()
    return t if _AWS_TYPE_RE.match(t) else ""


def json_instance_type(text: str | None) -> str:
    """The instance type named in a JSON object (FOCUS ``SkuPriceDetails`` / ``x_SkuDetails``, CUR ``product``,
    Azure ``AdditionalInfo``): the first non-empty text value of a key in ``_JSON_TYPE_KEYS`` (InstanceType, VMSize,
    ServiceType, MachineType, ArmSkuName, ..., compared case-insensitively); '' when the text is not such an object."""
    if not text or "{" not in str(text):
        return ""
    try:
        obj = json.loads(text)
    except (ValueError, TypeError):
        return ""
    if not isinstance(obj, dict):
        return ""
    low = {str(k).lower(): v for k, v in obj.items()}
    for k in _JSON_TYPE_KEYS:
        v = low.get(k)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return ""


def focus_desc_type(desc: str, provider: str) -> tuple[str, bool]:
    """(instance type, GPU hint) from a FOCUS ChargeDescription."""
    if not desc:
        return "", False
    if provider in ("aws", ""):
        m = _AWS_DESC_RE.search(desc)
        if m and not _AWS_MBPS_RE.search(desc):
            return m.group(1).lower(), False
    if provider in ("azure", ""):
        m = _AZ_DESC_RE.search(desc)
        if m:
            series = m.group("series")
            t = azure_size_from_meter(m.group("meter"))
            return t, bool(AZ_GPU_SERIES_RE.match(series)) or bool(GPU_WORD_RE.search(series))
    if provider in ("gcp", ""):
        m = _GCP_GPU_SKU_RE.search(desc)
        if m:
            return "-".join(m.group("gpu").lower().split()), True
        if _GCP_GPU_FAMILY_RE.search(desc):
            return "", True
    return "", bool(GPU_WORD_RE.search(desc))


def azure_region(location: str | None) -> str:
    """'EastUS' / 'eastus' / 'East US' / 'US East 2' -> 'eastus' / 'eastus2'."""
    if not location:
        return ""
    words = str(location).strip().lower().split()
    if len(words) >= 2 and words[0] in _AZ_REGION_WORDS:
        words = words[1:2] + words[:1] + words[2:]
    return "".join(words)


def provider_name(name: Any) -> str:
    """A provider as gpuopt names it: 'Amazon Web Services' -> 'aws', 'Microsoft' -> 'azure', 'Google Cloud'
    -> 'gcp'; another name lower-cased with spaces as '-'; '' for null or NaN."""
    if name is None or (isinstance(name, float) and math.isnan(name)):
        return ""
    s = str(name).strip()
    return _PROVIDERS.get(s.lower(), s.lower().replace(" ", "-"))


def hour_block(unit: Any) -> float:
    """Hours per unit of an hour-like unit ('Hours' 1, '10 Hours' 10, '10K Hours' 10000); NaN otherwise."""
    if unit is None or (isinstance(unit, float) and math.isnan(unit)):
        return math.nan
    m = _HOUR_UNIT_RE.match(str(unit))
    if not m:
        return math.nan
    n = float(m.group("n")) if m.group("n") else 1.0
    k = (m.group("k") or "").lower()
    v = n * (1000.0 if k == "k" else 1e6 if k == "m" else 1.0)
    return v if 0 < v <= 1e9 else math.nan  # '0 Hours' or '1e400 Hours' is not a unit of hours
