"""Test isolation: every test gets its own empty user price cache (never the developer's ~/.cache/gpuopt)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_price_cache(tmp_path_factory, monkeypatch):
    d = tmp_path_factory.mktemp("gpuopt-cache")
    monkeypatch.setenv("GPUOPT_CACHE_DIR", str(d))
    monkeypatch.delenv("GPUOPT_MAX_PRICE_AGE_DAYS", raising=False)
    monkeypatch.delenv("GPUOPT_RETENTION_DAYS", raising=False)
    yield d


@pytest.fixture(scope="module")
def server():
    """A local HTTP server on 127.0.0.1 (pytest-httpserver) for the live adapters' REST calls: no test reaches a
    cloud API."""
    from pytest_httpserver import HTTPServer

    srv = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    srv.start()
    yield srv
    srv.clear()
    if srv.is_running():
        srv.stop()
