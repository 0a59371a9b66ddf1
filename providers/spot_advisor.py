"""AWS Spot Instance Advisor: how often Spot reclaimed each instance type in each region (issue 26, point 3).

The Advisor (https://aws.amazon.com/ec2/spot/instance-advisor/) publishes, per region, operating system and instance
type, a "frequency of interruption" bucket ``r`` (0..4) and the savings over on-demand ``s`` (%). Its page reads
them from one public JSON file, :data:`ADVISOR_URL` (no credentials), whose shape is::

    {"ranges": [{"index": 0, "label": "<5%", "dots": 0, "max": 5}, ..., {"index": 4, "label": ">20%", ...}],
     "spot_advisor": {"us-east-1": {"Linux": {"p5.48xlarge": {"s": 52, "r": 4}, ...}, "Windows": {...}}, ...},
     "instance_types": {"p5.48xlarge": {"emr": true, "cores": 192, "ram_gb": 2048.0}, ...},
     "global_rate": "<10%"}

The AWS page defines the bucket: "Frequency of interruption represents the rate at which Spot has reclaimed capacity
during the trailing month. They are in ranges of < 5%, 5-10%, 10-15%, 15-20% and >20%." The bounds of a bucket are
read from its label (``ranges[i].label``), never from ``ranges[i].max`` (5, 11, 16, 22, 100 in the copies seen:
display values that are not the label's bounds). The file carries no date: its ``as_of`` is the day it was fetched
(or the HTTP ``Last-Modified`` of the answer).

As every provider module: :func:`fetch_advisor` does the I/O only and returns the payload as the server sent it;
:func:`parse_advisor` is pure and turns a payload into :class:`SpotRisk` rows.

With AWS credentials, :func:`fetch_spot_placement_scores` / :func:`parse_spot_placement_scores` read EC2's Spot
placement scores (1..10 per region or zone for a given capacity): a signal of whether Spot capacity can be had now,
not an interruption rate; nothing here turns one into the other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

from gpuopt.kernel.errors import PriceDataError
from providers.base import FetchOptions, http_session

#: The Advisor's data, as its page (https://aws.amazon.com/ec2/spot/instance-advisor/) loads it; the same URL is
#: fetched by public tools (alexei-led/spotinfo Makefile ``SPOT_ADVISOR_URL``, among others).
ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"

#: The five buckets: index -> (label, low %, high %); high is None for the open ">20%" bucket. From the AWS page's
#: definition (module docstring); a payload whose ``ranges`` labels differ is refused (:func:`parse_advisor`).
BUCKETS: dict[int, tuple[str, float, float | None]] = {
    0: ("<5%", 0.0, 5.0),
    1: ("5-10%", 5.0, 10.0),
    2: ("10-15%", 10.0, 15.0),
    3: ("15-20%", 15.0, 20.0),
    4: (">20%", 20.0, None),
}

#: Instance families with GPUs (NVIDIA, and AMD in g4ad): p2..p6, g3..g6f, gr6. Not Gaudi (dl1), Trainium (trn) or
#: Inferentia (inf), which gpuopt does not plan. ``p6-b200.48xlarge`` style names included.
GPU_FAMILY = re.compile(r"^(p\d+[a-z]*|g\d+[a-z]*|gr\d+[a-z]*)(-[a-z0-9]+)?\.")


@dataclass(frozen=True)
class SpotRisk:
    """One Advisor entry: the share of Spot capacity of one type reclaimed in one region in the trailing month.

    Attributes:
        provider: "aws".
        region: AWS region code.
        instance_type: EC2 instance type.
        os: "Linux" or "Windows" (the Advisor's key).
        bucket: the Advisor's index 0..4 (:data:`BUCKETS`).
        low_pct, high_pct: the bucket's bounds, % of capacity reclaimed per month; high_pct None for ">20%".
        as_of: date (YYYY-MM-DD) the data was fetched or published.
        source: where it came from (URL or repository@commit path).
    """

    provider: str
    region: str
    instance_type: str
    os: str
    bucket: int
    low_pct: float
    high_pct: float | None
    as_of: str
    source: str


def fetch_advisor(options: FetchOptions | None = None) -> tuple[bytes, str | None]:
    """GET the Advisor's JSON (I/O only).

    Args:
        options: timeouts, retries and deadline (providers.base.FetchOptions); ``options.endpoints["aws_spot_advisor"]``
            overrides :data:`ADVISOR_URL` (tests point it at 127.0.0.1).
    Returns:
        (the body exactly as sent, the ``Last-Modified`` header or None).
    Raises:
        requests.RequestException on a network error or an HTTP error status (after the session's retries).
    """
    options = options or FetchOptions()
    url = options.endpoints.get("aws_spot_advisor", ADVISOR_URL)
    with http_session(options) as session:
        resp = session.get(url, timeout=options.timeout_s)
        resp.raise_for_status()
        return resp.content, resp.headers.get("Last-Modified")


def _check_ranges(ranges: Any) -> None:
    if not isinstance(ranges, list):
        raise PriceDataError("spot advisor: no 'ranges' list")
    labels = {}
    for r in ranges:
        if isinstance(r, dict) and isinstance(r.get("index"), int):
            labels[r["index"]] = str(r.get("label", "")).replace(" ", "")
    expected = {i: b[0] for i, b in BUCKETS.items()}
    if labels != expected:
        raise PriceDataError(f"spot advisor: interruption ranges changed: {labels} (expected {expected}); "
                             "not read rather than mislabelled")


def parse_advisor(payload: bytes | str | dict, *, as_of: str, source: str = ADVISOR_URL,
                  os_names: Iterable[str] = ("Linux",), gpu_only: bool = False) -> list[SpotRisk]:
    """The Advisor's entries as :class:`SpotRisk` rows (pure).

    Args:
        payload: the JSON (bytes, text or already decoded).
        as_of: the date the data held (YYYY-MM-DD).
        source: written into every row.
        os_names: the Advisor's OS keys to read ("Linux", "Windows").
        gpu_only: keep only GPU instance families (:data:`GPU_FAMILY`).
    Returns:
        Rows sorted by region, instance type, OS. An entry whose ``r`` is not an index 0..4 is left out.
    Raises:
        PriceDataError: not JSON, no ``spot_advisor`` object, ``ranges`` labels other than :data:`BUCKETS`', or no
            entry at all.
    """
    if isinstance(payload, (bytes, str)):
        try:
            payload = json.loads(payload)
        except ValueError as e:
            raise PriceDataError(f"spot advisor: not JSON: {e}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("spot_advisor"), dict):
        raise PriceDataError("spot advisor: no 'spot_advisor' object")
    _check_ranges(payload.get("ranges"))
    rows: list[SpotRisk] = []
    for region, by_os in payload["spot_advisor"].items():
        if not isinstance(by_os, dict):
            continue
        for os_name in os_names:
            types = by_os.get(os_name)
            if not isinstance(types, dict):
                continue
            for itype, entry in types.items():
                if gpu_only and not GPU_FAMILY.match(itype):
                    continue
                r = entry.get("r") if isinstance(entry, dict) else None
                if isinstance(r, bool) or not isinstance(r, int) or r not in BUCKETS:
                    continue
                _, low, high = BUCKETS[r]
                rows.append(SpotRisk("aws", str(region), str(itype), os_name, r, low, high, as_of, source))
    if not rows:
        raise PriceDataError("spot advisor: no interruption entry in the payload")
    rows.sort(key=lambda x: (x.region, x.instance_type, x.os))
    return rows


# ------------------------------------------------------------------------------ Spot placement scores (credentials)


@dataclass(frozen=True)
class PlacementScore:
    """One EC2 Spot placement score: how likely a Spot request of the asked capacity succeeds now, 1 (unlikely) to
    10 (highly likely), per region or per zone (``zone_id`` empty for a regional score). A capacity signal at the
    time of the call, not an interruption rate (EC2 API GetSpotPlacementScores)."""

    region: str
    zone_id: str
    score: int


def fetch_spot_placement_scores(instance_types: Iterable[str], target_capacity: int, *,
                                regions: Iterable[str] | None = None, single_az: bool = False,
                                options: FetchOptions | None = None) -> list[dict[str, Any]]:
    """Every page of EC2 ``get_spot_placement_scores`` (I/O only; needs AWS credentials and the
    ``ec2:GetSpotPlacementScores`` permission).

    Args:
        instance_types: the types that may fill the request (the API takes 1..many).
        target_capacity: instances wanted (TargetCapacityUnitType "units").
        regions: regions to score (all when None).
        single_az: score zones (the whole capacity in one zone) instead of regions.
        options: ``options.clients["ec2"]`` is used when given (tests: a Stubber), else a client of
            ``options.profile`` in us-east-1; ``options.max_pages`` caps the pages.
    Returns:
        The pages as returned (ResponseMetadata dropped).
    Raises:
        MissingCredentials: no AWS credentials. TruncatedPriceList: the page cap was reached with a token pending.
        ProviderError: any other API or connection error (one line: the CLI exits 3).
    """
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    from gpuopt.kernel.errors import ProviderError
    from providers.base import MissingCredentials, TruncatedPriceList

    options = options or FetchOptions()
    ec2 = options.clients.get("ec2")
    if ec2 is None:
        from providers.aws import make_client

        ec2 = make_client("ec2", "us-east-1", options)
    kw: dict[str, Any] = {"InstanceTypes": list(instance_types), "TargetCapacity": int(target_capacity),
                          "TargetCapacityUnitType": "units", "SingleAvailabilityZone": bool(single_az),
                          "MaxResults": 1000}
    if regions is not None:
        kw["RegionNames"] = list(regions)
    pages: list[dict[str, Any]] = []
    while True:
        if options.max_pages is not None and len(pages) >= options.max_pages:
            raise TruncatedPriceList(f"get_spot_placement_scores: {len(pages)} pages, the cap, with a token pending")
        try:
            page = ec2.get_spot_placement_scores(**kw)
        except NoCredentialsError as e:
            raise MissingCredentials(f"Spot placement scores need AWS credentials: {e}") from None
        except (ClientError, BotoCoreError) as e:  # access denied, a bad type or region, no network: one line
            raise ProviderError(f"EC2 GetSpotPlacementScores failed: {e}") from None
        pages.append({k: v for k, v in page.items() if k != "ResponseMetadata"})
        token = page.get("NextToken")
        if not token:
            return pages
        kw["NextToken"] = token


def parse_spot_placement_scores(pages: Iterable[dict[str, Any]]) -> list[PlacementScore]:
    """The scores of ``get_spot_placement_scores`` pages (pure), sorted best first, then by region and zone. An
    entry without a region or an integer score 1..10 is left out."""
    out = []
    for page in pages:
        for e in page.get("SpotPlacementScores") or []:
            score = e.get("Score")
            if not e.get("Region") or isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 10:
                continue
            out.append(PlacementScore(str(e["Region"]), str(e.get("AvailabilityZoneId") or ""), score))
    out.sort(key=lambda p: (-p.score, p.region, p.zone_id))
    return out
