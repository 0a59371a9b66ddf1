"""Documented facts about instance types and zones that no price list carries: the inter-node fabric of an
instance type, its network bandwidth for collectives, and what kind of zone an offer is in.

Pure, no I/O, no third-party imports: every importer and adapter fills the offer columns ``fabric`` and
``zone_kind`` from here (through ``providers._common.offers_frame``), and the price store fills them when it reads
a file written before those columns existed.

Fabric (``FABRICS``):

* ``efa`` — AWS Elastic Fabric Adapter. NCCL runs over it through the aws-ofi-nccl plugin. p4d/p4de/p5/p5e/p5en/
  p6-b200 add GPUDirect RDMA (the NIC reads GPU memory directly). g4dn/g5/g6/g6e/g7 sizes that support EFA
  (g5.48xlarge, g6.48xlarge, g6e.48xlarge, ...) have EFA but no GPUDirect RDMA: NCCL stages the data through
  host memory. *Decision*: they are ``efa`` all the same — EFA is their inter-node fabric and it does carry
  NCCL collectives across instances — and their bandwidth is their EFA line rate (100 Gbps for g5/g6.48xlarge,
  400 Gbps for g6e.48xlarge), which is what limits them; the missing GPUDirect RDMA costs host copies, not line
  rate, and the sizing's communication efficiency covers it.
* ``infiniband`` — Azure ND (and NC "r") sizes with InfiniBand, GPUDirect RDMA on the ND sizes.
* ``rdma`` — GCP A3 Ultra and A4: GPUDirect RDMA over RoCE (ConnectX-7 NICs, "MRDMA").
* ``tcpxo`` / ``tcpx`` — GCP A3 Mega (GPUDirect-TCPXO) and A3 High / A3 Edge 8-GPU shapes (GPUDirect-TCPX).
* ``ethernet`` — plain TCP networking, no cluster fabric; multi-node training is not planned on it.
* ``""`` — unknown: an instance type of a provider gpuopt has no documented facts for (a user's own cloud).

Every cluster fabric (all but ``ethernet``) allows multi-node training; see ``is_cluster_fabric``.

Bandwidth (``fabric_gbps_per_node``) is in GB/s — BYTES per second — per instance (node), one direction: the
documented line rate of the NICs that carry GPU-to-GPU traffic (Gbit/s) / 8. For GCP only the GPU NICs count
(not the general-purpose gVNIC). Instance types not in the table get ``DEFAULT_GBPS_BY_FABRIC`` (documented
below), e.g. a user's offers CSV that names a fabric.

Zone kind (``zone_kind_of``): ``""`` for a normal region or availability zone, ``local_zone`` for an AWS Local
Zone, ``wavelength`` for an AWS Wavelength Zone. See the function for the rule.

Tier (``tier_of``, ``TIERS``): who runs the machine an offer sells, from the provider's own words (``TIER_FACTS``,
each with its source). ``hyperscaler`` AWS, Azure, GCP; ``neocloud`` Lambda, CoreWeave, Nebius and RunPod's Secure
Cloud; ``marketplace`` RunPod's Community Cloud and Vast.ai. RunPod sells both under one name, so its tier is read
from the product in the instance type (``...-community-cloud`` / ``...-secure-cloud``, the slugs of
providers.published); a RunPod instance type naming neither, and any provider not in the table, is ``""``
(unknown) — and unknown is not marketplace (``gpuopt.kernel.records.is_marketplace``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# FABRICS (inter-node fabrics; all but "ethernet" allow multi-node training; "" means unknown) and ZONE_KINDS
# ("" normal, "local_zone", "wavelength") are defined with the offer columns in gpuopt.kernel.records (the ground floor
# every package imports) and re-exported here.
from gpuopt.kernel.records import FABRICS, TIERS, ZONE_KINDS

__all__ = ["FABRICS", "ZONE_KINDS", "TIERS", "CLUSTER_FABRICS", "DEFAULT_GBPS_BY_FABRIC", "FabricFact", "fabric_fact",
           "fabric_of", "fabric_gbps_per_node", "is_cluster_fabric", "zone_kind_of", "TierFact", "TIER_FACTS",
           "tier_fact", "tier_of"]

#: The fabrics over which multi-node training is planned.
CLUSTER_FABRICS: frozenset[str] = frozenset(f for f in FABRICS if f != "ethernet")

# --- sources ------------------------------------------------------------------------------------------------
#: AWS EC2 DescribeInstanceTypes output (NetworkInfo.EfaSupported, NetworkInfo.NetworkPerformance), as served by
#: moto 5.2.5 from AWS's own instance-type data (project shared data: aws/moto-5.2.5_instance_types_with_GpuInfo.json,
#: aws/DescribeInstanceTypes_t3_micro_and_p3_16xl.json); the same figures are on the EC2 instance-type pages.
SRC_AWS_API = "AWS EC2 DescribeInstanceTypes NetworkInfo (https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html)"
SRC_AWS_EFA = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html"
SRC_AWS_P5_EFA = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html"
SRC_AZ_NDV2 = "https://learn.microsoft.com/azure/virtual-machines/ndv2-series"
SRC_AZ_NDA100 = "https://learn.microsoft.com/azure/virtual-machines/nda100-v4-series"
SRC_AZ_NDMA100 = "https://learn.microsoft.com/azure/virtual-machines/ndm-a100-v4-series"
SRC_AZ_NDH100 = "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndh100v5-series"
SRC_AZ_NDH200 = "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-h200-v5-series"
SRC_AZ_NDMI300X = "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndmi300xv5-series"
SRC_AZ_NC = "https://learn.microsoft.com/azure/virtual-machines/nc-series"
SRC_AZ_NCV3 = "https://learn.microsoft.com/azure/virtual-machines/ncv3-series"
SRC_GCP_NET = "https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth"
SRC_LAMBDA = "https://docs.lambda.ai/public-cloud/1-click-clusters/"


@dataclass(frozen=True)
class FabricFact:
    """One documented fact: the fabric of an instance type and, when documented, its inter-node bandwidth.

    Attributes:
        fabric: one of FABRICS.
        gbps: line rate of the NICs carrying GPU-to-GPU traffic between instances, Gbit/s (bits); None when the
            source does not state it (then the fabric's default applies).
        source: where the fact is documented (URL or API field).
    """

    fabric: str
    gbps: float | None
    source: str


def _aws(fabric: str, gbps: float | None, src: str = SRC_AWS_API) -> FabricFact:
    return FabricFact(fabric, gbps, src)


#: AWS GPU instance types with their fabric and bandwidth (DescribeInstanceTypes: EfaSupported, NetworkPerformance).
#: GPUDirect RDMA: p4d/p4de/p5/p5e/p5en/p6 (efa.html); the g* sizes with EFA have no GPUDirect RDMA (see module doc).
_AWS: dict[str, FabricFact] = {
    # P: training instances with EFA (+ GPUDirect RDMA from p4d on)
    "p3dn.24xlarge": _aws("efa", 100),  # 100 Gigabit, EFA
    "p4d.24xlarge": _aws("efa", 400),  # 4x 100 Gigabit EFA, GPUDirect RDMA
    "p4de.24xlarge": _aws("efa", 400),  # 4x 100 Gigabit EFA, GPUDirect RDMA
    "p5.48xlarge": _aws("efa", 3200, SRC_AWS_P5_EFA),  # 3200 Gigabit EFAv2, 32 network cards
    "p5.4xlarge": _aws("efa", 100),  # 1x H100, 100 Gigabit EFA
    "p5e.48xlarge": _aws("efa", 3200, SRC_AWS_P5_EFA),  # 3200 Gigabit EFA
    "p5en.48xlarge": _aws("efa", 3200),  # 3200 Gigabit EFA (16 x 200)
    "p6-b200.48xlarge": _aws("efa", 3200),  # 3200 Gigabit EFA (8 x 200)
    "p6-b300.48xlarge": _aws("efa", 6400),  # 6400 Gigabit EFA
    "p3.16xlarge": _aws("ethernet", 25),  # 25 Gigabit, EfaSupported absent
    # G: EFA without GPUDirect RDMA on the larger sizes
    "g4dn.8xlarge": _aws("efa", 50),
    "g4dn.12xlarge": _aws("efa", 50),
    "g4dn.16xlarge": _aws("efa", 50),
    "g4dn.metal": _aws("efa", 100),
    "g5.8xlarge": _aws("efa", 25),
    "g5.12xlarge": _aws("efa", 40),
    "g5.16xlarge": _aws("efa", 25),
    "g5.24xlarge": _aws("efa", 50),
    "g5.48xlarge": _aws("efa", 100),
    "g6.8xlarge": _aws("efa", 25),
    "g6.12xlarge": _aws("efa", 40),
    "g6.16xlarge": _aws("efa", 25),
    "g6.24xlarge": _aws("efa", 50),
    "g6.48xlarge": _aws("efa", 100),
    "g6e.8xlarge": _aws("efa", 25),
    "g6e.12xlarge": _aws("efa", 100),
    "g6e.16xlarge": _aws("efa", 35),
    "g6e.24xlarge": _aws("efa", 200),
    "g6e.48xlarge": _aws("efa", 400),  # 4 network cards; the P5/G6e EFA page: up to 400 Gbps
    "g6e.4xlarge": _aws("ethernet", 20),
    "gr6.8xlarge": _aws("efa", 25),
    "g7.8xlarge": _aws("efa", 100),
    "g7.12xlarge": _aws("efa", 175),
    "g7.24xlarge": _aws("efa", 350),
    "g7.48xlarge": _aws("efa", 700),
    "g7e.8xlarge": _aws("efa", 100),
    "g7e.12xlarge": _aws("efa", 400),
    "g7e.24xlarge": _aws("efa", 800),
    "g7e.48xlarge": _aws("efa", 1600),
    "g7e.2xlarge": _aws("ethernet", 50),
    "g7e.4xlarge": _aws("ethernet", 50),
    "g5g.8xlarge": _aws("ethernet", 12),
    "g5g.16xlarge": _aws("ethernet", 25),
    "g5g.metal": _aws("ethernet", 25),
}

#: Azure sizes with InfiniBand (keys: lower case, without the ``Standard_`` prefix).
_AZURE: dict[str, FabricFact] = {
    # NDv2: 8x V100 32GB, "100 Gigabit InfiniBand EDR"
    "nd40rs_v2": FabricFact("infiniband", 100, SRC_AZ_NDV2),
    # ND A100 v4: a dedicated 200 Gb/s HDR InfiniBand connection per GPU, 8 per VM, 1.6 Tb/s per VM (the page
    # writes "200 GB/s" and "1.6 TB/s"; HDR InfiniBand is 200 Gbit/s per port, so these are bits)
    "nd96asr_v4": FabricFact("infiniband", 1600, SRC_AZ_NDA100),
    "nd96amsr_a100_v4": FabricFact("infiniband", 1600, SRC_AZ_NDMA100),
    # ND H100 v5 / ND H200 v5 / ND MI300X v5: 400 Gb/s NDR InfiniBand per GPU, 3.2 Tb/s per VM
    "nd96isr_h100_v5": FabricFact("infiniband", 3200, SRC_AZ_NDH100),
    "nd96isr_h200_v5": FabricFact("infiniband", 3200, SRC_AZ_NDH200),
    "nd96isr_mi300x_v5": FabricFact("infiniband", 3200, SRC_AZ_NDMI300X),
    # The "r" (RDMA-capable) NC sizes have an InfiniBand interface; its speed is not stated on the pages we
    # read, so the InfiniBand default applies.
    "nc24r": FabricFact("infiniband", None, SRC_AZ_NC),
    "nc24r_promo": FabricFact("infiniband", None, SRC_AZ_NC),
    "nc24rs_v3": FabricFact("infiniband", None, SRC_AZ_NCV3),
}

#: GCP machine types with a GPU fabric. Bandwidth: the GPU NICs only (the gVNIC for general traffic excluded).
_GCP: dict[str, FabricFact] = {
    # A3 High 8g: GPUDirect-TCPX, 4 GPU NICs x 200 Gbps = 800 Gbps (1,000 Gbps with the gVNIC)
    "a3-highgpu-8g": FabricFact("tcpx", 800, SRC_GCP_NET),
    # A3 Mega: GPUDirect-TCPXO, 8 GPU NICs x 200 Gbps = 1,600 Gbps (1,800 Gbps with the gVNIC)
    "a3-megagpu-8g": FabricFact("tcpxo", 1600, SRC_GCP_NET),
    # A3 Edge: GPUDirect-TCPX; the page gives the machine's total as 600 Gbps in one version and 800 in another,
    # without the GPU-NIC share: the lower total is used (an upper bound of the GPU NICs' share).
    "a3-edgegpu-8g": FabricFact("tcpx", 600, SRC_GCP_NET),
    "a3-edgegpu-8g-nolssd": FabricFact("tcpx", 600, SRC_GCP_NET),
    # A3 Ultra (H200) and A4 (B200): GPUDirect RDMA, 8 ConnectX-7 NICs, 3,200 Gbps
    "a3-ultragpu-8g": FabricFact("rdma", 3200, SRC_GCP_NET),
    "a3-ultragpu-8g-nolssd": FabricFact("rdma", 3200, SRC_GCP_NET),
    "a4-highgpu-8g": FabricFact("rdma", 3200, SRC_GCP_NET),
    # A2 Standard / Ultra: no GPU-to-GPU networking technology ("N/A"), up to 100 Gbps (the 8- and 16-GPU shapes)
    "a2-highgpu-8g": FabricFact("ethernet", 100, SRC_GCP_NET),
    "a2-megagpu-16g": FabricFact("ethernet", 100, SRC_GCP_NET),
    "a2-ultragpu-8g": FabricFact("ethernet", 100, SRC_GCP_NET),
}

#: Inter-node bandwidth assumed for an instance type whose bandwidth is not in the tables, Gbit/s, by fabric:
#: the LOWEST documented figure of that fabric among the tabled 8-GPU instances, so an unknown offer is never
#: credited with more than the slowest documented member of its fabric —
#: efa 100 (p3dn.24xlarge, g5/g6.48xlarge), infiniband 100 (NDv2, EDR), rdma 3200 (GCP A3 Ultra / A4),
#: tcpxo 1600 (A3 Mega), tcpx 600 (A3 Edge), ethernet 25 (p3.16xlarge: an 8-GPU instance without a fabric).
DEFAULT_GBPS_BY_FABRIC: dict[str, float] = {
    "efa": 100.0,
    "infiniband": 100.0,
    "rdma": 3200.0,
    "tcpxo": 1600.0,
    "tcpx": 600.0,
    "ethernet": 25.0,
}

#: The providers whose GPU instance types these tables cover: anything of theirs not tabled is plain ethernet.
KNOWN_PROVIDERS: tuple[str, ...] = ("aws", "azure", "gcp", "lambda")


def _azure_key(instance_type: str) -> str:
    s = str(instance_type).strip().lower()
    return s[len("standard_"):] if s.startswith("standard_") else s


def fabric_fact(provider: str, instance_type: str) -> FabricFact | None:
    """The tabled fact for an instance type, or None when the tables do not list it."""
    p = str(provider).strip().lower()
    it = str(instance_type).strip()
    if p == "aws":
        return _AWS.get(it.lower())
    if p == "azure":
        return _AZURE.get(_azure_key(it))
    if p == "gcp":
        return _GCP.get(it.lower())
    return None


def fabric_of(provider: str, instance_type: str) -> str:
    """The inter-node fabric of ``instance_type`` (one of FABRICS), or "" when unknown.

    AWS, Azure and GCP instance types in the tables get their documented fabric; their other GPU instance types
    are ``ethernet`` (no cluster fabric documented). Lambda on-demand instances are ``ethernet``: Lambda's
    InfiniBand is part of its 1-Click Clusters, a separate product that is not these offers (SRC_LAMBDA).
    Any other provider (a user's own name in an offers CSV): "" (unknown).
    """
    fact = fabric_fact(provider, instance_type)
    if fact is not None:
        return fact.fabric
    return "ethernet" if str(provider).strip().lower() in KNOWN_PROVIDERS else ""


def is_cluster_fabric(fabric: str) -> bool:
    """True for a fabric over which multi-node training is planned (every FABRICS entry but ``ethernet``)."""
    return str(fabric) in CLUSTER_FABRICS


def fabric_gbps_per_node(provider: str, instance_type: str, fabric: str = "") -> float:
    """Inter-node bandwidth of one instance for collectives, GB/s (BYTES per second, one direction).

    The tabled line rate (Gbit/s) / 8 when the instance type is tabled with that fabric (or ``fabric`` is empty);
    otherwise ``DEFAULT_GBPS_BY_FABRIC[fabric]`` / 8 — e.g. a user's offers CSV that names ``infiniband`` for its
    own cluster. ``fabric`` empty means "the instance's own fabric" (``fabric_of``). Returns 0.0 when the fabric is
    unknown ("" and not tabled): no bandwidth is assumed.
    """
    fact = fabric_fact(provider, instance_type)
    fab = str(fabric or "").strip().lower() or (fact.fabric if fact else fabric_of(provider, instance_type))
    if fact is not None and fact.fabric == fab and fact.gbps is not None:
        return fact.gbps / 8.0
    gbps = DEFAULT_GBPS_BY_FABRIC.get(fab)
    return 0.0 if gbps is None else gbps / 8.0


# --- zones --------------------------------------------------------------------------------------------------
# AWS zone IDs:   use1-az1 (AZ) | use1-atl2-az1, usw2-lax1-az1 (Local Zone) | use1-wl1-bos-wlz1 (Wavelength)
# AWS zone NAMES: us-east-1a (AZ) | us-east-1-atl-2a, us-west-2-lax-1a (Local Zone)
#                 | us-east-1-wl1-bos-wlz-1 (Wavelength)
# Source: https://docs.aws.amazon.com/local-zones/latest/ug/how-local-zones-work.html (Local Zone IDs and names),
# https://docs.aws.amazon.com/wavelength/latest/developerguide/how-wavelengths-work.html (Wavelength Zone names),
# https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html (AZ IDs).
_AWS_WAVELENGTH = re.compile(r"(^|-)wl\d+-[a-z]+-wlz-?\d+$")
_AWS_AZ_ID = re.compile(r"^[a-z]{2,}\d+-az\d+$")  # use1-az1, apne1-az4, usgw1-az1
_AWS_LOCAL_ZONE_ID = re.compile(r"^[a-z]{2,}\d+-[a-z]+\d+-az\d+$")  # use1-atl2-az1, usw2-lax1-az2
_AWS_AZ_NAME = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d+[a-z]$")  # us-east-1a, us-gov-west-1a
_AWS_LOCAL_ZONE_NAME = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d+-[a-z]+-\d+[a-z]$")  # us-east-1-atl-2a


def zone_kind_of(provider: str, region: str, zone: str) -> str:
    """The kind of zone an offer is in: "" (a normal region or availability zone), "local_zone" or "wavelength".

    The rule (AWS only; Azure and GCP offers are always ""):
      * a zone ID or name with a Wavelength segment (``-wl<N>-<metro>-wlz<N>`` / ``-wlz-<N>``) is ``wavelength``;
      * a zone ID ``<region code>-<metro><N>-az<N>`` (``use1-atl2-az1``) or a zone name
        ``<region>-<metro>-<N><letter>`` (``us-east-1-atl-2a``) is ``local_zone``;
      * ``<region code>-az<N>`` (``use1-az1``), ``<region><letter>`` (``us-east-1a``), an empty zone, or anything
        else is "" — a zone is never called special unless its name says so.
    ``region`` is not needed by the rule (a Local Zone belongs to its parent region) and is accepted for callers
    that have it.
    """
    del region
    if str(provider).strip().lower() != "aws":
        return ""
    z = str(zone or "").strip().lower()
    if not z or z == "nan":
        return ""
    if _AWS_WAVELENGTH.search(z):
        return "wavelength"
    if _AWS_AZ_ID.match(z) or _AWS_AZ_NAME.match(z):
        return ""
    if _AWS_LOCAL_ZONE_ID.match(z) or _AWS_LOCAL_ZONE_NAME.match(z):
        return "local_zone"
    return ""


# --- tiers --------------------------------------------------------------------------------------------------
# The quotations below are the providers' own documentation pages as stored and read on 2026-12-05; where a page
# does not say "our data centres" in those words, the citation says what it does say and that the tier is gpuopt's
# reading of it.
SRC_TIER_AWS = ("AWS, a hyperscale cloud: capacity in AWS's own Regions and Availability Zones "
                "(https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)")
SRC_TIER_AZURE = ("Microsoft Azure, a hyperscale cloud: capacity in Azure's own regions "
                  "(https://learn.microsoft.com/azure/virtual-machines/sizes/overview)")
SRC_TIER_GCP = ("Google Cloud, a hyperscale cloud: capacity in Google's own regions and zones "
                "(https://cloud.google.com/compute/docs/regions-zones)")
SRC_TIER_LAMBDA = ("Lambda docs, Billing (https://docs.lambda.ai/public-cloud/billing): \"Lambda Cloud charges for "
                   "... On-Demand Cloud (ODC) instances\" - Lambda's own public cloud, one seller, no third-party "
                   "hosts; neocloud is gpuopt's reading of it")
SRC_TIER_COREWEAVE = ("CoreWeave docs, What CoreWeave manages (https://docs.coreweave.com/support/what-coreweave-"
                      "manages): \"CoreWeave operates the physical infrastructure, the managed control plane, the "
                      "Node images and drivers, and the health and replacement of hardware\"; General Access regions "
                      "(https://docs.coreweave.com/docs/platform/regions/general-access): \"CoreWeave operates "
                      "multiple Regions and Availability Zones\"")
SRC_TIER_NEBIUS = ("Nebius docs (https://docs.nebius.com/overview/data-deletion): data \"physically deleted from "
                   "Nebius AI Cloud servers\"; regions of its own such as eu-north1 (Finland) "
                   "(https://docs.nebius.com/object-storage/overview) - Nebius AI Cloud sells its own servers, no "
                   "third-party hosts; neocloud is gpuopt's reading of it")
SRC_TIER_RUNPOD_SECURE = ("RunPod docs, FAQ (https://docs.runpod.io/docs/faq): \"Secure Cloud runs in T4 data "
                          "centers by our trusted partners\"; Glossary (https://docs.runpod.io/glossary): Secure "
                          "Cloud is \"GPU instances that run in T3/T4 data centers, providing high reliability and "
                          "security\"")
SRC_TIER_RUNPOD_COMMUNITY = ("RunPod docs, FAQ (https://docs.runpod.io/docs/faq): \"Community Cloud ... "
                             "peer-to-peer GPU computing that connects individual compute providers to compute "
                             "consumers. Our Community Cloud hosts are invite-only and vetted by us.\"")
SRC_TIER_VAST = ("Vast.ai docs, Concepts (https://docs.vast.ai/guides/concepts): \"Vast.ai is a marketplace that "
                 "connects hosts (people and datacenters with GPUs to rent out) with renters\"; \"Each host sets their "
                 "own prices, reliability expectations, and verification level.\"")


@dataclass(frozen=True)
class TierFact:
    """One documented fact: the tier of a provider's (or a RunPod product's) offers and where it is documented.

    Attributes:
        tier: one of TIERS.
        source: the provider's page and its words (SRC_TIER_*).
    """

    tier: str
    source: str


#: The tier of every provider gpuopt has facts for (keys: the ``provider`` column, lower case). RunPod is not a key:
#: its two products differ (:data:`RUNPOD_TIER_FACTS`).
TIER_FACTS: dict[str, TierFact] = {
    "aws": TierFact("hyperscaler", SRC_TIER_AWS),
    "azure": TierFact("hyperscaler", SRC_TIER_AZURE),
    "gcp": TierFact("hyperscaler", SRC_TIER_GCP),
    "lambda": TierFact("neocloud", SRC_TIER_LAMBDA),
    "coreweave": TierFact("neocloud", SRC_TIER_COREWEAVE),
    "nebius": TierFact("neocloud", SRC_TIER_NEBIUS),
    "vast": TierFact("marketplace", SRC_TIER_VAST),
}

#: RunPod's products by the word its instance types carry (``h100-sxm-community-cloud``, ``b200-secure-cloud``).
RUNPOD_TIER_FACTS: dict[str, TierFact] = {
    "community": TierFact("marketplace", SRC_TIER_RUNPOD_COMMUNITY),
    "secure": TierFact("neocloud", SRC_TIER_RUNPOD_SECURE),
}


def tier_fact(provider: str, instance_type: str = "") -> TierFact | None:
    """The documented tier of an offer, or None when there is none.

    ``provider`` is looked up in :data:`TIER_FACTS`; for ``runpod`` the instance type decides: its words (split on
    anything not a letter or digit) containing ``community`` give Community Cloud (marketplace), ``secure`` Secure
    Cloud (neocloud); both or neither: None (unknown — a RunPod row is never guessed into either product).
    """
    p = str(provider or "").strip().lower()
    if p != "runpod":
        return TIER_FACTS.get(p)
    words = set(re.split(r"[^a-z0-9]+", str(instance_type or "").lower()))
    found = [fact for word, fact in RUNPOD_TIER_FACTS.items() if word in words]
    return found[0] if len(found) == 1 else None


def tier_of(provider: str, instance_type: str = "") -> str:
    """The tier of an offer (one of TIERS), or "" when unknown (see :func:`tier_fact`)."""
    fact = tier_fact(provider, instance_type)
    return fact.tier if fact is not None else ""
