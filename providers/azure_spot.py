"""Azure Spot eviction rates (issue 26, point 3): how often Azure evicted each VM size in each region.

Azure publishes them through Azure Resource Graph, not a public file: "Get pricing history in the last 90 days and
eviction rates for the last 28 trailing days ... Spot pricing history and eviction rates data is available in the
``SpotResources`` table" (Azure docs, "Use Azure Spot Virtual Machines", section "Azure Resource Graph",
MicrosoftDocs/azure-docs articles/virtual-machines/spot-vms.md). The docs' sample query::

    SpotResources
    | where type =~ 'microsoft.compute/skuspotevictionrate/location'
    | where sku.name in~ ('standard_d2s_v4', 'standard_d4s_v4')
    | where location in~ ('eastus', 'southcentralus')
    | project skuName = tostring(sku.name), location, spotEvictionRate = tostring(properties.evictionRate)

:data:`EVICTION_QUERY` is that query for the GPU sizes (``standard_n...``: the NC, ND and NV families) of the regions
asked. It runs through the Resource Graph REST API (``POST {management}/providers/Microsoft.ResourceGraph/resources
?api-version=2021-03-01`` with ``{"subscriptions": [...], "query": ..., "options": {"$skipToken": ...}}``; the answer
``{"data": [...rows...], "$skipToken": ...}``), with the user's credentials (any Azure AD identity with Reader on
the subscription). The rates are ranges of percent ("0-5", "5-10", "10-15", "15-20", "20+"), the same five buckets
as the AWS Spot Instance Advisor's, over 28 trailing days (taken as a month, as the Advisor's "trailing month").

As every provider module: :func:`fetch_eviction_rows` does the I/O only; :func:`parse_eviction_rows` is pure and
returns :class:`providers.spot_advisor.SpotRisk` rows (provider ``azure``, the VM size as Azure writes it in the
price data: ``Standard_NC24ads_A100_v4``).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from gpuopt.kernel.errors import PriceDataError, ProviderError
from providers.spot_advisor import BUCKETS, SpotRisk

#: Resource Graph's REST endpoint and the API version the query is sent with.
RESOURCE_GRAPH_PATH = "/providers/Microsoft.ResourceGraph/resources"
RESOURCE_GRAPH_API_VERSION = "2021-03-01"
AZURE_MANAGEMENT_URL = "https://management.azure.com"
AZURE_SCOPE = "https://management.azure.com/.default"

#: The docs' eviction-rate query (module docstring), for GPU sizes (names ``standard_n...``) in ``{regions}``.
EVICTION_QUERY = ("SpotResources "
                  "| where type =~ 'microsoft.compute/skuspotevictionrate/location' "
                  "| where tostring(sku.name) startswith 'standard_n' "
                  "| where location in~ ({regions}) "
                  "| project skuName = tostring(sku.name), location, spotEvictionRate = tostring(properties.evictionRate)")

#: Azure's rate labels -> the bucket index of :data:`providers.spot_advisor.BUCKETS` (same bounds).
RATE_BUCKETS: dict[str, int] = {"0-5": 0, "5-10": 1, "10-15": 2, "15-20": 3, "20+": 4}

_SIZE = re.compile(r"^standard_[a-z0-9_-]+$", re.I)


def eviction_query(regions: Iterable[str]) -> str:
    """:data:`EVICTION_QUERY` for ``regions`` (programmatic names, e.g. eastus); InputError-free: names are quoted
    and only letters and digits are kept."""
    names = sorted({re.sub(r"[^a-z0-9]", "", str(r).lower()) for r in regions} - {""})
    return EVICTION_QUERY.format(regions=", ".join(f"'{n}'" for n in names))


def azure_token(credential: Any, scope: str, what: str) -> Any:
    """A bearer token of ``credential`` for ``scope`` (a str passes through). azure-identity's failures to find or
    use credentials (``ClientAuthenticationError``, ``CredentialUnavailableError``) become MissingCredentials, one
    line naming ``what`` (a breaker's run without Azure credentials ended in a 76-line traceback)."""
    from providers.base import MissingCredentials

    if not hasattr(credential, "get_token"):
        return credential
    import logging

    # azure-identity logs each credential it tried as a WARNING block on stderr: the one line below says it
    logging.getLogger("azure.identity").setLevel(logging.ERROR)
    try:
        return credential.get_token(scope)
    except Exception as e:  # azure.core.exceptions.* without importing azure-core where it is absent
        if type(e).__module__.startswith(("azure.", "msal")):
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise MissingCredentials(f"{what}: no usable Azure credentials ({type(e).__name__}: {first[:200]}); "
                                     "sign in with `az login` or set AZURE_CLIENT_ID, AZURE_TENANT_ID and "
                                     "AZURE_CLIENT_SECRET") from None
        raise


def fetch_eviction_rows(subscription_id: str, regions: Iterable[str], credential: Any, *, options: Any = None,
                        max_pages: int = 100) -> list[dict[str, Any]]:
    """I/O only: every row of :func:`eviction_query` from Resource Graph, following ``$skipToken``.

    ``credential`` is an azure-identity credential (``get_token(scope)``) or a bearer token string; the endpoint is
    ``options.endpoints["azure_management"]`` (tests: a 127.0.0.1 server) or https://management.azure.com.

    Raises:
        InvalidCredentials: HTTP 401/403. ProviderError: another HTTP error, an answer that is not JSON or has no
            ``data`` list, a skip token that repeats or more than ``max_pages`` pages."""
    import requests

    from providers.base import FetchOptions, InvalidCredentials, http_session

    opts = options or FetchOptions()
    base = ((opts.endpoints.get("azure_management") if opts.endpoints else None) or AZURE_MANAGEMENT_URL).rstrip("/")
    token = azure_token(credential, AZURE_SCOPE, "azure resource graph")
    headers = {"Authorization": f"Bearer {getattr(token, 'token', token)}", "Accept": "application/json"}
    url = f"{base}{RESOURCE_GRAPH_PATH}?api-version={RESOURCE_GRAPH_API_VERSION}"
    body: dict[str, Any] = {"subscriptions": [subscription_id], "query": eviction_query(regions),
                            "options": {"resultFormat": "objectArray"}}
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    session = http_session(opts)
    try:
        for _ in range(max_pages):
            try:
                resp = session.post(url, json=body, headers=headers, timeout=opts.timeout_s)
            except requests.RequestException as e:
                raise ProviderError(f"azure resource graph: request failed ({type(e).__name__}: {e})") from None
            if resp.status_code in (401, 403):
                raise InvalidCredentials(f"azure resource graph: the credentials were refused (HTTP "
                                         f"{resp.status_code}); Reader on subscription {subscription_id} is needed")
            if resp.status_code >= 400:
                raise ProviderError(f"azure resource graph: HTTP {resp.status_code} ({resp.text[:200]!r})")
            try:
                page = resp.json()
            except ValueError:
                raise ProviderError("azure resource graph: the answer is not JSON") from None
            if not isinstance(page, dict) or not isinstance(page.get("data"), list):
                raise ProviderError("azure resource graph: no 'data' list in the answer")
            rows.extend(r for r in page["data"] if isinstance(r, dict))
            skip = page.get("$skipToken")
            if not skip:
                return rows
            if skip in seen:
                raise ProviderError("azure resource graph: the skip token repeats")
            seen.add(skip)
            body = {**body, "options": {**body["options"], "$skipToken": skip}}
        raise ProviderError(f"azure resource graph: more than {max_pages} pages")
    finally:
        session.close()


def parse_eviction_rows(rows: Iterable[dict[str, Any]], *, as_of: str, source: str,
                        sizes: Iterable[str] = ()) -> list[SpotRisk]:
    """Resource Graph rows (``skuName``, ``location``, ``spotEvictionRate``) as :class:`SpotRisk` rows (pure).

    Args:
        rows: the query's rows.
        as_of: the day they were read (YYYY-MM-DD).
        source: written into every row.
        sizes: VM size names as the price data writes them (``Standard_NC24ads_A100_v4``): a row's lower-case
            ``skuName`` takes that spelling; without one, ``Standard_`` + the rest as read.
    Returns:
        Rows sorted by region and size; a row with a rate label not in :data:`RATE_BUCKETS` or a name that is not a
        VM size is left out.
    Raises:
        PriceDataError: rows were given but not one could be read (the labels changed: not read rather than
        mislabelled)."""
    spelled = {str(s).lower(): str(s) for s in sizes}
    out: dict[tuple[str, str], SpotRisk] = {}
    n = 0
    for r in rows:
        n += 1
        name = str(r.get("skuName") or "").strip()
        region = str(r.get("location") or "").strip().lower()
        label = str(r.get("spotEvictionRate") or "").replace(" ", "").replace("%", "")
        if not _SIZE.match(name) or not region or label not in RATE_BUCKETS:
            continue
        b = RATE_BUCKETS[label]
        size = spelled.get(name.lower()) or ("Standard_" + name.split("_", 1)[1])
        _, low, high = BUCKETS[b]
        out[(region, size)] = SpotRisk("azure", region, size, "Linux", b, low, high, as_of, source)
    if n and not out:
        raise PriceDataError(f"azure resource graph: none of {n} eviction rows could be read (rate labels other "
                             f"than {', '.join(RATE_BUCKETS)}?)")
    return [out[k] for k in sorted(out)]
