"""The importer registry lists every parse_* function of providers/, and canonical GPU names map as documented."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import providers
from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import CANONICAL_GPUS
from providers.gpu_names import GPU_MEMORY_MIB, canonical_gpu, gpu_memory_gib

PROVIDERS_DIR = Path(providers.__file__).resolve().parent


def _parse_functions() -> set[tuple[str, str]]:
    found = set()
    for path in sorted(PROVIDERS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("parse_"):
                found.add((f"providers.{path.stem}", node.name))
    return found


def test_every_parse_function_is_registered():
    registered = {(imp.module, imp.function) for imp in providers.IMPORTERS.values()}
    missing = _parse_functions() - registered
    assert not missing, f"parse_* functions not in providers.IMPORTERS: {sorted(missing)}"
    for imp in providers.IMPORTERS.values():
        assert callable(imp.load())
        assert imp.kind in ("file", "api")
        assert imp.formats or imp.kind == "api", f"file importer {imp.name} accepts no --format"


def test_importer_for_format():
    assert providers.importer_for_format("skypilot").function == "parse_skypilot_csv"
    assert providers.importer_for_format("ec2instances").module == "providers.ec2instances"
    assert providers.importer_for_format("offers").function == "parse_offers_csv"
    with pytest.raises(InputError):
        providers.importer_for_format("xlsx")


def test_importing_providers_and_store_does_not_import_pandas():
    code = ("import sys, providers, providers.skypilot, providers.offers_csv, pricing_cache.store; "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PROVIDERS_DIR.parent)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name,mem,provider,itype,expected", [
    ("A100", 40960, None, None, "A100-40GB"),
    ("A100", 81920, "aws", "p4de.24xlarge", "A100-80GB"),
    ("A100-80GB", None, None, None, "A100-80GB"),
    ("A100", None, "gcp", None, "A100-40GB"),
    ("H100", 81920, "aws", "p5.48xlarge", "H100-80GB"),
    ("H100-MEGA", None, "gcp", "a3-megagpu-8g", "H100-80GB"),
    ("H100", None, "azure", "Standard_NC40ads_H100_v5", "H100-NVL-94GB"),
    ("H100", None, "azure", "Standard_NCC40ads_H100_v5", "H100-NVL-94GB"),
    ("H100", None, "azure", "Standard_NC80adis_H100_v5", "H100-NVL-94GB"),
    ("H100", None, "azure", "Standard_ND96isr_H100_v5", "H100-80GB"),
    ("V100", 16384, None, None, "V100-16GB"),
    ("V100", 32768, "aws", "p3dn.24xlarge", "V100-32GB"),
    ("V100-32GB", None, None, None, "V100-32GB"),
    ("H200", None, None, None, "H200-141GB"),
    ("NVIDIA L4", None, None, None, "L4"),
    ("Tesla T4", None, None, None, "T4"),
    ("A10G", None, None, None, "A10G"), ("A10", None, None, None, "A10"), ("L40S", None, None, None, "L40S"),
    ("B200", None, None, None, "B200"), ("K80", None, None, None, "K80"), ("M60", None, None, None, "M60"),
    ("P100", None, None, None, "P100"), ("P4", None, None, None, "P4"), ("A6000", None, None, None, "A6000"),
    ("GH200", None, None, None, "GH200"),
    ("RTX6000", None, "lambda", None, None), ("tpu-v2-8", None, None, None, None), ("", None, None, None, None),
])
def test_canonical_gpu(name, mem, provider, itype, expected):
    got = canonical_gpu(name, memory_mib=mem, provider=provider, instance_type=itype)
    assert got == expected
    if got is not None:
        assert got in CANONICAL_GPUS


def test_memory_table_covers_priced_gpus():
    assert gpu_memory_gib("A100-80GB") == 80 and gpu_memory_gib("H100-NVL-94GB") == 94
    assert gpu_memory_gib("L4") * 1024 / 8 == pytest.approx(2861)  # 1/8 of an L4 = AWS g6f.large
    assert gpu_memory_gib("not-a-gpu") is None
    assert set(GPU_MEMORY_MIB) <= set(CANONICAL_GPUS)
