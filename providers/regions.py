"""Named groups of cloud regions, for data residency (``--region-group``).

Groups: ``us`` (United States), ``eu`` (European Union / EEA), ``europe`` (Europe including the UK and Switzerland),
``na`` (North America: the US and Canada), ``apac`` (Asia-Pacific: Asia, Australia, New Zealand), ``latam``
(Latin America), ``mea`` (Middle East and Africa). A region may belong to several groups (``us-east-1`` is in
``us`` and ``na``; ``eu-west-1`` Ireland in ``eu`` and ``europe``; ``eu-west-2`` London and ``europe-west2`` only in
``europe``).

The rules read the providers' own region codes (AWS, GCP and Lambda codes start with a geographic prefix:
``us-``, ``ca-``, ``eu-``/``europe-``, ``ap-``/``asia-``/``australia-``, ``sa-``/``southamerica-``, ``me-``,
``af-``/``africa-``, ``il-``, ``mx-``, ``northamerica-``); Azure region names (``eastus``, ``westeurope``,
``uksouth`` ...) are listed by geography as Azure's documentation groups them ("Azure geographies").
Regions in Europe outside the EU/EEA (London, Zurich) are in ``europe`` only (:data:`_EUROPE_NOT_EU`).
CoreWeave's ``north-america`` (the price region of its page) is in ``na``; RunPod's and Nebius's ``global`` (one
price for every region they run) is in no group, so a residency rule leaves them out.
"""

from __future__ import annotations

REGION_GROUPS = ("us", "eu", "europe", "na", "apac", "latam", "mea")

#: Regions in Europe but outside the EU/EEA (the UK and Switzerland), by provider.
_EUROPE_NOT_EU = {
    "aws": {"eu-west-2", "eu-central-2"},                   # London, Zurich
    "gcp": {"europe-west2", "europe-west6"},                # London, Zurich
    "azure": {"uksouth", "ukwest", "switzerlandnorth", "switzerlandwest"},
    "lambda": {"europe-west-2"},
}

#: Azure regions by geography (learn.microsoft.com "Azure geographies"; public regions only).
_AZURE = {
    "us": {"eastus", "eastus2", "centralus", "northcentralus", "southcentralus", "westcentralus", "westus", "westus2",
           "westus3"},
    "canada": {"canadacentral", "canadaeast"},
    "europe": {"northeurope", "westeurope", "francecentral", "francesouth", "germanywestcentral", "germanynorth",
               "swedencentral", "swedensouth", "norwayeast", "norwaywest", "polandcentral", "italynorth",
               "spaincentral", "uksouth", "ukwest", "switzerlandnorth", "switzerlandwest"},
    "apac": {"eastasia", "southeastasia", "japaneast", "japanwest", "koreacentral", "koreasouth", "australiaeast",
             "australiasoutheast", "australiacentral", "australiacentral2", "centralindia", "southindia", "westindia",
             "jioindiawest", "jioindiacentral", "newzealandnorth", "indonesiacentral", "malaysiawest"},
    "latam": {"brazilsouth", "brazilsoutheast", "mexicocentral", "chilecentral"},
    "mea": {"uaenorth", "uaecentral", "qatarcentral", "israelcentral", "southafricanorth", "southafricawest"},
}


def region_groups_of(provider: str, region: str) -> set[str]:
    """The groups of :data:`REGION_GROUPS` a region belongs to (empty when the code is not recognised)."""
    p, r = str(provider).lower(), str(region).lower()
    out: set[str] = set()
    if p == "azure":
        if r in _AZURE["us"]:
            out |= {"us", "na"}
        elif r in _AZURE["canada"]:
            out.add("na")
        elif r in _AZURE["europe"]:
            out.add("europe")
            if r not in _EUROPE_NOT_EU["azure"]:
                out.add("eu")
        elif r in _AZURE["apac"]:
            out.add("apac")
        elif r in _AZURE["latam"]:
            out.add("latam")
        elif r in _AZURE["mea"]:
            out.add("mea")
        return out
    if r.startswith("us-"):
        out |= {"us", "na"}
    elif r.startswith(("ca-", "northamerica-")) or r == "north-america":  # CoreWeave's price region
        out.add("na")
    elif r.startswith(("mx-",)):
        out |= {"na", "latam"}
    elif r.startswith(("eu-", "europe-")):
        out.add("europe")
        if r not in _EUROPE_NOT_EU.get(p, set()):
            out.add("eu")
    elif r.startswith(("ap-", "asia-", "australia-")):
        out.add("apac")
    elif r.startswith(("sa-", "southamerica-")):
        out.add("latam")
    elif r.startswith(("me-", "af-", "africa-", "il-")):
        out.add("mea")
    return out
