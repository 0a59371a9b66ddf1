"""The contract every live price adapter (providers/aws.py, azure.py, gcp.py) follows, and its errors.

An adapter module exposes, at module level:

    NAME: str                                           "aws" | "azure" | "gcp"
    def list_regions(options: FetchOptions) -> list[str]
        The provider's regions to refresh: ``options.regions`` when given (validated), else every region the
        adapter knows (for AWS: the regions the account has enabled). I/O allowed.
    def fetch_region(region: str, options: FetchOptions) -> dict[str, Any]
        I/O ONLY: the raw payloads of one region exactly as the APIs returned them (pages of items, JSON strings
        kept as strings), under keys the adapter chooses. Pagination is followed to the end; a page list that
        cannot be completed raises TruncatedPriceList — never a shorter list. A region the account cannot use
        raises RegionSkipped (a note, not a failure). Anything else raises ProviderError (or lets the SDK's
        own exception through: the refresh records it as a failed region).
    def parse_region(raw: dict[str, Any], region: str, as_of: str) -> ParseResult
        PURE: raw payloads -> normalized offers (gpuopt.records.OFFER_COLUMNS) + skipped rows + notes.

The refresh (pricing_cache/refresh.py) runs list_regions, then fetch_region + parse_region per region in a
bounded thread pool, and keeps the previous data of any region that fails.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from gpuopt.errors import ProviderError
from providers._common import ParseResult  # noqa: F401  (re-exported: what parse_region returns)

#: The live adapters, by provider name -> module path (imported lazily by the refresh).
LIVE_ADAPTERS: dict[str, str] = {
    "aws": "providers.aws",
    "azure": "providers.azure",
    "gcp": "providers.gcp",
}


class RegionSkipped(ProviderError):
    """The region cannot be used by these credentials (not enabled, not offered): skipped with a note."""


class TruncatedPriceList(ProviderError):
    """A page list stopped before its end (page cap reached, a next link pointing at itself, a page that failed
    after retries). ``next`` is the link or token that was left (PRICE_FAULTS BUG-08)."""

    def __init__(self, message: str, next: str | None = None):  # noqa: A002 - the API's own word
        self.next = next
        super().__init__(message if next is None else f"{message} (next={next})")


class MissingCredentials(ProviderError):
    """No credentials for a provider that needs them: the message says which ones and how to provide them."""


class InvalidCredentials(MissingCredentials):
    """Credentials were found but the provider refused them (invalid, expired, wrongly signed): the message says
    "credentials", the provider and the provider's error code, never "region not enabled" (issue 13). A kind of
    MissingCredentials: the refresh treats both alike (the provider keeps its previous prices)."""


@dataclass
class FetchOptions:
    """Options of one refresh, shared by every adapter.

    Attributes:
        regions: regions to refresh (provider codes); None for every region the adapter knows.
        profile: AWS named profile (standard boto3 credential chain when None).
        gcp_api_key: API key for the Cloud Billing Catalog API (env GPUOPT_GCP_API_KEY when None).
        currency: currency to request (USD: every price in gpuopt is compared in USD).
        timeout_s: connect/read timeout of one HTTP call, seconds; also the longest wait between attempts (a
            ``Retry-After`` above it is capped).
        max_attempts: attempts per call, retries included (throttling 429/Throttling and 5xx, with backoff); one
            call with its retries and waits ends within timeout_s x max_attempts seconds (:func:`call_budget_s`).
        max_pages: safety cap on pages per listing; reaching it raises TruncatedPriceList, never a short list.
        endpoints: base URLs overriding the real endpoints (tests point them at 127.0.0.1), e.g.
            {"azure": "http://127.0.0.1:8080/api/retail/prices", "gcp": "http://127.0.0.1:8081/v1"}.
        clients: pre-built SDK clients for tests (e.g. {"pricing": botocore client with a Stubber}).
        progress: called as progress(provider, region, message) from worker threads.
        savings_plans: also fetch AWS Savings Plans rates (``savingsplans`` DescribeSavingsPlansOfferingRates; needs
            ``savingsplans:DescribeSavingsPlansOfferingRates``); Azure's come with its retail prices anyway.
    """

    regions: list[str] | None = None
    profile: str | None = None
    gcp_api_key: str | None = None
    currency: str = "USD"
    timeout_s: float = 30.0
    max_attempts: int = 5
    max_pages: int | None = 10_000
    endpoints: dict[str, str] = field(default_factory=dict)
    clients: dict[str, Any] = field(default_factory=dict)
    savings_plans: bool = False
    progress: Callable[[str, str, str], None] | None = None

    def say(self, provider: str, region: str, message: str) -> None:
        if self.progress is not None:
            self.progress(provider, region, message)


def call_budget_s(options: FetchOptions) -> float:
    """The most one call may take, retries and waits included: ``timeout_s`` x ``max_attempts`` seconds (issue 13:
    a 429 with ``Retry-After: 3600`` held a refresh far beyond ``--timeout``/``--attempts``)."""
    return float(options.timeout_s) * max(1, int(options.max_attempts))


#: The start (time.monotonic()) of the HTTP call running in this thread (set by the deadline session).
_CALL = threading.local()


def _bounded_retry_class():
    from urllib3.exceptions import MaxRetryError, ResponseError
    from urllib3.util.retry import Retry

    class BoundedRetry(Retry):
        """urllib3's Retry with every wait bounded: a ``Retry-After`` is capped at ``cap_s`` (the per-attempt
        timeout, ``--timeout``; an unparseable one falls back to the backoff), and a wait that would end after the
        call's budget (``budget_s`` from the call's start, :func:`call_budget_s`) ends the retries at once: the
        last answer is returned (its status is reported by the adapter), or for a connection error the error is
        raised. A 429 asking for an hour therefore costs at most about timeout x attempts seconds."""

        def __init__(self, *args, cap_s: float = 30.0, budget_s: float = 150.0, **kw):
            super().__init__(*args, **kw)
            self.cap_s, self.budget_s = float(cap_s), float(budget_s)

        def new(self, **kw):
            r = super().new(**kw)
            r.cap_s, r.budget_s = self.cap_s, self.budget_s
            return r

        def get_retry_after(self, response):
            try:
                seconds = super().get_retry_after(response)
            except Exception:  # an unparseable Retry-After (urllib3 raises InvalidHeader): plain backoff
                return None
            return None if seconds is None else min(float(seconds), self.cap_s)

        def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
            nxt = super().increment(method, url, response, error, _pool, _stacktrace)
            started = getattr(_CALL, "started", None)
            if started is None:
                return nxt
            wait = nxt.get_retry_after(response) if (response is not None and self.respect_retry_after_header) \
                else None
            wait = nxt.get_backoff_time() if wait is None else wait
            if time.monotonic() - started + wait > self.budget_s:
                raise MaxRetryError(_pool, url, error or ResponseError(
                    f"gave up: the next attempt would start after the call's budget of {self.budget_s:g} s"))
            return nxt

    return BoundedRetry


def retry_after_note(resp, options: FetchOptions) -> str:
    """For an HTTP failure message: what the server asked (``Retry-After``) when it exceeds what ``--timeout``
    allows, else "" (a throttled refresh says why it gave up instead of waiting an hour)."""
    raw = (getattr(resp, "headers", None) or {}).get("Retry-After")
    if raw is None:
        return ""
    return (f"; the server asked to wait {str(raw).strip()[:40]} (Retry-After), waits are capped at --timeout "
            f"{options.timeout_s:g} s and each call at {call_budget_s(options):g} s (timeout x attempts): "
            "try again later")


def http_session(options: FetchOptions):
    """A requests Session that retries throttling (429, honouring Retry-After) and 5xx answers with exponential
    backoff (a bounded urllib3 ``Retry``), for the REST adapters. Timeouts: per socket operation as passed per
    call (options.timeout_s), and the whole body of an answer within options.timeout_s of its first byte. Waits:
    a ``Retry-After`` is capped at options.timeout_s, and no retry starts after :func:`call_budget_s` (timeout x
    attempts) from the start of the call: the last answer or error is then the call's result."""
    from requests.adapters import HTTPAdapter

    retry = _bounded_retry_class()(
        total=max(0, options.max_attempts - 1),
        backoff_factor=0.5,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=frozenset({"GET"}),
        respect_retry_after_header=True,
        raise_on_status=False,
        cap_s=options.timeout_s,
        budget_s=call_budget_s(options),
    )
    s = _DeadlineSession(options.timeout_s)
    s.mount("http://", HTTPAdapter(max_retries=retry))
    s.mount("https://", HTTPAdapter(max_retries=retry))
    return s


def _deadline_session_class():
    import requests

    class DeadlineSession(requests.Session):
        """A Session whose answers must arrive whole within ``body_timeout_s`` of their first byte: requests'
        own timeout bounds each socket read, so a server trickling bytes could otherwise hold a call forever."""

        def __init__(self, body_timeout_s: float):
            super().__init__()
            self.body_timeout_s = body_timeout_s

        def request(self, method, url, **kw):  # noqa: D401 - requests' own signature
            import socket
            import threading

            kw["stream"] = True
            _CALL.started = time.monotonic()  # the retries' budget counts from here (BoundedRetry)
            try:
                resp = super().request(method, url, **kw)
            finally:
                _CALL.started = None
            fired = threading.Event()

            def cut() -> None:  # a watchdog: shut the socket so the blocked read returns
                fired.set()
                sock = None
                try:  # urllib3 -> http.client.HTTPResponse -> BufferedReader -> SocketIO -> socket
                    sock = resp.raw._fp.fp.raw._sock
                except AttributeError:
                    conn = getattr(resp.raw, "_connection", None) or getattr(resp.raw, "connection", None)
                    sock = getattr(conn, "sock", None)
                try:
                    if sock is not None:
                        sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            timer = threading.Timer(self.body_timeout_s, cut)
            timer.daemon = True
            timer.start()
            try:
                content = resp.content
            except Exception:
                if fired.is_set():
                    raise requests.exceptions.ReadTimeout(
                        f"the answer from {url} was not complete after {self.body_timeout_s:g} s") from None
                raise
            finally:
                timer.cancel()
                resp.close()
            if fired.is_set():
                raise requests.exceptions.ReadTimeout(
                    f"the answer from {url} was not complete after {self.body_timeout_s:g} s")
            resp._content = content
            return resp

    return DeadlineSession


def _DeadlineSession(body_timeout_s: float):
    return _deadline_session_class()(body_timeout_s)
