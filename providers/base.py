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
        PURE: raw payloads -> normalized offers (gpuopt.kernel.records.OFFER_COLUMNS) + skipped rows + notes.

The refresh (pricing_cache/refresh.py) runs list_regions, then fetch_region + parse_region per region in a
bounded thread pool, and keeps the previous data of any region that fails.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from gpuopt.kernel.errors import ProviderError
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
        deadline_s: the whole refresh's deadline, seconds (``--deadline``; None: none). Counted from
            ``started_at``: no call starts after it, every call's timeout and retry waits are capped at the time
            left (:func:`remaining_s`), and a retry whose wait would pass it is not made (DeadlineReached).
        started_at: ``time.monotonic()`` when the refresh started (set by pricing_cache.refresh.refresh); None:
            the deadline is not counted.
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
    deadline_s: float | None = None
    started_at: float | None = None

    def say(self, provider: str, region: str, message: str) -> None:
        if self.progress is not None:
            self.progress(provider, region, message)


def call_budget_s(options: FetchOptions) -> float:
    """The most one call may take, retries and waits included: ``timeout_s`` x ``max_attempts`` seconds (issue 13:
    a 429 with ``Retry-After: 3600`` held a refresh far beyond ``--timeout``/``--attempts``)."""
    return float(options.timeout_s) * max(1, int(options.max_attempts))


#: The default of ``prices refresh --deadline``, seconds: 30 minutes, about 15 times a full refresh of the three clouds
#: (a minute or two) and 12 times one call's budget at the default --timeout x --attempts (150 s).
DEFAULT_DEADLINE_S = 1800.0


class DeadlineReached(ProviderError):
    """The refresh's deadline (``FetchOptions.deadline_s``, ``--deadline``) has passed, or the next retry's wait
    would pass it: the call is not made (the refresh reports the region as failed and keeps its previous prices)."""


def remaining_s(options: FetchOptions) -> float | None:
    """Seconds left before the refresh's deadline (negative once it has passed); None when there is none."""
    if options.deadline_s is None or options.started_at is None:
        return None
    return options.started_at + float(options.deadline_s) - time.monotonic()


def deadline_passed(options: FetchOptions) -> bool:
    rem = remaining_s(options)
    return rem is not None and rem <= 0


def deadline_note(options: FetchOptions) -> str:
    """"deadline reached after N s (--deadline D s)", N counted from the refresh's start; before it has passed (a
    retry given up because its wait would pass it): "deadline too near after N s (--deadline D s, R s left)"."""
    elapsed = time.monotonic() - (options.started_at or time.monotonic())
    d = float(options.deadline_s or 0)
    rem = remaining_s(options)
    if rem is not None and rem > 0:
        return f"deadline too near after {elapsed:.1f} s (--deadline {d:g} s, {rem:.1f} s left)"
    return f"deadline reached after {elapsed:.1f} s (--deadline {d:g} s)"


def check_deadline(options: FetchOptions, what: str) -> None:
    """Raise DeadlineReached naming ``what`` (the call not started) when the refresh's deadline has passed."""
    if deadline_passed(options):
        raise DeadlineReached(f"{what}: not started (the refresh's deadline, --deadline "
                              f"{float(options.deadline_s or 0):g} s, has passed)")


def cap_timeout(options: FetchOptions, timeout):
    """A call's timeout (seconds, or a (connect, read) pair) capped at the time left before the deadline (at least
    10 ms: a socket timeout must be positive; the call was checked by :func:`check_deadline` first)."""
    rem = remaining_s(options)
    if rem is None or timeout is None:
        return timeout
    rem = max(rem, 0.01)
    return tuple(min(float(t), rem) for t in timeout) if isinstance(timeout, tuple) else min(float(timeout), rem)


def deadline_timeout(options: FetchOptions):
    """A urllib3 ``Timeout`` for botocore's connection pools: connect and read timeouts of ``options.timeout_s``,
    each capped, when a request starts, at the time left before the refresh's deadline (urllib3 clones a pool's
    timeout for every request)."""
    from urllib3.util.timeout import Timeout

    class DeadlineTimeout(Timeout):
        def clone(self):
            t = cap_timeout(options, float(options.timeout_s))
            return Timeout(connect=t, read=t)

    return DeadlineTimeout(connect=options.timeout_s, read=options.timeout_s)


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
        raised. A 429 asking for an hour therefore costs at most about timeout x attempts seconds. A wait that would
        pass the refresh's deadline (``options``, :func:`remaining_s`) raises DeadlineReached."""

        def __init__(self, *args, cap_s: float = 30.0, budget_s: float = 150.0, options: FetchOptions | None = None,
                     **kw):
            super().__init__(*args, **kw)
            self.cap_s, self.budget_s, self.options = float(cap_s), float(budget_s), options

        def new(self, **kw):
            r = super().new(**kw)
            r.cap_s, r.budget_s, r.options = self.cap_s, self.budget_s, self.options
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
            rem = remaining_s(self.options) if self.options is not None else None
            if rem is not None and wait >= rem:
                got = f"HTTP {response.status}" if response is not None else type(error).__name__
                raise DeadlineReached(f"gave up after {got}: the next attempt would wait {wait:g} s, more than "
                                      f"the {max(rem, 0):.1f} s left before the refresh's deadline (--deadline "
                                      f"{float(self.options.deadline_s or 0):g} s)")
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
    attempts) from the start of the call: the last answer or error is then the call's result. The refresh's deadline
    (options.deadline_s): no call starts after it (DeadlineReached), each call's timeouts are capped at the time
    left, and a retry whose wait would pass it is not made (DeadlineReached)."""
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
        options=options,
    )
    s = _DeadlineSession(options)
    s.mount("http://", HTTPAdapter(max_retries=retry))
    s.mount("https://", HTTPAdapter(max_retries=retry))
    return s


def _deadline_session_class():
    import requests

    class DeadlineSession(requests.Session):
        """A Session whose answers must arrive whole within ``body_timeout_s`` of their first byte: requests'
        own timeout bounds each socket read, so a server trickling bytes could otherwise hold a call forever. Under
        a refresh deadline (``options.deadline_s``) no call starts after it and both timeouts are capped at the
        time left."""

        def __init__(self, options: FetchOptions):
            super().__init__()
            self.options = options
            self.body_timeout_s = float(options.timeout_s)

        def request(self, method, url, **kw):  # noqa: D401 - requests' own signature
            import socket
            import threading

            check_deadline(self.options, f"{method} {url.split('?')[0]}")
            kw["timeout"] = cap_timeout(self.options, kw.get("timeout"))
            body_timeout_s = cap_timeout(self.options, self.body_timeout_s)
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

            timer = threading.Timer(body_timeout_s, cut)
            timer.daemon = True
            timer.start()
            try:
                content = resp.content
            except Exception:
                if fired.is_set():
                    raise requests.exceptions.ReadTimeout(
                        f"the answer from {url} was not complete after {body_timeout_s:g} s") from None
                raise
            finally:
                timer.cancel()
                resp.close()
            if fired.is_set():
                raise requests.exceptions.ReadTimeout(
                    f"the answer from {url} was not complete after {body_timeout_s:g} s")
            resp._content = content
            return resp

    return DeadlineSession


def _DeadlineSession(options: FetchOptions):
    return _deadline_session_class()(options)
