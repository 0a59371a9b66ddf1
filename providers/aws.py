"""AWS live price adapter: the Pricing API (on-demand + reserved), EC2 ``describe_instance_types`` (GPU facts) and
EC2 ``describe_spot_price_history`` (spot), following the contract of :mod:`providers.base`.

Functions
=========

* :func:`list_regions`, :func:`fetch_region` (I/O only) and :func:`parse_region` (pure) — the live adapter.
* :func:`parse_price_list` — Pricing API ``PriceList`` entries -> one row per (instance type, region, term).
* :func:`parse_bulk_csv` — the AWS bulk offer file ``AmazonEC2/.../index.csv`` -> the same rows.
* :func:`parse_instance_types` — ``describe_instance_types`` pages -> GPU facts per instance type.
* :func:`parse_spot_history` — ``describe_spot_price_history`` pages -> newest Linux price per (type, zone).
* :func:`import_file` — ``gpuopt prices import FILE --input-format aws-price-list|aws-bulk-csv`` (offers + skipped).

Files
=====

Fetch apart from parse, imports one way (each file imports only those below it):

* ``providers/aws.py`` (this module) — the network: clients, retries and the deadline, regions, paging,
  :func:`fetch_region`, :func:`fetch_savings_plans_rates`; the adapter's public names, whichever file defines them,
  are importable from here (``__all__``), as the registry and the refresh import them.
* ``providers/aws_import.py`` — the price files: :func:`parse_bulk_csv`, :func:`import_file`.
* ``providers/aws_parse.py`` — pure: GPU facts, spot, savings-plan rates, the offers of a region
  (:func:`parse_region`); its module doc gives the rules of GPU facts, spot, offers and savings plans.
* ``providers/aws_prices.py`` — pure: price list entries -> price rows (:func:`parse_price_list`); its module doc
  gives the rules of products, terms and regions.

Fetching (:func:`fetch_region`)
===============================

Clients: ``options.clients`` may hold pre-built clients (tests inject botocore ``Stubber``-wrapped or moto
clients); missing ones are built from ``boto3.Session(profile_name=options.profile)`` (the standard credential
chain) with :func:`client_config`. Keys (see :data:`CLIENT_KEYS`):

* ``"pricing"`` — the Pricing API client (region us-east-1). One is built on first use and stored back under this
  key, so every region's worker thread shares it (one connection pool and one retry quota for the Pricing API).
* ``"ec2:<region>"`` — the EC2 client of that region (``describe_instance_types``, ``describe_spot_price_history``).
* ``"ec2"`` — the EC2 client :func:`list_regions` calls ``describe_regions`` on (else ``"ec2:us-east-1"``, else one
  built for us-east-1).
* ``"savingsplans"`` — the Savings Plans client (global service, built for us-east-1 and shared like "pricing").

Retries are botocore's own (:func:`client_config`): ``retries={"mode": "standard", "total_max_attempts":
options.max_attempts}`` (the Pricing client's mode is PRICING_RETRY_MODE; ``total_max_attempts`` counts the first
attempt, as ``FetchOptions.max_attempts`` does, while botocore's ``max_attempts`` key counts retries only),
``connect_timeout``/``read_timeout`` = ``options.timeout_s``. Throttling (ThrottlingException,
RequestLimitExceeded...) and 5xx are retried with botocore's exponential backoff and jitter, within the call's
budget of timeout x attempts seconds (:func:`bound_retries`, the REST adapters' rule). Paging uses botocore's
paginators; :func:`_all_pages` stops with ``TruncatedPriceList(next=NextToken)`` when ``options.max_pages`` pages
were read and a NextToken is still pending, or when a NextToken comes back a second time (a cycle; botocore alone
only catches the same token twice in a row) — never a shorter list (PRICE_FAULTS BUG-08).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import time
from typing import Any, Iterable

from gpuopt.kernel.errors import InputError, ProviderError
from providers.aws_import import import_file, parse_bulk_csv
from providers.aws_parse import (FACT_COLUMNS, SAVINGS_PLAN_COLUMNS, SAVINGS_PLAN_TYPES, SPOT_COLUMNS,
                                 parse_instance_types, parse_region, parse_spot_history, savings_plans_rates_frame)
from providers.aws_prices import (LINUX_OPERATION, NAME, PAYMENT_OPTIONS, SOURCE_BULK, SOURCE_PRICING,
                                  SOURCE_SAVINGS_PLANS, SOURCE_SPOT, SOURCE_TYPES, parse_price_list,
                                  products_from_entries, region_for_location, variant_reason)
from providers.base import FetchOptions, InvalidCredentials, MissingCredentials, RegionSkipped, TruncatedPriceList

#: The Pricing API's endpoint region (it also answers in eu-central-1 and ap-south-1).
PRICING_REGION = "us-east-1"

#: botocore retry mode of the Pricing client. "standard": backoff with jitter on throttling and 5xx. ("adaptive"
#: would add a client-side rate limiter, which after one throttle drops the shared client to ~0.5 requests/s.)
PRICING_RETRY_MODE = "standard"

#: The keys of FetchOptions.clients this adapter reads (see the module docstring).
CLIENT_KEYS = ("pricing", "ec2:<region>", "ec2", "savingsplans")

#: The Savings Plans API is global (botocore's model: ``globalEndpoint`` savingsplans.amazonaws.com); its client is
#: built for this region.
SAVINGS_PLANS_REGION = "us-east-1"
#: Rates per request page (the model's ``PageSize`` maximum) and usage types per request (a chunk is paged to its end).
SAVINGS_PLANS_PAGE_SIZE = 1000
SAVINGS_PLANS_USAGE_TYPES_PER_CALL = 100
#: Pricing API filters of :func:`fetch_region` (regionCode and the instance family/type are added per call).
PRICING_FILTERS: tuple[tuple[str, str], ...] = (
    ("operatingSystem", "Linux"),
    ("tenancy", "Shared"),
    ("preInstalledSw", "NA"),
    ("capacitystatus", "Used"),
    ("licenseModel", "No License required"),
)
GPU_INSTANCE_FAMILY = "GPU instance"

#: EC2 error code meaning "this region is not enabled for the account" and nothing else.
REGION_NOT_ENABLED = ("OptInRequired",)
#: Error codes EC2 answers both for a region the account has not enabled and for credentials it does not accept:
#: :func:`_region_or_credentials` asks ``describe_regions`` in PRICING_REGION (always enabled) which one it is.
REGION_OR_CREDENTIALS = ("AuthFailure", "UnrecognizedClientException")
#: Error codes meaning the credentials themselves were refused, in any region and service (STS/IAM-style
#: InvalidClientTokenId, a wrong secret key: SignatureDoesNotMatch, an expired session token: ExpiredToken...).
CREDENTIALS_REFUSED = ("InvalidClientTokenId", "SignatureDoesNotMatch", "ExpiredToken", "ExpiredTokenException",
                       "InvalidAccessKeyId", "InvalidToken", "UnrecognizedClientException", "AuthFailure")

CREDENTIALS_HOWTO = ("AWS credentials not found: run `aws configure` (or `aws sso login --profile NAME` and pass "
                     "--profile NAME), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; the Pricing API and EC2 "
                     "need pricing:GetProducts, ec2:DescribeRegions, ec2:DescribeInstanceTypes, "
                     "ec2:DescribeSpotPriceHistory (and savingsplans:DescribeSavingsPlansOfferingRates for savings "
                     "plans)")

_REGION_RE = re.compile(r"^[a-z]{2,4}(-[a-z]+)+-\d+$")


# ----------------------------------------------------------------------------------------------------------------
# I/O: clients, regions, fetch
# ----------------------------------------------------------------------------------------------------------------

_CLIENT_LOCK = threading.Lock()


def client_config(options: FetchOptions, mode: str = "standard"):
    """botocore Config: retry ``mode`` ("standard" | "adaptive") with ``total_max_attempts`` =
    options.max_attempts (first attempt included), connect/read timeouts = options.timeout_s."""
    from botocore.config import Config

    return Config(retries={"mode": mode, "total_max_attempts": max(1, int(options.max_attempts))},
                  connect_timeout=options.timeout_s, read_timeout=options.timeout_s)


def _session(options: FetchOptions):
    import boto3
    from botocore.exceptions import ProfileNotFound

    try:
        return boto3.Session(profile_name=options.profile)
    except ProfileNotFound as e:
        raise MissingCredentials(f"AWS profile '{options.profile}' not found ({e}). {CREDENTIALS_HOWTO}") from None


def bound_retries(client, options: FetchOptions):
    """Keep every call of ``client`` — retries and botocore's backoff waits included — within
    ``providers.base.call_budget_s(options)`` (timeout x attempts, as the REST adapters; issue 13). Returns the
    client.

    botocore's standard mode waits up to 20 s between attempts (random x 2^attempt), so 5 attempts could wait a
    minute on their own. A ``needs-retry`` handler registered first checks, when botocore is about to retry (a
    retryable error and attempts left: botocore's own StandardRetryConditions), whether the longest wait it may pick
    (min(20, 2^(attempts-1)) s) would end after the budget; if so the call ends with ProviderError naming the error
    code, the attempts made and the budget, instead of sleeping past it. Non-retryable errors are left as they are.

    Under the refresh's deadline (``options.deadline_s``): no call starts after it (DeadlineReached, from a
    ``before-call`` handler), a retry whose longest wait would pass it is not made (DeadlineReached), and the
    connect/read timeouts of every attempt are capped at the time left (:func:`providers.base.deadline_timeout` in
    the client's connection pools).
    """
    from botocore.retries import standard

    from providers.base import DeadlineReached, call_budget_s, check_deadline, deadline_timeout, remaining_s

    budget = call_budget_s(options)
    attempts_max = max(1, int(options.max_attempts))
    svc = client.meta.service_model.service_id.hyphenize()
    adapter = standard.RetryEventAdapter()
    conditions = standard.StandardRetryConditions(max_attempts=attempts_max)

    def started(context=None, model=None, **_kw) -> None:
        check_deadline(options, f"aws {getattr(model, 'name', 'call')}")
        if context is not None:
            context["gpuopt_call_started"] = time.monotonic()

    def guard(attempts=1, request_dict=None, response=None, caught_exception=None, operation=None, **kw) -> None:
        t0 = ((request_dict or {}).get("context") or {}).get("gpuopt_call_started")
        if t0 is None:
            return None
        ctx = adapter.create_retry_context(attempts=attempts, request_dict=request_dict, response=response,
                                           caught_exception=caught_exception, operation=operation, **kw)
        if not conditions.is_retryable(ctx):
            return None
        longest = min(20.0, 2.0 ** (attempts - 1))
        elapsed = time.monotonic() - t0
        rem = remaining_s(options)
        if elapsed + longest <= budget and (rem is None or longest < rem):
            return None
        code = (((response or (None, {}))[1] or {}).get("Error") or {}).get("Code") if response else None
        what = code or (type(caught_exception).__name__ if caught_exception is not None else "an error")
        name = getattr(operation, "name", "call")
        if rem is not None and longest >= rem:
            raise DeadlineReached(f"aws {name}: {what} after {attempts} attempt(s); another retry could wait "
                                  f"{longest:g} s, more than the {max(rem, 0):.1f} s left before the refresh's "
                                  f"deadline (--deadline {float(options.deadline_s or 0):g} s)")
        raise ProviderError(f"aws {name}: {what} after {attempts} attempt(s) in {elapsed:.1f} s; another retry "
                            f"could wait {longest:g} s, past the call's budget of {budget:g} s (--timeout "
                            f"{options.timeout_s:g} s x --attempts {attempts_max}): try again later")

    client.meta.events.register(f"before-call.{svc}", started, unique_id=f"gpuopt-call-start-{svc}")
    client.meta.events.register_first(f"needs-retry.{svc}", guard, unique_id=f"gpuopt-retry-budget-{svc}")
    try:  # botocore internals: the pools are made lazily from these settings (without them the calls still end
        # within --timeout of the deadline)
        http = client._endpoint.http_session
        http._timeout = http._manager.connection_pool_kw["timeout"] = deadline_timeout(options)
    except (AttributeError, KeyError, TypeError):
        pass
    return client


def make_client(service: str, region: str, options: FetchOptions, session: Any = None):
    """A boto3 client with :func:`client_config` (retry mode PRICING_RETRY_MODE for ``pricing``, standard for the
    others), its calls bounded by :func:`bound_retries`."""
    session = session if session is not None else _session(options)
    mode = PRICING_RETRY_MODE if service == "pricing" else "standard"
    return bound_retries(session.client(service, region_name=region, config=client_config(options, mode)), options)


def _client(options: FetchOptions, key: str, service: str, region: str, *, share: bool = False):
    c = options.clients.get(key)
    if c is not None:
        return c
    c = make_client(service, region, options)
    if share:
        with _CLIENT_LOCK:
            c = options.clients.setdefault(key, c)
    return c


def _all_pages(client, operation: str, options: FetchOptions, what: str, **kwargs) -> list[dict[str, Any]]:
    """Every page of ``operation`` through botocore's paginator (ResponseMetadata dropped). Raises
    TruncatedPriceList(next=token) at the page cap with a token pending, or when a token comes back (BUG-08)."""
    from botocore.exceptions import PaginationError

    pages: list[dict[str, Any]] = []
    seen: set[str] = set()
    cap = options.max_pages
    try:
        for page in client.get_paginator(operation).paginate(**kwargs):
            page = {k: v for k, v in page.items() if k != "ResponseMetadata"}
            pages.append(page)
            token = page.get("NextToken")
            if not token:
                continue
            if token in seen:
                raise TruncatedPriceList(f"aws {what}: NextToken repeated after {len(pages)} pages (a page cycle)",
                                         next=token)
            seen.add(token)
            if cap is not None and len(pages) >= cap:
                raise TruncatedPriceList(f"aws {what}: page cap max_pages={cap} reached with more pages left",
                                         next=token)
    except PaginationError as e:  # botocore's own guard (the same token twice in a row)
        raise TruncatedPriceList(f"aws {what}: {e}") from None
    return pages


def list_regions(options: FetchOptions) -> list[str]:
    """``options.regions`` (validated: AWS region code syntax; codes botocore does not know are kept with a
    progress note), else the account's enabled regions: EC2 ``describe_regions(AllRegions=True)`` keeping
    OptInStatus ``opt-in-not-required`` / ``opted-in``; each ``not-opted-in`` region gets a progress note. An
    explicitly asked region that is not enabled raises RegionSkipped in :func:`fetch_region`."""
    if options.regions:
        out: list[str] = []
        bad = [r for r in options.regions if not _REGION_RE.match(str(r))]
        if bad:
            raise InputError("regions", f"not AWS region codes: {bad}", accepted="codes like us-east-1, eu-west-2")
        known = set()
        try:
            import boto3

            s = boto3.Session()
            for part in ("aws", "aws-cn", "aws-us-gov"):
                known.update(s.get_available_regions("ec2", partition_name=part))
        except Exception:  # pragma: no cover - botocore data missing
            known = set()
        for r in options.regions:
            if r in out:
                continue
            if known and r not in known:
                options.say(NAME, r, f"{r} is not in botocore's region list (new region or typo?); trying it")
            out.append(r)
        return out
    from botocore.exceptions import ClientError, NoCredentialsError

    ec2 = options.clients.get("ec2") or options.clients.get("ec2:us-east-1")
    try:
        if ec2 is None:
            ec2 = make_client("ec2", "us-east-1", options)
        resp = ec2.describe_regions(AllRegions=True)
    except NoCredentialsError:
        raise MissingCredentials(CREDENTIALS_HOWTO) from None
    except ClientError as e:
        code = _error_code(e)
        if code in CREDENTIALS_REFUSED:
            raise _refused(code, e, f"describe_regions in {PRICING_REGION}") from None
        raise
    out = []
    for r in sorted(resp.get("Regions", []), key=lambda r: r["RegionName"]):
        name, status = r["RegionName"], r.get("OptInStatus", "opt-in-not-required")
        if status in ("opt-in-not-required", "opted-in"):
            out.append(name)
        else:
            options.say(NAME, name, f"skipped: region not enabled for this account (OptInStatus {status})")
    return out


def _error_code(exc) -> str:
    return str((getattr(exc, "response", None) or {}).get("Error", {}).get("Code", "") or "")


def _refused(code: str, exc, where: str) -> InvalidCredentials:
    """The one-line error for credentials AWS refused (``code`` in CREDENTIALS_REFUSED)."""
    from gpuopt.kernel.redact import scrub

    detail = str((getattr(exc, "response", None) or {}).get("Error", {}).get("Message", "") or "")
    return InvalidCredentials(scrub(
        f"aws: the AWS credentials were refused ({code}{': ' + ' '.join(detail.split())[:160] if detail else ''}) "
        f"on {where}: they are invalid, expired or for another partition; check them with `aws sts "
        "get-caller-identity` (and --profile), renew a session with `aws sso login`, or set AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY"))


def _region_or_credentials(region: str, code: str, exc, options: FetchOptions) -> ProviderError:
    """What an AuthFailure / UnrecognizedClientException from ``region``'s EC2 means (EC2 answers both for a region
    the account has not enabled and for credentials it refuses): ``describe_regions(RegionNames=[region],
    AllRegions=True)`` in PRICING_REGION, which every account has, tells. Returns the error to raise:
    InvalidCredentials when that call refuses the credentials too; RegionSkipped when the region's OptInStatus is
    ``not-opted-in``; else ProviderError saying the credentials are refused in this region although it is enabled
    (an IAM or SCP region condition)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    ec2 = options.clients.get("ec2") or options.clients.get(f"ec2:{PRICING_REGION}")
    try:
        if ec2 is None:
            ec2 = make_client("ec2", PRICING_REGION, options)
        resp = ec2.describe_regions(RegionNames=[region], AllRegions=True)
    except NoCredentialsError:
        return MissingCredentials(CREDENTIALS_HOWTO)
    except ClientError as e:
        other = _error_code(e)
        if other in CREDENTIALS_REFUSED:
            return _refused(other, e, f"describe_regions in {PRICING_REGION} (after {code} in {region})")
        return ProviderError(f"aws {region}: {code} from EC2, and describe_regions in {PRICING_REGION} failed too "
                             f"({other or type(e).__name__}): the region may not be enabled or the credentials may "
                             "be refused")
    except (BotoCoreError, ProviderError) as e:
        return ProviderError(f"aws {region}: {code} from EC2; checking the region with describe_regions failed: "
                             f"{type(e).__name__}: {e}")
    status = next((r.get("OptInStatus", "") for r in resp.get("Regions", []) if r.get("RegionName") == region), None)
    if status is None or status == "not-opted-in":
        return RegionSkipped(f"aws {region}: region not enabled for this account ({code}; OptInStatus "
                             f"{status or 'unknown: not listed'})")
    return ProviderError(f"aws {region}: the credentials are refused in this region ({code}) although it is enabled "
                         f"for the account (OptInStatus {status}): an IAM or SCP condition on aws:RequestedRegion?")


def _spot_window() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def wants_savings_plans(options: FetchOptions) -> bool:
    """True when the refresh asks for savings-plan rates: ``options.savings_plans`` (read with getattr, so the
    adapter works with a FetchOptions that has no such field yet: then False)."""
    return bool(getattr(options, "savings_plans", False))


def usage_types_for(price_list: Iterable[Any], instance_types: Iterable[str] | None = None) -> dict[str, str]:
    """Instance type -> its Linux shared-tenancy usage type, from Pricing API ``get_products`` entries (pure).

    The usage type is the product's ``usagetype`` attribute, region prefix included ("BoxUsage:p5.48xlarge" in
    us-east-1, "USW2-BoxUsage:p5.48xlarge" in us-west-2): the same string the Savings Plans API files rates under, so
    it is read from AWS's own price list, never built from a prefix table. Only products of the priced variant
    (Linux, Shared, NA, No License required, capacitystatus Used: :data:`VARIANT`) with operation RunInstances and a
    BoxUsage usage type count.

    Args:
        price_list: PriceList entries (JSON strings or dicts), as in fetch_region's ``price_list``.
        instance_types: keep only these types (default: every type in the entries).
    """
    keep = None if instance_types is None else set(instance_types)
    out: dict[str, str] = {}
    for prod in products_from_entries(list(price_list)):
        a = prod.attrs
        itype, usage = a.get("instanceType", ""), a.get("usagetype", "")
        if not itype or (keep is not None and itype not in keep) or "BoxUsage:" not in usage:
            continue
        if variant_reason(a, ("Linux",)) is not None or a.get("operation", LINUX_OPERATION) != LINUX_OPERATION:
            continue
        out.setdefault(itype, usage)
    return dict(sorted(out.items()))


def savings_plans_request(region: str, usage_types: Iterable[str]) -> dict[str, Any]:
    """The describe_savings_plans_offering_rates parameters :func:`fetch_savings_plans_rates` sends (first page).

    savingsPlanTypes Compute and EC2Instance, products EC2, serviceCodes AmazonEC2, the given usageTypes, operations
    RunInstances (Linux/UNIX), the three payment options, filter region = ``region``, maxResults 1000. The request
    has no duration field (botocore's model): both terms come back and are told apart by ``durationSeconds``."""
    return {"savingsPlanTypes": list(SAVINGS_PLAN_TYPES), "products": ["EC2"], "serviceCodes": ["AmazonEC2"],
            "usageTypes": list(usage_types), "operations": [LINUX_OPERATION],
            "savingsPlanPaymentOptions": list(PAYMENT_OPTIONS), "filters": [{"name": "region", "values": [region]}],
            "maxResults": SAVINGS_PLANS_PAGE_SIZE}


def fetch_savings_plans_rates(region: str, usage_types: Iterable[str], options: FetchOptions,
                              client: Any = None) -> list[dict[str, Any]]:
    """I/O: every page of Savings Plans offering rates of ``usage_types`` in ``region`` (usable on its own).

    Calls ``savingsplans.describe_savings_plans_offering_rates`` (:func:`savings_plans_request`) for each chunk of
    :data:`SAVINGS_PLANS_USAGE_TYPES_PER_CALL` usage types and follows ``nextToken`` to the end (botocore has no
    paginator for this operation); retries are botocore's (:func:`client_config`).

    Args:
        region: the AWS region whose rates are asked for (the ``region`` filter).
        usage_types: usage types as the price list names them (:func:`usage_types_for`); none: no call, [].
        options: max_pages (per chunk), retries, timeouts; ``options.clients["savingsplans"]`` when set.
        client: a savingsplans client to use (else options.clients["savingsplans"], else one built in
            SAVINGS_PLANS_REGION and shared through options.clients).

    Returns:
        The response pages, ResponseMetadata dropped: ``[{"searchResults": [...], "nextToken": ...}, ...]``.

    Raises:
        TruncatedPriceList: ``options.max_pages`` pages read with a nextToken pending, or a nextToken that comes back
            (a cycle): never a shorter list (PRICE_FAULTS BUG-08).
        MissingCredentials: no credentials in the standard chain.
        ProviderError: the API refused the call (e.g. AccessDenied: the credentials need
            savingsplans:DescribeSavingsPlansOfferingRates), after botocore's retries.
    """
    from botocore.exceptions import ClientError, NoCredentialsError

    usage = list(dict.fromkeys(usage_types))
    if not usage:
        return []
    if client is None:
        client = _client(options, "savingsplans", "savingsplans", SAVINGS_PLANS_REGION, share=True)
    pages: list[dict[str, Any]] = []
    cap = options.max_pages
    try:
        for i in range(0, len(usage), SAVINGS_PLANS_USAGE_TYPES_PER_CALL):
            params = savings_plans_request(region, usage[i:i + SAVINGS_PLANS_USAGE_TYPES_PER_CALL])
            seen: set[str] = set()
            n = 0
            while True:
                page = client.describe_savings_plans_offering_rates(**params)
                page = {k: v for k, v in page.items() if k != "ResponseMetadata"}
                pages.append(page)
                n += 1
                token = page.get("nextToken")
                if not token:
                    break
                if token in seen or token == params.get("nextToken"):
                    raise TruncatedPriceList(f"aws {region} savings-plan rates: nextToken repeated after {n} pages "
                                             "(a page cycle)", next=token)
                seen.add(token)
                if cap is not None and n >= cap:
                    raise TruncatedPriceList(f"aws {region} savings-plan rates: page cap max_pages={cap} reached "
                                             "with more pages left", next=token)
                params = {**params, "nextToken": token}
    except NoCredentialsError:
        raise MissingCredentials(CREDENTIALS_HOWTO) from None
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "?")
        if code in CREDENTIALS_REFUSED:
            raise _refused(code, e, f"describe_savings_plans_offering_rates for {region}") from None
        raise ProviderError(f"aws {region}: savings-plan rates refused ({code}); the credentials need "
                            "savingsplans:DescribeSavingsPlansOfferingRates, or refresh without savings plans") \
            from None
    return pages


def fetch_region(region: str, options: FetchOptions) -> dict[str, Any]:
    """I/O ONLY: the raw AWS payloads of one region.

    1. EC2 ``describe_instance_types`` (paginated, all types of the region; there is no server-side GPU filter):
       the GPU types are those with ``GpuInfo``.
    2. Pricing ``get_products`` (paginated, client in us-east-1): ServiceCode AmazonEC2, TERM_MATCH on regionCode,
       PRICING_FILTERS and instanceFamily "GPU instance"; then one query per GPU type (TERM_MATCH instanceType) that
       the family answer lacks (types AWS files under another family).
    3. EC2 ``describe_spot_price_history`` (paginated): ProductDescriptions ["Linux/UNIX"], the GPU types,
       StartTime = EndTime = now (AWS then answers the price in effect at that instant per type and zone).
    4. Only when ``options.savings_plans`` is true (:func:`wants_savings_plans`): Savings Plans
       ``describe_savings_plans_offering_rates`` for the Linux usage types of the GPU types in the price list
       (:func:`usage_types_for`, :func:`fetch_savings_plans_rates`).

    Returns: ``{"price_list": [PriceList JSON strings], "instance_types": [pages], "spot": [pages]}``, plus
    ``"savings_plans": {"region", "usage_types": {type: usage type}, "pages": [...]}`` in step 4.

    Raises:
        RegionSkipped: OptInRequired from this region's EC2; or AuthFailure / UnrecognizedClientException when
            describe_regions in PRICING_REGION says the region is not opted in (:func:`_region_or_credentials`).
        InvalidCredentials: the credentials were refused (CREDENTIALS_REFUSED; AuthFailure when describe_regions
            refuses them too): the message says "credentials", never "region not enabled".
        MissingCredentials: no credentials in the standard chain (or an unknown profile).
        TruncatedPriceList: page cap reached or a NextToken cycle (never a shorter list).
        ProviderError: savings-plan rates asked for and refused (step 4).
        botocore ClientError etc.: anything else, after botocore's retries.
    """
    from botocore.exceptions import ClientError, NoCredentialsError

    try:
        ec2 = _client(options, f"ec2:{region}", "ec2", region)
        options.say(NAME, region, "describe_instance_types")
        try:
            types = _all_pages(ec2, "describe_instance_types", options, f"{region} describe_instance_types",
                               PaginationConfig={"PageSize": 100})
        except ClientError as e:
            code = _error_code(e)
            if code in REGION_NOT_ENABLED:
                raise RegionSkipped(f"aws {region}: region not enabled for this account ({code})") from None
            if code in REGION_OR_CREDENTIALS:
                raise _region_or_credentials(region, code, e, options) from None
            if code in CREDENTIALS_REFUSED:
                raise _refused(code, e, f"describe_instance_types in {region}") from None
            raise
        gpu_types = sorted({t["InstanceType"] for p in types for t in p.get("InstanceTypes", [])
                            if (t.get("GpuInfo") or {}).get("Gpus")})
        pricing = _client(options, "pricing", "pricing", PRICING_REGION, share=True)
        filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}] + [
            {"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in PRICING_FILTERS]
        options.say(NAME, region, "get_products (GPU instance family)")
        price_list: list[str] = []
        for page in _all_pages(pricing, "get_products", options, f"{region} get_products", ServiceCode="AmazonEC2",
                               FormatVersion="aws_v1", PaginationConfig={"PageSize": 100},
                               Filters=filters + [{"Type": "TERM_MATCH", "Field": "instanceFamily",
                                                   "Value": GPU_INSTANCE_FAMILY}]):
            price_list.extend(page.get("PriceList") or [])
        listed = set()
        for e in price_list:
            d = json.loads(e) if isinstance(e, (str, bytes)) else e
            listed.add(((d.get("product") or {}).get("attributes") or {}).get("instanceType"))
        for itype in (t for t in gpu_types if t not in listed):
            for page in _all_pages(pricing, "get_products", options, f"{region} get_products {itype}",
                                   ServiceCode="AmazonEC2", FormatVersion="aws_v1",
                                   PaginationConfig={"PageSize": 100},
                                   Filters=filters + [{"Type": "TERM_MATCH", "Field": "instanceType",
                                                       "Value": itype}]):
                price_list.extend(page.get("PriceList") or [])
        spot: list[dict[str, Any]] = []
        if gpu_types:
            options.say(NAME, region, "describe_spot_price_history")
            now = _spot_window()
            spot = _all_pages(ec2, "describe_spot_price_history", options, f"{region} describe_spot_price_history",
                              ProductDescriptions=["Linux/UNIX"], InstanceTypes=gpu_types, StartTime=now,
                              EndTime=now, PaginationConfig={"PageSize": 1000})
        raw: dict[str, Any] = {"price_list": price_list, "instance_types": types, "spot": spot}
        if wants_savings_plans(options):
            usage = usage_types_for(price_list, gpu_types)
            options.say(NAME, region, f"describe_savings_plans_offering_rates ({len(usage)} usage types)")
            raw["savings_plans"] = {"region": region, "usage_types": usage,
                                    "pages": fetch_savings_plans_rates(region, usage.values(), options)}
    except NoCredentialsError:
        raise MissingCredentials(CREDENTIALS_HOWTO) from None
    except ClientError as e:  # the Pricing API or spot history refusing the credentials: say so, not a region fault
        code = _error_code(e)
        if code in CREDENTIALS_REFUSED:
            op = (getattr(e, "operation_name", "") or "a call")
            raise _refused(code, e, f"{op} for {region}") from None
        raise
    return raw


__all__ = ["NAME", "CLIENT_KEYS", "client_config", "make_client", "list_regions", "fetch_region", "parse_region",
           "parse_price_list", "parse_bulk_csv", "parse_instance_types", "parse_spot_history", "import_file",
           "region_for_location", "savings_plans_rates_frame", "fetch_savings_plans_rates", "savings_plans_request",
           "usage_types_for", "wants_savings_plans",
           "FACT_COLUMNS", "SAVINGS_PLAN_COLUMNS", "SOURCE_BULK", "SOURCE_PRICING",
           "SOURCE_SAVINGS_PLANS", "SOURCE_SPOT", "SOURCE_TYPES", "SPOT_COLUMNS"]
