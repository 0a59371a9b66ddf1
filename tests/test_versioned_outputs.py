"""Issue 32: every JSON document gpuopt writes is versioned (``schema_version``, ``kind``) and has its schema in
docs/schemas -- here the three commands whose JSON had neither (``quotas``, ``prices refresh-spot``, ``prices
spot-scores``), run with their provider calls replaced by recorded answers (they need credentials or the network).
The plan report's ``report-data`` and the rest are checked in test_report.py and test_schemas.py."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from gpuopt import schemas
from gpuopt.cli import app

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "docs" / "schemas"
runner = CliRunner()


def _valid(doc: dict, kind: str) -> None:
    """The document is a version-1 ``kind``, valid against the published schema and the model, every key declared."""
    assert (doc["schema_version"], doc["kind"]) == (schemas.VERSIONS[kind], kind) == (1, kind)
    schema = json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert schemas.undeclared_keys(schemas.validate(doc)) == []


def test_quotas_json_is_a_versioned_document(tmp_path, monkeypatch):
    import providers.quotas as q

    key = q.QuotaKey("aws", "us-east-1", "L-417A185B", "vcpus", "Running On-Demand P instances")
    table = q.QuotaTable([q.QuotaLimit(key, 384.0, 96.0, "AWS Service Quotas")])
    monkeypatch.setattr(q, "fetch_quotas", lambda *a, **k: table)
    out = tmp_path / "quotas.csv"
    r = runner.invoke(app, ["quotas", "--provider", "aws", "--region", "us-east-1", "--output", str(out),
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    _valid(doc, "quotas")
    assert doc["path"] == str(out) and out.is_file()
    assert doc["quotas"] == [{"provider": "aws", "region": "us-east-1", "family": "L-417A185B", "limit": 384.0,
                              "unit": "vcpus", "used": 96.0,
                              "note": "Running On-Demand P instances; AWS Service Quotas"}]


def test_refresh_spot_json_is_a_versioned_document_also_when_it_fails(monkeypatch):
    import pricing_cache.spot_risk as sr

    ok = sr.SpotRefreshOutcome(status="refreshed", path="/cache/spot/advisor-2026-12-01.json", as_of="2026-12-01",
                               entries=24_512)
    monkeypatch.setattr(sr, "refresh_spot_advisor", lambda *a, **k: ok)
    r = runner.invoke(app, ["prices", "refresh-spot", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    _valid(doc, "spot-refresh")
    assert (doc["provider"], doc["status"], doc["entries"], doc["as_of"]) == ("aws", "refreshed", 24_512, "2026-12-01")
    failed = sr.SpotRefreshOutcome(error="HTTP 503", kept="the shipped extract of 2025-06-28")
    monkeypatch.setattr(sr, "refresh_spot_advisor", lambda *a, **k: failed)
    r = runner.invoke(app, ["prices", "refresh-spot", "--format", "json"])
    assert r.exit_code == 3
    doc = json.loads(r.stdout)
    _valid(doc, "spot-refresh")
    assert (doc["status"], doc["path"], doc["error"]) == ("failed", None, "HTTP 503")


def test_spot_scores_json_is_a_versioned_document(monkeypatch):
    import providers.spot_advisor as sa

    pages = [{"SpotPlacementScores": [{"Region": "us-east-1", "Score": 3}, {"Region": "us-west-2", "Score": 9},
                                      {"Region": "eu-west-1", "Score": 11}]}]  # 11: not a score, left out
    monkeypatch.setattr(sa, "fetch_spot_placement_scores", lambda *a, **k: pages)
    r = runner.invoke(app, ["prices", "spot-scores", "--instance-type", "p5.48xlarge", "--capacity", "4",
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    _valid(doc, "spot-scores")
    assert doc["scores"] == [{"region": "us-west-2", "zone_id": "", "score": 9},
                             {"region": "us-east-1", "zone_id": "", "score": 3}]
    assert (doc["instance_types"], doc["capacity"], doc["single_az"]) == (["p5.48xlarge"], 4, False)
