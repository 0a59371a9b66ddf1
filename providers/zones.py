"""Which regions have availability zones: what ``--spread zones`` and the default two-zone serving layout rest on
(issue 26: offers in a region without zones, or without region data, cannot meet a zone spread).

Sources:
- AWS: "Each Region has multiple, isolated locations known as Availability Zones" and "Each AWS Region consists of a
  minimum of three isolated and physically separate Availability Zones" (Amazon EC2 User Guide, "Regions and
  Zones"; AWS "Global Infrastructure" page). Local Zones and Wavelength Zones are zones of their own
  (``zone_kind``), planned only when asked.
- Google Cloud: "Each region has three or more zones" (Compute Engine documentation, "Regions and zones").
- Azure: only some regions have availability zones; :data:`AZURE_ZONED_REGIONS` is the list of "Azure regions with
  availability zone support" (learn.microsoft.com/azure/reliability/availability-zones-service-support, read
  2026-12-05, plus Austria East and Belgium Central, listed with 3 zones in the "Azure regions list").
- Lambda, CoreWeave, Nebius, RunPod and other neoclouds publish regions (or none: RunPod's ``global``) but no
  availability zones a customer places instances in: their offers count as one location each.
"""

from __future__ import annotations

from typing import Any, Mapping

#: Providers every one of whose regions has availability zones (sources in the module docstring).
ZONED_PROVIDERS: tuple[str, ...] = ("aws", "gcp")

#: Azure regions (programmatic names) with availability zone support (module docstring).
AZURE_ZONED_REGIONS: frozenset[str] = frozenset({
    "brazilsouth", "canadacentral", "centralus", "eastus", "eastus2", "southcentralus", "usgovvirginia",
    "westus2", "westus3", "mexicocentral", "francecentral", "italynorth", "germanywestcentral", "norwayeast",
    "northeurope", "uksouth", "westeurope", "swedencentral", "switzerlandnorth", "polandcentral", "qatarcentral",
    "uaenorth", "israelcentral", "southafricanorth", "australiaeast", "centralindia", "japaneast", "japanwest",
    "koreacentral", "southeastasia", "eastasia", "newzealandnorth", "austriaeast", "belgiumcentral",
})


#: Availability zones a plan may count on in a region that has them: the documented minimum ("a minimum of three"
#: for AWS, "three or more" for Google Cloud; Azure's zoned regions have three). A zone spread asks for the replicas
#: in ``min(min_replicas, ZONES_PER_REGION)`` distinct zones (a breaker's 8 replicas "in 8 zones" of us-central1,
#: which has 4), and a region's regional offers count at most this many.
ZONES_PER_REGION = 3


def spread_zones_needed(min_replicas: int) -> int:
    """Distinct zones a ``--spread zones`` plan puts a workload's ``min_replicas`` replicas in (at least 2 when it
    has 2 replicas or more; at most :data:`ZONES_PER_REGION`)."""
    return max(0, min(int(min_replicas), ZONES_PER_REGION))


def region_has_zones(provider: str, region: str) -> bool:
    """True when instances of ``provider`` in ``region`` can be launched in two or more availability zones (the
    module docstring's sources); False for regions without zones and for offers without a region."""
    provider, region = str(provider or "").lower(), str(region or "").lower()
    if not region or region in ("global", "any"):
        return False
    if provider in ZONED_PROVIDERS:
        return True
    if provider == "azure":
        return region in AZURE_ZONED_REGIONS
    return False


def zone_of(offer: Mapping[str, Any]) -> tuple[str, ...]:
    """The failure domain an offer's instances sit in, for a zone spread: ``("zone", z)`` for an offer priced in
    one zone (spot rows), ``()`` for a regional offer in a region with zones (its instances are put in distinct
    zones when launched: each counts), and ``("location", provider, region)`` for one without zones (all its
    instances are one location)."""
    z = str(offer.get("zone") or "")
    if z:
        return ("zone", z)
    if region_has_zones(str(offer.get("provider") or ""), str(offer.get("region") or "")):
        return ()
    return ("location", str(offer.get("provider") or ""), str(offer.get("region") or ""))
