"""Retries within a total deadline (issue 13): a ``Retry-After`` is capped at ``--timeout`` and one call, retries and
waits included, ends within about timeout x attempts seconds, with a message that says why it gave up. A local
server on 127.0.0.1 (pytest-httpserver, the ``server`` fixture of conftest) plays the throttling API; the bounds on
elapsed time are generous (a slow shared machine must not fail them), far below the hour the server asks for."""

from __future__ import annotations

import threading
import time

import pytest

import providers.azure as azure
import providers.gcp as gcp
from gpuopt.kernel.errors import ProviderError
from providers.base import FetchOptions, call_budget_s, http_session

TIMEOUT_S, ATTEMPTS = 1.0, 3
#: Slack for a loaded machine: the call must end within the budget plus this (the server asks for 3,600 s).
SLACK_S = 10.0


class _Throttle:
    """Answers every request with ``status`` and ``headers``; counts the requests."""

    def __init__(self, status=429, headers=None):
        self.status, self.headers = status, headers if headers is not None else {"Retry-After": "3600"}
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self, request):
        from werkzeug.wrappers import Response

        with self.lock:
            self.count += 1
        return Response('{"error": {"message": "slow down"}}', status=self.status, headers=self.headers,
                        content_type="application/json")


@pytest.fixture()
def throttle(server):
    server.clear()
    yield server
    server.clear()


def _options(server, **kw) -> FetchOptions:
    kw.setdefault("timeout_s", TIMEOUT_S)
    kw.setdefault("max_attempts", ATTEMPTS)
    kw.setdefault("regions", ["us-central1"])
    return FetchOptions(gcp_api_key="test-key-not-a-secret",
                        endpoints={"gcp": server.url_for("/v1"), "azure": server.url_for("/api/retail/prices")},
                        **kw)


def test_the_budget_is_timeout_times_attempts():
    assert call_budget_s(FetchOptions(timeout_s=2.5, max_attempts=4)) == 10.0
    assert call_budget_s(FetchOptions(timeout_s=30.0, max_attempts=5)) == 150.0


def test_gcp_429_retry_after_an_hour_gives_up_within_timeout_times_attempts(throttle):
    handler = _Throttle()
    throttle.expect_request(f"/v1/services/{gcp.SERVICE_ID}/skus").respond_with_handler(handler)
    gcp.clear_listing_cache()
    options = _options(throttle)
    t0 = time.monotonic()
    with pytest.raises(ProviderError) as e:
        gcp.fetch_region("us-central1", options)
    elapsed = time.monotonic() - t0
    assert elapsed < TIMEOUT_S * ATTEMPTS + SLACK_S
    assert handler.count == ATTEMPTS  # retried (each wait capped at --timeout), not abandoned at the first 429
    msg = str(e.value)
    assert "HTTP 429" in msg and "wait 3600 (Retry-After)" in msg and "--timeout 1 s" in msg
    assert "3 s (timeout x attempts)" in msg and "test-key-not-a-secret" not in msg


def test_azure_429_retry_after_an_hour_gives_up_within_timeout_times_attempts(throttle):
    handler = _Throttle()
    throttle.expect_request("/api/retail/prices").respond_with_handler(handler)
    t0 = time.monotonic()
    with pytest.raises(ProviderError) as e:
        azure.fetch_region("eastus", _options(throttle, regions=["eastus"]))
    elapsed = time.monotonic() - t0
    assert elapsed < TIMEOUT_S * ATTEMPTS + SLACK_S
    assert handler.count == ATTEMPTS
    assert "HTTP 429" in str(e.value) and "wait 3600 (Retry-After)" in str(e.value)


def test_a_retry_that_would_pass_the_budget_is_not_made(throttle):
    # backoff 0.5 s x 2^n between 503s; with a budget of 0.2 s x 10 attempts = 2 s, the waits (0.5, 1, 2, ...) stop
    # the retries long before 10 attempts
    handler = _Throttle(status=503, headers={})
    throttle.expect_request("/slow").respond_with_handler(handler)
    options = FetchOptions(timeout_s=0.2, max_attempts=10)
    s = http_session(options)
    t0 = time.monotonic()
    resp = s.get(throttle.url_for("/slow"), timeout=options.timeout_s)
    elapsed = time.monotonic() - t0
    s.close()
    assert resp.status_code == 503
    assert 1 < handler.count < 10
    assert elapsed < call_budget_s(options) + SLACK_S


@pytest.mark.parametrize("value", ["soon", "Wed, 21 Oct 2999 07:28:00 GMT"])
def test_an_unparseable_or_far_dated_retry_after_is_bounded_too(throttle, value):
    handler = _Throttle(headers={"Retry-After": value})
    throttle.expect_request("/throttled").respond_with_handler(handler)
    options = FetchOptions(timeout_s=TIMEOUT_S, max_attempts=ATTEMPTS)
    s = http_session(options)
    t0 = time.monotonic()
    resp = s.get(throttle.url_for("/throttled"), timeout=options.timeout_s)
    s.close()
    assert resp.status_code == 429 and handler.count == ATTEMPTS
    assert time.monotonic() - t0 < TIMEOUT_S * ATTEMPTS + SLACK_S


class _AwsThrottle(_Throttle):
    """The Pricing API (JSON protocol) answering ThrottlingException to every call."""

    def __call__(self, request):
        from werkzeug.wrappers import Response

        with self.lock:
            self.count += 1
        return Response('{"__type": "ThrottlingException", "message": "Rate exceeded"}', status=400,
                        content_type="application/x-amz-json-1.1")


def _aws_client(server, options, monkeypatch):
    import boto3

    import providers.aws as aws

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    session = boto3.Session(region_name="us-east-1")
    client = session.client("pricing", region_name="us-east-1", endpoint_url=server.url_for("/"),
                            config=aws.client_config(options, aws.PRICING_RETRY_MODE))
    return aws.bound_retries(client, options)


def test_aws_throttling_gives_up_within_the_calls_budget(throttle, monkeypatch):
    handler = _AwsThrottle()
    throttle.expect_request("/", method="POST").respond_with_handler(handler)
    options = FetchOptions(timeout_s=0.5, max_attempts=10)  # budget 5 s; botocore alone could wait ~2 minutes
    client = _aws_client(throttle, options, monkeypatch)
    t0 = time.monotonic()
    with pytest.raises(ProviderError) as e:
        client.get_products(ServiceCode="AmazonEC2")
    elapsed = time.monotonic() - t0
    assert elapsed < call_budget_s(options) + SLACK_S
    assert 2 <= handler.count < 10  # retried with backoff, stopped before the waits pass the budget
    msg = str(e.value)
    assert "aws GetProducts: ThrottlingException after" in msg and "budget of 5 s" in msg
    assert "--timeout 0.5 s x --attempts 10" in msg


def test_aws_errors_that_are_not_retried_are_left_alone(throttle, monkeypatch):
    from botocore.exceptions import ClientError
    from werkzeug.wrappers import Response

    throttle.expect_request("/", method="POST").respond_with_handler(
        lambda r: Response('{"__type": "AccessDeniedException", "message": "no"}', status=400,
                           content_type="application/x-amz-json-1.1"))
    client = _aws_client(throttle, FetchOptions(timeout_s=0.5, max_attempts=3), monkeypatch)
    with pytest.raises(ClientError) as e:
        client.get_products(ServiceCode="AmazonEC2")
    assert e.value.response["Error"]["Code"] == "AccessDeniedException"


def test_make_client_bounds_its_retries(monkeypatch):
    from botocore.awsrequest import AWSResponse

    import providers.aws as aws

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    client = aws.make_client("pricing", "us-east-1", FetchOptions(timeout_s=1, max_attempts=2))
    throttled = (AWSResponse("https://api.pricing.us-east-1.amazonaws.com/", 400, {}, None),
                 {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"},
                  "ResponseMetadata": {"HTTPStatusCode": 400}})
    with pytest.raises(ProviderError, match="budget of 2 s"):  # a call that started 100 s ago retries no more
        client.meta.events.emit("needs-retry.pricing.GetProducts", response=throttled, endpoint=None,
                                operation=client.meta.service_model.operation_model("GetProducts"), attempts=1,
                                caught_exception=None,
                                request_dict={"context": {"gpuopt_call_started": time.monotonic() - 100}})
