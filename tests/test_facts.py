"""Documented facts: fabrics, inter-node bandwidth and zone kinds (providers/facts.py).

Each expected value is the documented figure, with its source beside it.
"""

from __future__ import annotations

import pytest

from providers import facts
from providers.facts import FABRICS, fabric_gbps_per_node, fabric_of, is_cluster_fabric, zone_kind_of


@pytest.mark.parametrize(
    "provider, instance_type, fabric, gbps",
    [
        # AWS DescribeInstanceTypes NetworkInfo: EfaSupported + NetworkPerformance
        ("aws", "p4d.24xlarge", "efa", 400),  # "4x 100 Gigabit", EFA + GPUDirect RDMA
        ("aws", "p4de.24xlarge", "efa", 400),
        ("aws", "p5.48xlarge", "efa", 3200),  # efa-acc-inst-types: P5 up to 3200 Gbps, 32 network cards
        ("aws", "p5en.48xlarge", "efa", 3200),
        ("aws", "p6-b200.48xlarge", "efa", 3200),
        ("aws", "p3dn.24xlarge", "efa", 100),
        ("aws", "g5.48xlarge", "efa", 100),  # EFA without GPUDirect RDMA: still EFA (module doc)
        ("aws", "g6e.48xlarge", "efa", 400),  # efa-acc-inst-types: G6e up to 400 Gbps
        ("aws", "p3.16xlarge", "ethernet", 25),  # "25 Gigabit", no EFA
        # Azure ND pages
        ("azure", "Standard_ND40rs_v2", "infiniband", 100),  # NDv2: 100 Gb/s EDR
        ("azure", "Standard_ND96asr_v4", "infiniband", 1600),  # ND A100 v4: 8 x 200 Gb/s HDR
        ("azure", "Standard_ND96amsr_A100_v4", "infiniband", 1600),  # NDm A100 v4: 8 x 200 Gb/s HDR
        ("azure", "Standard_ND96isr_H100_v5", "infiniband", 3200),  # ND H100 v5: 8 x 400 Gb/s NDR
        ("azure", "standard_nd96isr_h200_v5", "infiniband", 3200),  # case-insensitive
        # GCP "Networking and GPU machines"
        ("gcp", "a3-highgpu-8g", "tcpx", 800),  # GPUDirect-TCPX, 4 x 200 Gbps GPU NICs
        ("gcp", "a3-megagpu-8g", "tcpxo", 1600),  # GPUDirect-TCPXO, 8 x 200 Gbps GPU NICs
        ("gcp", "a3-ultragpu-8g", "rdma", 3200),  # GPUDirect RDMA, 8 CX-7 NICs
        ("gcp", "a4-highgpu-8g", "rdma", 3200),
        ("gcp", "a2-highgpu-8g", "ethernet", 100),  # A2: "N/A" GPU networking, up to 100 Gbps
    ],
)
def test_documented_fabric_and_bandwidth(provider, instance_type, fabric, gbps):
    assert fabric_of(provider, instance_type) == fabric
    assert fabric_gbps_per_node(provider, instance_type, fabric) == pytest.approx(gbps / 8.0)  # GB/s, bytes
    assert fabric_gbps_per_node(provider, instance_type) == pytest.approx(gbps / 8.0)  # own fabric


def test_everything_else_of_a_known_provider_is_ethernet_and_unknown_providers_are_unknown():
    assert fabric_of("aws", "g4dn.xlarge") == "ethernet"  # no EFA on the small sizes
    assert fabric_of("gcp", "a3-highgpu-1g") == "ethernet"  # single-NIC A3 shapes: no GPUDirect-TCPX
    assert fabric_of("gcp", "g2-standard-96") == "ethernet"
    assert fabric_of("azure", "Standard_NC24ads_A100_v4") == "ethernet"
    assert fabric_of("lambda", "gpu_8x_h100_sxm5") == "ethernet"  # 1-Click Clusters are another product
    assert fabric_of("coreweave", "anything") == ""
    assert fabric_gbps_per_node("coreweave", "anything") == 0.0


def test_named_fabric_of_an_untabled_instance_gets_the_documented_default():
    assert fabric_gbps_per_node("onprem", "dgx-a100", "infiniband") == pytest.approx(100 / 8)
    assert fabric_gbps_per_node("onprem", "box", "ethernet") == pytest.approx(25 / 8)
    # a fabric other than the tabled one: the default of that fabric, not the tabled figure
    assert fabric_gbps_per_node("aws", "p5.48xlarge", "ethernet") == pytest.approx(25 / 8)
    # an InfiniBand size whose speed is not documented: the InfiniBand default
    assert fabric_of("azure", "Standard_NC24rs_v3") == "infiniband"
    assert fabric_gbps_per_node("azure", "Standard_NC24rs_v3") == pytest.approx(100 / 8)
    assert set(facts.DEFAULT_GBPS_BY_FABRIC) == set(FABRICS)


def test_cluster_fabrics():
    assert [f for f in FABRICS if is_cluster_fabric(f)] == ["efa", "infiniband", "rdma", "tcpxo", "tcpx"]
    assert not is_cluster_fabric("ethernet") and not is_cluster_fabric("")


def test_every_tabled_fact_is_a_known_fabric_with_a_source():
    for table in (facts._AWS, facts._AZURE, facts._GCP):
        for name, fact in table.items():
            assert fact.fabric in FABRICS, name
            assert fact.source, name
            assert fact.gbps is None or fact.gbps > 0, name


@pytest.mark.parametrize(
    "zone, kind",
    [
        ("use1-az1", ""),  # AZ ID
        ("apne1-az4", ""),
        ("us-east-1a", ""),  # AZ name
        ("", ""),
        ("use1-atl2-az1", "local_zone"),  # Local Zone IDs in the shipped snapshot
        ("usw2-lax1-az1", "local_zone"),
        ("usw2-lax1-az2", "local_zone"),
        ("us-east-1-atl-2a", "local_zone"),  # Local Zone name
        ("us-west-2-lax-1a", "local_zone"),
        ("use1-wl1-bos-wlz1", "wavelength"),  # Wavelength Zone ID
        ("us-east-1-wl1-bos-wlz-1", "wavelength"),  # Wavelength Zone name
    ],
)
def test_aws_zone_kinds(zone, kind):
    assert zone_kind_of("aws", "us-east-1", zone) == kind


def test_other_providers_zones_are_normal():
    assert zone_kind_of("gcp", "us-central1", "us-central1-a") == ""
    assert zone_kind_of("azure", "eastus", "") == ""
