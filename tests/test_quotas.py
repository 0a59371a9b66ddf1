"""Quotas (providers/quotas.py, issue 26 point 5): which quota real instance types draw on, quota files and their
one-line errors, the live fetchers (Service Quotas through botocore's Stubber; the Azure usages and GCP regions.get
REST endpoints through a local HTTP server on 127.0.0.1). Payload numbers are fixture values
(tests/fixtures/quotas/README.md)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gpuopt.kernel.errors import InputError, ProviderError
from providers.base import FetchOptions, InvalidCredentials
from providers.quotas import (AWS_EC2_QUOTAS, QuotaKey, QuotaLimit, QuotaTable, aws_instance_class, azure_family,
                              fetch_aws_quotas, fetch_azure_quotas, fetch_gcp_quotas, load_quota_file,
                              aws_quota_table, quota_table_from_rows, quota_key, quota_keys)

FIXTURES = Path(__file__).parent / "fixtures" / "quotas"


def _load(name: str):
    return json.loads((FIXTURES / name).read_text())


def _offer(provider, region, itype, pricing="on_demand", **kw):
    return {"provider": provider, "region": region, "zone": "", "instance_type": itype, "pricing": pricing, **kw}


# ------------------------------------------------------------------------------------------------- the keys
def test_p5_on_demand_draws_192_vcpus_of_running_on_demand_p():
    k = quota_key(_offer("aws", "us-east-1", "p5.48xlarge", vcpus=192, gpu_model="H100-80GB", gpu_count=8))
    assert (k.provider, k.region, k.quota, k.unit, k.units_per_instance) == (
        "aws", "us-east-1", "L-417A185B", "vcpus", 192)
    assert k.name == "Running On-Demand P instances"
    assert k.label == "aws us-east-1 L-417A185B (Running On-Demand P instances), vCPUs"


def test_g6_xlarge_spot_draws_4_vcpus_of_g_and_vt_spot():
    k = quota_key(_offer("aws", "us-west-2", "g6.xlarge", "spot", vcpus=4, gpu_model="L4", gpu_count=1))
    assert (k.quota, k.name, k.units_per_instance) == ("L-3819A6DF", "All G and VT Spot Instance Requests", 4)


@pytest.mark.parametrize("pricing", ["reserved_1y", "reserved_3y", "savings_plan_1y", "savings_plan_3y"])
def test_aws_commitments_draw_on_the_on_demand_quota(pricing):
    """ri-limits: "You cannot exceed your running On-Demand Instance limit by purchasing regional Reserved
    Instances"; savings plans discount the same On-Demand usage."""
    assert quota_key(_offer("aws", "us-east-1", "p4d.24xlarge", pricing, vcpus=96)).quota == "L-417A185B"


@pytest.mark.parametrize("itype, cls, spot", [
    ("p4d.24xlarge", "P", "L-7212CCBC"), ("p3.2xlarge", "P", "L-7212CCBC"), ("p5en.48xlarge", "P", "L-C4BD4855"),
    ("p5e.48xlarge", "P", "L-C4BD4855"), ("p6-b200.48xlarge", "P", None), ("g4dn.xlarge", "G and VT", "L-3819A6DF"),
    ("g6e.12xlarge", "G and VT", "L-3819A6DF"), ("vt1.3xlarge", "G and VT", "L-3819A6DF"),
    ("dl1.24xlarge", "DL", "L-85EED4F7"), ("inf2.xlarge", "Inf", "L-B5D1601B"), ("trn1.32xlarge", "Trn", "L-6B0D517C"),
    ("m5.large", "Standard", "L-34B43A08"), ("f1.2xlarge", "F", "L-88CF9481"), ("x2idn.16xlarge", "X", "L-E3A00192"),
    ("u-6tb1.56xlarge", "High Memory", None), ("hpc7g.16xlarge", None, None), ("mac2.metal", None, None),
])
def test_aws_instance_classes(itype, cls, spot):
    assert aws_instance_class(itype) == cls
    k = quota_key(_offer("aws", "us-east-1", itype, "spot", vcpus=8))
    assert (k.quota if k else None) == spot


def test_aws_capacity_blocks_draw_on_no_vcpu_quota():
    """No source says whether Capacity Block instances count against the On-Demand quotas (module docstring)."""
    assert quota_key(_offer("aws", "us-east-1", "p5.48xlarge", "capacity_block", vcpus=192)) is None


def test_every_aws_code_is_one_of_the_cited_ones():
    assert set(AWS_EC2_QUOTAS) == {
        "L-417A185B", "L-DB2E81BA", "L-6E869C2A", "L-1945791B", "L-2C3B7624", "L-1216C47A", "L-74FC7D96",
        "L-7295265B", "L-43DA4232", "L-7212CCBC", "L-C4BD4855", "L-3819A6DF", "L-85EED4F7", "L-B5D1601B",
        "L-6B0D517C", "L-34B43A08", "L-88CF9481", "L-E3A00192"}


def test_nd96isr_h100_v5_draws_96_vcpus_of_its_family_and_the_regional_total():
    keys = quota_keys(_offer("azure", "eastus", "Standard_ND96isr_H100_v5", vcpus=96, gpu_count=8))
    assert [(k.quota, k.units_per_instance) for k in keys] == [("standardNDSH100v5Family", 96), ("cores", 96)]
    assert quota_key(_offer("azure", "eastus", "Standard_ND96isr_H100_v5", vcpus=96)).quota == \
        "standardNDSH100v5Family"


def test_azure_spot_draws_on_low_priority_cores_only():
    keys = quota_keys(_offer("azure", "eastus", "Standard_NC24ads_A100_v4", "spot", vcpus=24))
    assert [k.quota for k in keys] == ["lowPriorityCores"]


@pytest.mark.parametrize("size, family", [
    ("Standard_NC24ads_A100_v4", "StandardNCADSA100v4Family"), ("Standard_NC96ads_A100_v4", "StandardNCADSA100v4Family"),
    ("Standard_NC40ads_H100_v5", "StandardNCadsH100v5Family"), ("Standard_NC80adis_H100_v5", "StandardNCadsH100v5Family"),
    ("Standard_NCC40ads_H100_v5", "StandardNCCads2023Family"), ("Standard_NC4as_T4_v3", "Standard NCASv3_T4 Family"),
    ("Standard_NC24rs_v3", "standardNCSv3Family"), ("Standard_ND96asr_v4", "Standard NDASv4_A100 Family"),
    ("Standard_ND96isr_H200_v5", "standardNDISRH200V5Family"), ("Standard_ND40rs_v2", "standardNDSv2Family"),
    ("Standard_NV36ads_A10_v5", "StandardNVADSA10v5Family"), ("Standard_NV36adms_A10_v5", "StandardNVADSA10v5Family"),
    ("Standard_NV12s_v3", "standardNVSv3Family"),
    ("Standard_ND96amsr_A100_v4", None), ("Standard_NC8ads_A10_v4", None), ("Standard_NC6", None),
])
def test_azure_families(size, family):
    assert azure_family(size) == family


def test_every_azure_gpu_size_of_the_shipped_prices_has_a_family_or_is_named_unmapped():
    """The sizes in shared/data/prices/azure_prices.csv (checked by hand when this was written)."""
    mapped = {s: azure_family(s) for s in (
        "Standard_NC24ads_A100_v4", "Standard_NC40ads_H100_v5", "Standard_NC48ads_A100_v4",
        "Standard_NC80adis_H100_v5", "Standard_NC96ads_A100_v4", "Standard_ND96asr_v4",
        "Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5")}
    assert all(mapped.values()), mapped
    assert azure_family("Standard_ND96amsr_A100_v4") is None  # NDm A100 v4: family not in the sources


def test_a3_highgpu_8g_draws_8_h100_gpus():
    k = quota_key(_offer("gcp", "us-central1", "a3-highgpu-8g", gpu_model="H100-80GB", gpu_count=8, vcpus=208))
    assert (k.quota, k.unit, k.units_per_instance) == ("NVIDIA_H100_GPUS", "gpus", 8)


@pytest.mark.parametrize("itype, model, metric", [
    ("a2-highgpu-1g", "A100-40GB", "NVIDIA_A100_GPUS"), ("a2-ultragpu-8g", "A100-80GB", "NVIDIA_A100_80GB_GPUS"),
    ("g2-standard-24", "L4", "NVIDIA_L4_GPUS"), ("a3-megagpu-8g", "H100-80GB", None),
    ("a3-ultragpu-8g", "H200-141GB", None), ("a4-highgpu-8g", "B200", None),
])
def test_gcp_metrics(itype, model, metric):
    k = quota_key(_offer("gcp", "us-central1", itype, gpu_model=model, gpu_count=8))
    assert (k.quota if k else None) == metric


def test_gcp_spot_uses_preemptible_quota_else_the_standard_one():
    spot = _offer("gcp", "us-central1", "a3-highgpu-8g", "spot", gpu_model="H100-80GB", gpu_count=8)
    std = QuotaKey("gcp", "us-central1", "NVIDIA_H100_GPUS", "gpus")
    pre = QuotaKey("gcp", "us-central1", "PREEMPTIBLE_NVIDIA_H100_GPUS", "gpus")
    assert quota_key(spot) == pre
    only_std = QuotaTable([QuotaLimit(std, 16)])
    assert only_std.key_for(spot) == (std, 8)
    both = QuotaTable([QuotaLimit(std, 16), QuotaLimit(pre, 8)])
    assert both.key_for(spot) == (pre, 8)


@pytest.mark.parametrize("provider", ["lambda", "runpod", "coreweave", "nebius"])
def test_other_providers_draw_on_nothing_unless_a_file_names_them(provider):
    offer = _offer(provider, "us-east-1", "gpu_8x_h100", gpu_model="H100-80GB", gpu_count=8)
    assert quota_key(offer) is None
    assert QuotaTable().keys_for(offer) == []
    table = quota_table_from_rows([(2, {"provider": provider, "region": "*", "family": "H100-80GB", "limit": 16,
                                   "unit": "gpus"})])
    [(key, units)] = table.keys_for(offer)
    assert (key.quota, units, table.headroom(key)) == ("H100-80GB", 8, 16)


# ------------------------------------------------------------------------------------------------- the table
def test_headroom_is_limit_minus_used_and_none_when_unknown():
    k = QuotaKey("aws", "us-east-1", "L-417A185B", "vcpus")
    t = QuotaTable([QuotaLimit(k, 384, 192)])
    assert t.headroom(k) == 192
    assert t.headroom(QuotaKey("aws", "us-west-2", "L-417A185B", "vcpus")) is None
    assert QuotaTable([QuotaLimit(k, 96, 128)]).headroom(k) == 0  # usage above the limit leaves nothing


def test_keys_for_groups_offers_by_quota_and_unknown_size_is_none():
    t = load_quota_file(FIXTURES / "quotas.csv")
    p5 = _offer("aws", "us-east-1", "p5.48xlarge", vcpus=192)
    p4 = _offer("aws", "us-east-1", "p4d.24xlarge", vcpus=96)
    (k5, u5), (k4, u4) = t.key_for(p5), t.key_for(p4)
    assert k5 == k4 and (u5, u4) == (192, 96) and t.headroom(k5) == 192
    assert t.key_for(_offer("aws", "us-east-1", "p5.48xlarge")) == (k5, None)  # no vcpus: cannot be shown to fit
    assert t.key_for(_offer("aws", "eu-west-1", "p5.48xlarge", vcpus=192)) is None  # no limit known there


def test_azure_vm_is_constrained_by_family_and_regional_total():
    t = load_quota_file(FIXTURES / "quotas.csv")
    keys = t.keys_for(_offer("azure", "eastus", "Standard_ND96isr_H100_v5", vcpus=96))
    assert [(k.quota, u, t.headroom(k)) for k, u in keys] == [("standardNDSH100v5Family", 96, 96), ("cores", 96, 346)]


def test_region_star_is_each_regions_limit_and_a_region_row_wins():
    t = load_quota_file(FIXTURES / "quotas.csv")
    spot = _offer("aws", "ap-south-1", "g5.xlarge", "spot", vcpus=4)
    k, u = t.key_for(spot)
    assert (k.quota, k.region, u, t.headroom(k)) == ("L-3819A6DF", "ap-south-1", 4, 64)
    rows = [(2, {"provider": "aws", "region": "*", "family": "L-417A185B", "limit": 0, "unit": "vcpus"}),
            (3, {"provider": "aws", "region": "us-east-1", "family": "L-417A185B", "limit": 192, "unit": "vcpus"})]
    t2 = quota_table_from_rows(rows)
    assert t2.headroom(QuotaKey("aws", "us-east-1", "L-417A185B", "vcpus")) == 192
    assert t2.headroom(QuotaKey("aws", "us-west-2", "L-417A185B", "vcpus")) == 0


# ------------------------------------------------------------------------------------------------- the files
def test_csv_accepts_codes_names_azure_spellings_and_gcp_metrics():
    t = load_quota_file(FIXTURES / "quotas.csv")
    assert len(t) == 6
    az = QuotaKey("azure", "eastus", "standardNDSH100v5Family", "vcpus")
    assert t.headroom(az) == 96  # "Standard NDSH100v5 Family" in the file
    assert t.headroom(QuotaKey("gcp", "us-central1", "NVIDIA_H100_GPUS", "gpus")) == 8


def test_yaml_file():
    t = load_quota_file(FIXTURES / "quotas.yaml")
    assert t.headroom(QuotaKey("gcp", "europe-west4", "NVIDIA_L4_GPUS", "gpus")) == 4
    assert t.headroom(QuotaKey("aws", "us-east-1", "L-417A185B", "vcpus")) == 192
    lim = t.limit_of(QuotaKey("aws", "us-east-1", "L-417A185B", "vcpus"))
    assert lim.source == "quotas.yaml line 3"


def _write(tmp_path, text, name="q.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


HEAD = "provider,region,family,limit,unit\n"


@pytest.mark.parametrize("body, field, words", [
    ("aws,us-east-1,L-12345678,8,vcpus\n", "family", ["q.csv line 2", "L-12345678", "L-417A185B"]),
    ("aws,us-east-1,L-417A185B,8,gpus\n", "unit", ["q.csv line 2", "counted in vcpus", "accepted: vcpus"]),
    ("aws,us-east-1,L-417A185B,8,cores\n", "unit", ["'cores'", "accepted: vcpus, gpus"]),
    ("aws,,L-417A185B,8,vcpus\n", "region", ["line 2", "write * for every region"]),
    ("aws,us-east-1,L-417A185B,-1,vcpus\n", "limit", ["line 2", "-1"]),
    ("aws,us-east-1,L-417A185B,lots,vcpus\n", "limit", ["'lots' is not a number"]),
    ("aws,us-east-1,L-417A185B,inf,vcpus\n", "limit", ["finite"]),
    ("azure,eastus,standardDSv3Family,8,vcpus\n", "family", ["standardDSv3Family", "standardNDSH100v5Family"]),
    ("gcp,us-central1,NVIDIA_H200_GPUS,8,gpus\n", "family", ["NVIDIA_H200_GPUS", "NVIDIA_H100_GPUS"]),
    ("aws,us-east-1,L-417A185B,8,vcpus\naws,us-east-1,Running On-Demand P instances,16,vcpus\n", "family",
     ["lines 2 and 3", "twice"]),
    (",us-east-1,L-417A185B,8,vcpus\n", "provider", ["line 2"]),
])
def test_file_errors_are_one_line_naming_file_line_field_and_accepted(tmp_path, body, field, words):
    with pytest.raises(InputError) as e:
        load_quota_file(_write(tmp_path, HEAD + body))
    msg = str(e.value)
    assert e.value.field == field and "\n" not in msg
    for w in words:
        assert w in msg, msg


def test_file_column_errors(tmp_path):
    with pytest.raises(InputError, match=r"^quota_code: q.csv line 2: unknown column"):
        load_quota_file(_write(tmp_path, "provider,region,quota_code,limit,unit\naws,us-east-1,L-417A185B,8,vcpus\n"))
    with pytest.raises(InputError, match=r"^unit: q.csv line 2: missing"):
        load_quota_file(_write(tmp_path, "provider,region,family,limit\naws,us-east-1,L-417A185B,8\n"))
    with pytest.raises(InputError, match="quota file is .csv, .yaml or .yml"):
        load_quota_file(_write(tmp_path, HEAD, "q.txt"))
    with pytest.raises(InputError, match="file not found"):
        load_quota_file(tmp_path / "nope.csv")
    with pytest.raises(InputError, match=r"q.yaml line 2: a row is a mapping"):
        load_quota_file(_write(tmp_path, "quotas:\n  - 5\n", "q.yaml"))


def test_used_and_thousands_separators(tmp_path):
    t = load_quota_file(_write(tmp_path, "provider,region,family,limit,unit,used\n"
                                         'aws,us-east-1,L-1216C47A,"1,152",vcpus,152\n'))
    assert t.headroom(QuotaKey("aws", "us-east-1", "L-1216C47A", "vcpus")) == 1000


# ------------------------------------------------------------------------------------------------- live: AWS
class _Session:
    """A boto3-Session stand-in whose client is the Stubber's."""

    def __init__(self, clients):
        self.clients = clients

    def client(self, name, region_name=None):
        assert name == "service-quotas"
        return self.clients[region_name]


def _service_quotas(region="us-east-1"):
    import boto3

    c = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                      region_name=region).client("service-quotas", region_name=region)
    from botocore.stub import Stubber

    return c, Stubber(c)


def test_fetch_aws_quotas_reads_every_page_and_keeps_the_instance_quotas():
    client, stub = _service_quotas()
    p1, p2 = _load("aws_list_service_quotas_us-east-1_page1.json"), _load("aws_list_service_quotas_us-east-1_page2.json")
    stub.add_response("list_service_quotas", p1, {"ServiceCode": "ec2"})
    stub.add_response("list_service_quotas", p2, {"ServiceCode": "ec2", "NextToken": "page-2-token"})
    with stub:
        t = fetch_aws_quotas(_Session({"us-east-1": client}), ["us-east-1"])
    stub.assert_no_pending_responses()
    assert {(lim.key.quota, lim.limit) for lim in t} == {
        ("L-417A185B", 384), ("L-DB2E81BA", 96), ("L-3819A6DF", 64), ("L-C4BD4855", 192)}  # no Elastic IPs
    p5 = _offer("aws", "us-east-1", "p5.48xlarge", vcpus=192)
    key, units = t.key_for(p5)
    assert (key.name, units, t.headroom(key)) == ("Running On-Demand P instances", 192, 384)
    spot = t.key_for(_offer("aws", "us-east-1", "p5.48xlarge", "spot", vcpus=192))
    assert spot[0].quota == "L-C4BD4855"


def test_fetch_aws_quotas_errors():
    client, stub = _service_quotas()
    stub.add_client_error("list_service_quotas", "AccessDeniedException", "not allowed", 400)
    with stub, pytest.raises(ProviderError, match="us-east-1: ListServiceQuotas failed .AccessDeniedException"):
        fetch_aws_quotas(_Session({"us-east-1": client}), ["us-east-1"])
    client, stub = _service_quotas()
    stub.add_client_error("list_service_quotas", "UnrecognizedClientException", "bad token", 400)
    with stub, pytest.raises(InvalidCredentials, match="credentials were refused"):
        fetch_aws_quotas(_Session({"us-east-1": client}), ["us-east-1"])


def test_a_file_row_overrides_the_api():
    api = aws_quota_table({"us-east-1": [_load("aws_list_service_quotas_us-east-1_page1.json")]})
    f = quota_table_from_rows([(2, {"provider": "aws", "region": "us-east-1", "family": "L-417A185B", "limit": 384,
                               "unit": "vcpus", "used": 300})])
    assert api.merged(f).headroom(QuotaKey("aws", "us-east-1", "L-417A185B", "vcpus")) == 84


# ------------------------------------------------------------------------------------------------- live: Azure
class _Token:
    token = "fixture-token"


class _Credential:
    def __init__(self):
        self.scopes = []

    def get_token(self, scope):
        self.scopes.append(scope)
        return _Token()


SUB = "00000000-0000-0000-0000-000000000000"
USAGES = f"/subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus/usages"


@pytest.fixture
def local(server):
    server.clear()
    yield server
    server.clear()


def _opts(server):
    return FetchOptions(endpoints={"azure_management": server.url_for(""), "gcp_compute": server.url_for("/v1")},
                        timeout_s=5.0, max_attempts=1)


def test_fetch_azure_quotas_follows_next_link_and_keeps_gpu_families(local):
    from werkzeug import Request, Response

    p1 = copy.deepcopy(_load("azure_usages_eastus_page1.json"))
    p1["nextLink"] = p1["nextLink"].replace("RECORDED_BASE", local.url_for("").rstrip("/"))
    p2 = _load("azure_usages_eastus_page2.json")
    seen = []

    def handler(request: Request) -> Response:
        seen.append((request.args.get("api-version"), request.headers.get("Authorization"),
                     request.args.get("$skiptoken")))
        return Response(json.dumps(p2 if request.args.get("$skiptoken") else p1), content_type="application/json")

    local.expect_request(USAGES).respond_with_handler(handler)
    cred = _Credential()
    t = fetch_azure_quotas(SUB, ["eastus"], cred, options=_opts(local))
    assert cred.scopes == ["https://management.azure.com/.default"]
    assert seen == [("2023-09-01", "Bearer fixture-token", None), ("2023-09-01", "Bearer fixture-token", "page2")]
    assert {(lim.key.quota, lim.limit, lim.used) for lim in t} == {
        ("cores", 350, 4), ("standardNDSH100v5Family", 96, 0), ("StandardNCADSA100v4Family", 48, 24),
        ("lowPriorityCores", 100, 0)}  # virtualMachines and standardDSv3Family left out
    a100 = t.keys_for(_offer("azure", "eastus", "Standard_NC24ads_A100_v4", vcpus=24))
    assert [(k.quota, u, t.headroom(k)) for k, u in a100] == [("StandardNCADSA100v4Family", 24, 24), ("cores", 24, 346)]
    assert t.key_for(_offer("azure", "eastus", "Standard_NC24ads_A100_v4", "spot", vcpus=24))[0].quota == \
        "lowPriorityCores"


def test_fetch_azure_quotas_refused_credentials(local):
    local.expect_request(USAGES).respond_with_json({"error": {"code": "AuthenticationFailed"}}, status=401)
    with pytest.raises(InvalidCredentials, match="azure usages eastus: HTTP 401"):
        fetch_azure_quotas(SUB, ["eastus"], _Credential(), options=_opts(local))


def test_fetch_azure_quotas_repeating_next_link_is_an_error(local):
    page = {"value": [], "nextLink": local.url_for(USAGES) + "?api-version=2023-09-01"}
    local.expect_request(USAGES).respond_with_json(page)
    with pytest.raises(ProviderError, match="repeats"):
        fetch_azure_quotas(SUB, ["eastus"], _Credential(), options=_opts(local))


# ------------------------------------------------------------------------------------------------- live: GCP
def test_fetch_gcp_quotas(local):
    local.expect_request("/v1/projects/my-project/regions/us-central1").respond_with_json(
        _load("gcp_region_us-central1.json"))
    t = fetch_gcp_quotas("my-project", ["us-central1"], "fixture-token", options=_opts(local))
    assert {(lim.key.quota, lim.headroom) for lim in t} == {
        ("NVIDIA_H100_GPUS", 8), ("PREEMPTIBLE_NVIDIA_H100_GPUS", 8), ("NVIDIA_L4_GPUS", 4)}
    key, units = t.key_for(_offer("gcp", "us-central1", "a3-highgpu-8g", gpu_model="H100-80GB", gpu_count=8))
    assert (key.quota, units, t.headroom(key)) == ("NVIDIA_H100_GPUS", 8, 8)


# ------------------------------------------------------------------------------------- gpuopt quotas -> --quota
def test_live_quotas_written_as_the_file_recommend_reads(tmp_path):
    """`gpuopt quotas` (providers.quotas.fetch_quotas + write_quota_file): the Service Quotas pages recorded for
    us-east-1 become a CSV that load_quota_file reads back to the same limits."""
    from providers.quotas import fetch_quotas, load_quota_file, write_quota_file

    client, stub = _service_quotas()
    stub.add_response("list_service_quotas", _load("aws_list_service_quotas_us-east-1_page1.json"), {"ServiceCode": "ec2"})
    stub.add_response("list_service_quotas", _load("aws_list_service_quotas_us-east-1_page2.json"),
                      {"ServiceCode": "ec2", "NextToken": "page-2-token"})
    with stub:
        live = fetch_quotas("aws", ["us-east-1"], session=_Session({"us-east-1": client}))
    path = write_quota_file(live, tmp_path / "q.csv")
    back = load_quota_file(path)
    assert sorted((x.key.quota, x.limit, x.used) for x in back) == sorted((x.key.quota, x.limit, x.used) for x in live)
    assert {x.key.quota for x in back} == {"L-417A185B", "L-DB2E81BA", "L-3819A6DF", "L-C4BD4855"}
    assert "Running On-Demand P instances" in path.read_text()


def test_quotas_command_errors_are_one_line(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from gpuopt.cli import app

    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    r = CliRunner().invoke(app, ["quotas", "--provider", "runpod", "--region", "x", "-o", str(tmp_path / "q.csv")])
    assert r.exit_code == 1 and "accepted: aws, azure, gcp" in r.stderr and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["quotas", "--provider", "gcp", "--region", "us-central1", "-o", str(tmp_path / "q.csv")])
    assert r.exit_code == 1 and "project" in r.stderr
    r = CliRunner().invoke(app, ["quotas", "--provider", "azure", "--region", "eastus", "-o", str(tmp_path / "q.csv")])
    assert r.exit_code == 1 and "AZURE_SUBSCRIPTION_ID" in r.stderr
    assert not (tmp_path / "q.csv").exists()


def test_azure_credentials_that_fail_are_one_line():
    # a breaker ran `gpuopt quotas --provider azure` without Azure credentials: azure-identity's
    # ClientAuthenticationError ended in a 76-line traceback; it is MissingCredentials now (exit 3 in the CLI)
    from providers.base import MissingCredentials
    from providers.quotas import fetch_quotas

    class ClientAuthenticationError(Exception):
        pass
    ClientAuthenticationError.__module__ = "azure.core.exceptions"

    class NoCredential:
        def get_token(self, scope):
            raise ClientAuthenticationError("DefaultAzureCredential failed to retrieve a token\nmore lines")

    with pytest.raises(MissingCredentials, match="no usable Azure credentials .ClientAuthenticationError"):
        fetch_quotas("azure", ["eastus"], subscription_id="sub", credential=NoCredential())


def test_a_quota_row_that_matches_no_region_is_said(tmp_path):
    # found by a breaking test: "us-east1" (a typo of us-east-1) limited nothing, silently
    import json as _json

    from typer.testing import CliRunner

    from gpuopt.cli import app

    q = tmp_path / "q.csv"
    q.write_text("provider,region,family,limit,unit\naws,us-east1,L-DB2E81BA,0,vcpus\n")
    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "500",
                                 "--provider", "aws", "--region", "us-east-1", "--gpu", "L4", "--no-explain",
                                 "--quota", str(q), "--format", "json"])
    d = _json.loads(r.stdout)
    assert any("region 'us-east1' has no offer in the price data" in n for n in d["notes"])
