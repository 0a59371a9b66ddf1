"""Secrets never reach a message or a log line, in any encoding (issue 13: a percent-encoded GCP API key in a
request URL was not scrubbed from error messages)."""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
from urllib.parse import quote, quote_plus

import pytest
from typer.testing import CliRunner

import providers.gcp as gcp
from gpuopt.cli import app
from gpuopt.kernel.errors import ProviderError
from gpuopt.kernel.redact import ScrubFilter, forms, scrub
from providers.base import FetchOptions

#: A key with the characters a URL, JSON or base64 changes ("+", "/", "=", "&", a space, a quote).
KEY = 'AIzaSyFAKE+te/st=key&01 23"456789'


def _encodings(key: str) -> list[str]:
    raw = key.encode()
    enc = [key, quote(key, safe=""), quote_plus(key), re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(key, safe="")), quote(quote(key, safe=""), safe=""),
           json.dumps(key)[1:-1], base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")]
    return list(dict.fromkeys(enc))


@pytest.mark.parametrize("shown", _encodings(KEY))
def test_every_encoding_of_a_key_is_scrubbed(shown):
    text = f"GET https://example.invalid/v1/skus?currencyCode=USD&x={shown}&pageSize=5000 failed"
    out = scrub(text, KEY)
    assert shown not in out and "***" in out
    assert out.startswith("GET https://example.invalid/v1/skus?currencyCode=USD&x=") and out.endswith("&pageSize=5000 "
                                                                                                         "failed")
    assert set(_encodings(KEY)) <= forms(KEY)


def test_keys_from_the_environment_and_credential_parameters_are_scrubbed(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    out = scrub("secret wJalrXUtnFEMI%2FK7MDENG%2FbPxRfiCYEXAMPLEKEY in a URL; key AKIAIOSFODNN7EXAMPLE; "
                "https://h/x?api_key=unknown-to-us&a=1 Authorization: Bearer abc.def.ghi-jkl")
    assert "wJalr" not in out and "AKIAIOSFODNN7EXAMPLE" not in out and "unknown-to-us" not in out
    assert "abc.def" not in out and "a=1" in out and "AKIA" in out
    assert scrub("HTTP 500 on page 2 of us-east-1 after 5 attempts") == "HTTP 500 on page 2 of us-east-1 after 5 attempts"


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_percent_encoded_gcp_key_never_reaches_the_error_message():
    gcp.clear_listing_cache()
    options = FetchOptions(gcp_api_key=KEY, max_attempts=1, timeout_s=2,
                           endpoints={"gcp": f"http://127.0.0.1:{_closed_port()}/v1"})
    with pytest.raises(ProviderError) as e:
        gcp.fetch_region("us-central1", options)
    msg = str(e.value)
    assert "skus?" in msg and "key=***" in msg  # the URL is shown (it helps), the key is not
    assert not any(f in msg for f in _encodings(KEY))


def test_log_records_are_scrubbed():
    logger = logging.getLogger("urllib3.connectionpool.test")
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(self.format(record))

    h = Keep()
    h.addFilter(ScrubFilter())
    logger.addHandler(h)
    try:
        logger.warning('http://127.0.0.1:1 "GET /v1/skus?key=%s&currencyCode=USD HTTP/1.1" 429 0', quote_plus(KEY))
    finally:
        logger.removeHandler(h)
    assert records and "currencyCode=USD" in records[0]
    assert not any(f in records[0] for f in _encodings(KEY))


def test_refresh_with_a_key_in_the_cli_leaks_it_nowhere(server, caplog, monkeypatch):
    """`gpuopt -vv prices refresh` against an API that echoes the key: neither the output, the JSON document nor
    the debug log (urllib3 logs every request URL) holds it in any encoding."""
    from werkzeug.wrappers import Response

    server.clear()
    server.expect_request(f"/v1/services/{gcp.SERVICE_ID}/skus").respond_with_handler(
        lambda r: Response(json.dumps({"error": {"message": f"API key not valid: {r.args.get('key')} "
                                                            f"({quote(r.args.get('key', ''), safe='')})"}}),
                           status=400, content_type="application/json"))
    monkeypatch.setenv("GPUOPT_GCP_BILLING_URL", server.url_for("/v1"))
    gcp.clear_listing_cache()
    caplog.set_level(logging.DEBUG)
    r = CliRunner().invoke(app, ["-vv", "prices", "refresh", "--provider", "gcp", "--region", "us-central1",
                                 "--gcp-api-key", KEY, "--attempts", "1", "--timeout", "5", "--format", "json"])
    server.clear()
    assert r.exit_code == 3, r.output
    doc = json.loads(r.stdout)
    assert "HTTP 400" in json.dumps(doc)
    everything = r.output + (r.stderr or "") + caplog.text
    assert "/skus?" in caplog.text  # urllib3 did log the request URL
    assert not any(f in everything for f in _encodings(KEY))
