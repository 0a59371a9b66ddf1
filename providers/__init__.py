"""Price sources: one module per source; ``parse_*`` functions are pure, file/network reading is kept apart.

:data:`IMPORTERS` is the registry of file importers: name -> where its parse function lives and which
``gpuopt prices import --input-format`` values it accepts. Entries are resolved lazily (:meth:`Importer.load`), so importing
this package stays cheap (no pandas). ``tests/test_providers_registry.py`` fails when a module here defines a
``parse_*`` function that is not registered.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable


@dataclass(frozen=True)
class Importer:
    """One registered importer.

    Attributes:
        name: registry key.
        module, function: where the pure parse function lives.
        formats: the ``--input-format`` values it accepts (``gpuopt prices import FILE --input-format ...``).
        description: what files it reads.
        kind: "file" (an importer users call with --input-format) or "api" (a pure parse step of a live adapter, fed with
            API payloads by the refresh; it may accept no file format).
    """

    name: str
    module: str
    function: str
    formats: tuple[str, ...]
    description: str
    kind: str = "file"

    def load(self) -> Callable[..., Any]:
        """The parse function (imports its module on first use)."""
        return getattr(import_module(self.module), self.function)


IMPORTERS: dict[str, Importer] = {
    "skypilot": Importer("skypilot", "providers.skypilot", "parse_skypilot_csv", ("skypilot",),
                         "SkyPilot catalog vms.csv (AWS, Azure, GCP, Lambda): on-demand and spot"),
    "ec2instances": Importer("ec2instances", "providers.ec2instances", "parse_instances_json", ("ec2instances",),
                             "ec2instances.info instances.json: Linux on-demand and Standard reserved rates"),
    "offers": Importer("offers", "providers.offers_csv", "parse_offers_csv", ("offers",),
                       "a plain offers CSV with the OFFER_COLUMNS (other clouds, on-prem, negotiated prices)"),
}


# --- live adapters' parse functions: aws (providers/aws.py fetches; parsers in aws_prices, aws_import, aws_parse) ---
IMPORTERS.update({
    "aws-price-list": Importer("aws-price-list", "providers.aws_prices", "parse_price_list", ("aws-price-list",),
                               "AWS Pricing API get_products JSON (a response, a list of pages or of PriceList "
                               "entries): Linux on-demand and every reserved term, upfront fee kept apart"),
    "aws-bulk-csv": Importer("aws-bulk-csv", "providers.aws_import", "parse_bulk_csv", ("aws-bulk-csv",),
                             "AWS bulk offer file for AmazonEC2 (index.csv: 5 metadata lines, then the header): "
                             "the same rows and filters as aws-price-list"),
    "aws-instance-types": Importer("aws-instance-types", "providers.aws_parse", "parse_instance_types", (),
                                   "EC2 describe_instance_types pages -> GPU facts per instance type (fractional "
                                   "GPUs as floats, memory of one whole GPU)", kind="api"),
    "aws-spot-history": Importer("aws-spot-history", "providers.aws_parse", "parse_spot_history", (),
                                 "EC2 describe_spot_price_history pages -> newest Linux/UNIX price per type and zone",
                                 kind="api"),
    "aws-region": Importer("aws-region", "providers.aws_parse", "parse_region", (),
                           "AWS live adapter: one region's price list + instance types + spot history -> offers",
                           kind="api"),
    "aws-bulk-region": Importer("aws-bulk-region", "providers.aws_bulk", "parse_region", (),
                                "AWS keyless refresh: one region's public Price List files (EC2 CSV, Savings Plans "
                                "JSON) -> on-demand, reserved and savings plan offers, spot rows kept as they were",
                                kind="api"),
})

# --- not offers: the AWS Spot Instance Advisor's interruption buckets (providers/spot_advisor.py; read by
# pricing_cache.spot_risk) ---
IMPORTERS.update({
    "aws-spot-advisor": Importer("aws-spot-advisor", "providers.spot_advisor", "parse_advisor", (),
                                 "AWS Spot Instance Advisor spot-advisor-data.json -> interruption bucket per region, "
                                 "OS and instance type (not offers)", kind="api"),
    "aws-spot-placement": Importer("aws-spot-placement", "providers.spot_advisor", "parse_spot_placement_scores", (),
                                   "EC2 get_spot_placement_scores pages -> score 1..10 per region or zone "
                                   "(credentials; not offers)", kind="api"),
    "azure-spot-eviction": Importer("azure-spot-eviction", "providers.azure_spot", "parse_eviction_rows", (),
                                    "Azure Resource Graph SpotResources eviction rates -> bucket per region and VM "
                                    "size (credentials; not offers)", kind="api"),
})
# --- live adapters' parse functions: azure (providers/azure.py) ---
IMPORTERS.update({
    "azure-retail": Importer("azure-retail", "providers.azure", "parse_retail_items", ("azure-retail",),
                             "Azure Retail Prices API JSON (a response, a list of responses or a list of items): "
                             "Linux on-demand, spot and reserved GPU VM prices"),
    "azure-resource-skus": Importer("azure-resource-skus", "providers.azure", "parse_resource_skus", (),
                                    "Azure Compute resource SKUs (sku.as_dict()): vCPUs, memory, restricted sizes",
                                    kind="api"),
    "azure-region": Importer("azure-region", "providers.azure", "parse_region", (),
                             "Azure live adapter: one region's Retail Prices pages + resource SKUs -> offers",
                             kind="api"),
})

# --- live adapters' parse functions: gcp (providers/gcp.py) ---
IMPORTERS.update({
    "gcp-skus": Importer("gcp-skus", "providers.gcp", "parse_skus", ("gcp-skus",),
                         "Cloud Billing Catalog Compute Engine SKUs (JSON: a services.skus.list answer, a list of "
                         "them, or a list of SKUs): GPU, core and RAM prices per region and usage type"),
    "gcp-region": Importer("gcp-region", "providers.gcp", "parse_region", (),
                           "GCP live adapter: one region's SKU pages -> machine type offers (core + RAM + GPUs)",
                           kind="api"),
})


def importer_for_format(fmt: str) -> Importer:
    """The importer that accepts ``fmt``.

    Raises:
        gpuopt.kernel.errors.InputError: unknown format (the message lists the accepted ones).
    """
    for imp in IMPORTERS.values():
        if fmt in imp.formats:
            return imp
    from gpuopt.kernel.errors import InputError

    accepted = sorted(f for imp in IMPORTERS.values() for f in imp.formats)
    raise InputError("format", f"no importer for '{fmt}'", accepted=", ".join(accepted))
