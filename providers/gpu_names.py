"""Map the GPU names that price sources use to the canonical names of ``gpuopt.kernel.records.CANONICAL_GPUS``.

Sources name GPUs loosely: SkyPilot writes ``A100`` for the 40 GB card and ``A100-80GB`` for the 80 GB one, AWS
``GpuInfo`` says ``A100`` for both (only ``MemoryInfo.SizeInMiB`` tells them apart), GCP's A3 Mega rows say
``H100-MEGA`` (it is the same H100 80 GB SXM part, A3 Mega only differs in networking), and Azure's NCads/NCCads
H100 v5 sizes carry the PCIe "H100 NVL" with 94 GB, not the 80 GB SXM part:

* "The NCads H100 v5 series virtual machines are powered by NVIDIA H100 NVL GPU ... up to 2 NVIDIA H100 NVL GPUs with
  94GB memory each" (MicrosoftDocs/azure-docs, articles/virtual-machines/sizes/gpu-accelerated/includes/
  ncads-h100-v5-series-summary.md);
* "The NCCads H100 v5 series ... feature 1 NVIDIA H100 NVL GPUs with 94GB memory"
  (same folder, nccadsh100v5-series-summary.md).

:func:`canonical_gpu` returns ``None`` for a name it does not know (e.g. Lambda's ``RTX6000``): the caller reports
the row (``unknown_gpu``) instead of guessing.

:data:`GPU_MEMORY_MIB` is the memory of ONE whole GPU, used only when a payload lacks it. Values are the ones the
clouds themselves report where one does (AWS ``describe_instance_types`` for T4/A10G/L4/L40S/V100/A100/H100/H200;
Lambda's catalog for A6000/GH200/B200) and the datasheet otherwise (Azure docs: A10 24 GiB, H100 NVL 94 GiB).
AWS reports the 24 GB L4 and A10G as 22,888 MiB (= 24e9 bytes), so a g6f.large (1/8 of an L4) gets
0.125 x 22,888 = 2,861 MiB, which is exactly what AWS's own GpuInfo for g6f.large says.
"""

from __future__ import annotations

import re

#: Per-GPU memory (MiB) of one whole GPU, by canonical name. See the module docstring for where each comes from.
GPU_MEMORY_MIB: dict[str, int] = {
    "K80": 12288,  # one GK210 of the dual-GPU K80 board (AWS p2 / Azure NC expose each half as one GPU)
    "M60": 8192,  # one GM204 of the dual-GPU M60 board (AWS g3, Azure NV)
    "P4": 8192,
    "P100": 16384,
    "V100-16GB": 16384,
    "V100-32GB": 32768,
    "T4": 16384,
    "A10": 24576,
    "A10G": 22888,
    "L4": 22888,
    "L40S": 45776,
    "A6000": 49152,
    "A100-40GB": 40960,
    "A100-80GB": 81920,
    "H100-80GB": 81920,
    "H100-NVL-94GB": 96256,
    "H200-141GB": 144384,
    "GH200": 98304,
    "B200": 184320,
}

#: Names that map to a canonical name whatever the memory (upper-cased, "NVIDIA "/"TESLA " removed).
_DIRECT: dict[str, str] = {
    "A100-80GB": "A100-80GB",
    "A100 80GB": "A100-80GB",
    "A100-40GB": "A100-40GB",
    "H100-MEGA": "H100-80GB",  # GCP a3-megagpu-8g: H100 80 GB SXM with more NICs
    "H100-80GB": "H100-80GB",
    "H100-NVL": "H100-NVL-94GB",
    "H100 NVL": "H100-NVL-94GB",
    "H100-NVL-94GB": "H100-NVL-94GB",
    "H200": "H200-141GB",
    "H200-141GB": "H200-141GB",
    "B200": "B200",
    "V100-32GB": "V100-32GB",
    "V100-16GB": "V100-16GB",
    "A10G": "A10G",
    "A10": "A10",
    "L4": "L4",
    "L40S": "L40S",
    "T4": "T4",
    "K80": "K80",
    "M60": "M60",
    "P100": "P100",
    "P4": "P4",
    "A6000": "A6000",
    "RTXA6000": "A6000",
    "RTX A6000": "A6000",
    "GH200": "GH200",
}

#: Azure sizes whose "H100" is the 94 GB H100 NVL (NCads H100 v5 and NCCads H100 v5), see the module docstring.
_AZURE_H100_NVL = re.compile(r"^Standard_NCC?\d+adi?s_H100_v5$", re.IGNORECASE)


def _norm(name: str) -> str:
    n = str(name).strip().upper()
    for prefix in ("NVIDIA ", "TESLA "):
        if n.startswith(prefix):
            n = n[len(prefix):]
    return n


def canonical_gpu(name: str | None, memory_mib: float | None = None, provider: str | None = None,
                  instance_type: str | None = None) -> str | None:
    """The canonical GPU name for a raw name, or ``None`` when the name is unknown (the caller reports the row).

    Args:
        name: the source's GPU name (``A100``, ``A100-80GB``, ``H100-MEGA``, ``V100``...).
        memory_mib: memory of ONE whole GPU in MiB when the payload gives it (splits A100 40/80 GB and V100 16/32 GB).
        provider, instance_type: used for Azure's NCads/NCCads H100 v5, whose "H100" is the 94 GB H100 NVL.
    """
    if name is None:
        return None
    n = _norm(name)
    if not n or n == "NAN":
        return None
    if n in ("H100", "H100-MEGA") or n.startswith("H100 "):
        if (provider or "").lower() == "azure" and instance_type and _AZURE_H100_NVL.match(instance_type):
            return "H100-NVL-94GB"
        if memory_mib is not None and memory_mib > 90 * 1024:
            return "H100-NVL-94GB"
        return "H100-80GB"
    if n == "A100":
        if memory_mib is not None and memory_mib > 60 * 1024:
            return "A100-80GB"
        return "A100-40GB"  # SkyPilot, GCP and Azure ND96asr_v4 all use bare "A100" for the 40 GB part
    if n == "V100":
        if memory_mib is not None and memory_mib > 24 * 1024:
            return "V100-32GB"
        return "V100-16GB"
    return _DIRECT.get(n)


def gpu_memory_gib(canonical: str) -> float | None:
    """Memory of one whole GPU in GiB for a canonical name, or ``None`` when not known (see GPU_MEMORY_MIB)."""
    mib = GPU_MEMORY_MIB.get(canonical)
    return None if mib is None else mib / 1024.0
