"""The network between the instances (nodes) a replica spans, as sizing uses it (part of :mod:`optimizer.sizing`).

:class:`NodeNetwork` holds the node-to-node bandwidth, GPUs per node and the latency of one hop between pipeline
stages; :func:`offer_network` reads them from an offer's ``fabric`` (``providers.facts``); :data:`DEFAULT_NODE_NETWORK`
is the network assumed when no offer is given (``gpuopt estimate``). The lowest module of the sub-package with
:mod:`optimizer.sizing.workload`: the training model (:mod:`optimizer.sizing.training`) and the replica sizing both
import it, it imports neither.

Units: GB/s (1e9 B/s) one direction, seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: GPUs per node when no offer says (``gpuopt estimate``, :data:`DEFAULT_NODE_NETWORK`); a replica of more GPUs spans
#: nodes: its gradient traffic crosses the node network, a serving replica becomes one pipeline stage per node.
GPUS_PER_NODE = 8
#: Node-to-node bandwidth per GPU when no offer says, one direction, GB/s: one 200 Gb/s InfiniBand HDR NIC per GPU
#: (DGX A100 and Azure ND A100 v4: 8 x 200 Gb/s per 8-GPU node). Chosen as typical; AWS p4d has less
#: (4 x 100 Gb/s per node), p5 more (3200 Gb/s): with an offer, its fabric's bandwidth is used (:func:`offer_network`). NCCL runs one ring per NIC, so across nodes the collectives' bus bandwidth is about the
#: node's total, 8 x 25 = 200 GB/s (DERIVED from the busbw definition, F§9).
INTER_NODE_GBPS_PER_GPU = 25.0


# ----------------------------------------------------------------------------------------------- layouts across nodes
#: Latency of one NCCL point-to-point transfer between two nodes, s: NCCL's own cost model for a network step
#: (NVIDIA/nccl src/graph/tuning.cc: ``baseLat`` Ring/Simple 8.4 us + ``hwLat`` NET Ring/Simple 14 us = 22.4 us).
NCCL_NET_STEP_LATENCY_S = (8.4 + 14.0) * 1e-6
#: One-way latency of a small message through the kernel TCP/IP stack, s: "10-30 us" one way (Kentino, "Latency
#: dissection: where every microsecond goes in an AI cluster network"; RDMA/kernel bypass is < 1 us); the upper end.
KERNEL_TCP_ONE_WAY_S = 30e-6
#: Time of one hop between pipeline stages on a cluster fabric, s (DERIVED): vLLM's ``send_tensor_dict`` first sends
#: the tensors' metadata over the CPU (gloo, TCP) group, then the tensors over NCCL (vllm/distributed/parallel_state.py
#: ``GroupCoordinator.send_tensor_dict``): one kernel-TCP message + one NCCL network step = 52.4 us.
CLUSTER_HOP_LATENCY_S = KERNEL_TCP_ONE_WAY_S + NCCL_NET_STEP_LATENCY_S
#: The same on plain Ethernet (DERIVED): NCCL's socket transport goes through the kernel TCP stack too, so one more
#: kernel-TCP one-way time = 82.4 us.
ETHERNET_HOP_LATENCY_S = 2 * KERNEL_TCP_ONE_WAY_S + NCCL_NET_STEP_LATENCY_S
#: Node-to-node bandwidth assumed when an offer's network is unknown (fabric "" and not documented), GB/s: 25 Gbit/s
#: / 8, the slowest documented 8-GPU instance without a cluster fabric (providers.facts DEFAULT_GBPS_BY_FABRIC
#: "ethernet": AWS p3.16xlarge). Used only for pipeline-parallel serving, whose per-token traffic is small.
UNKNOWN_NETWORK_GBPS_PER_NODE = 25.0 / 8.0
#: Values handed from one pipeline stage to the next per token: vLLM's models return
#: ``IntermediateTensors({"hidden_states": ..., "residual": ...})`` on every rank but the last (e.g.
#: vllm/model_executor/models/llama.py), i.e. 2 vectors of ``hidden_size``.
PIPELINE_VALUES_PER_TOKEN_PER_HIDDEN = 2


@dataclass(frozen=True)
class NodeNetwork:
    """The network between the instances (nodes) a replica spans, as sizing uses it.

    Attributes:
        gbps_per_node: node-to-node bandwidth of one instance, one direction, GB/s (10**9 BYTES/s), all the NICs
            that carry GPU traffic (providers.facts.fabric_gbps_per_node). NCCL runs one ring per NIC, so a
            collective across nodes gets about this as its bus bandwidth (F§9, busbw).
        gpus_per_node: GPUs per instance; a replica of more GPUs crosses this network.
        hop_latency_s: fixed time of one point-to-point transfer between two instances, s
            (:data:`CLUSTER_HOP_LATENCY_S` or :data:`ETHERNET_HOP_LATENCY_S`).
        fabric: the offer's ``fabric`` ("efa", "infiniband", "rdma", "tcpxo", "tcpx", "ethernet"; "" unknown).
        cluster: a cluster fabric (every fabric but "ethernet" and unknown): training may span instances over it.
        source: where the bandwidth comes from.
        stated: a source states ``gbps_per_node`` (``providers.facts``); False when it is assumed
            (:data:`UNKNOWN_NETWORK_GBPS_PER_NODE`). A serving replica spans nodes only over a stated fabric.
    """

    gbps_per_node: float
    gpus_per_node: int
    hop_latency_s: float
    fabric: str = ""
    cluster: bool = False
    source: str = ""
    stated: bool = True  # a source states gbps_per_node (False: UNKNOWN_NETWORK_GBPS_PER_NODE assumed)


#: The network assumed when no offer is given (``gpuopt estimate``): 8-GPU nodes, 8 x 200 Gb/s InfiniBand HDR
#: (``GPUS_PER_NODE x INTER_NODE_GBPS_PER_GPU`` = 200 GB/s per node), a cluster fabric -- gpuopt's behaviour before
#: offers carried a fabric.
DEFAULT_NODE_NETWORK = NodeNetwork(
    gbps_per_node=GPUS_PER_NODE * INTER_NODE_GBPS_PER_GPU, gpus_per_node=GPUS_PER_NODE,
    hop_latency_s=CLUSTER_HOP_LATENCY_S, fabric="infiniband", cluster=True,
    source="default: 8 x 200 Gb/s InfiniBand HDR per 8-GPU node (DGX A100, Azure ND A100 v4)")


def offer_network(offer: Mapping[str, Any]) -> NodeNetwork:
    """The network between the instances of one offer (a normalized offer row as a dict).

    * fabric: the offer's ``fabric`` column. A frame without the column (built before it existed) gets
      ``providers.facts.fabric_of(provider, instance_type)``, which is what the price store fills in for such files.
      A missing or empty value is unknown, and unknown is not a cluster fabric.
    * cluster: ``providers.facts.is_cluster_fabric`` (every fabric but "ethernet"; never "").
    * gbps_per_node: ``providers.facts.fabric_gbps_per_node(provider, instance_type, fabric)`` (GB/s, bytes); when
      it knows none (0.0 for an unknown fabric), :data:`UNKNOWN_NETWORK_GBPS_PER_NODE`.
    * hop_latency_s: :data:`CLUSTER_HOP_LATENCY_S` on a cluster fabric, else :data:`ETHERNET_HOP_LATENCY_S`.
    * gpus_per_node: the offer's whole GPUs (``int(gpu_count)``, at least 1).
    """
    from providers.facts import fabric_gbps_per_node, fabric_of, is_cluster_fabric

    provider, itype = str(offer.get("provider") or ""), str(offer.get("instance_type") or "")
    if "fabric" in offer:
        raw = offer.get("fabric")
        fabric = raw.strip().lower() if isinstance(raw, str) else ""
    else:
        fabric = fabric_of(provider, itype)
    cluster = bool(fabric) and is_cluster_fabric(fabric)
    gbps = fabric_gbps_per_node(provider, itype, fabric) if fabric else 0.0
    source = f"{fabric} {gbps * 8:g} Gbit/s per node (providers.facts)"
    if not gbps or gbps <= 0:
        gbps = UNKNOWN_NETWORK_GBPS_PER_NODE
        source = f"network unknown: {gbps * 8:g} Gbit/s assumed (slowest documented 8-GPU instance without a fabric)"
    try:
        per_node = max(1, int(float(offer.get("gpu_count") or 1)))
    except (TypeError, ValueError):
        per_node = 1
    return NodeNetwork(gbps_per_node=float(gbps), gpus_per_node=per_node,
                       hop_latency_s=CLUSTER_HOP_LATENCY_S if cluster else ETHERNET_HOP_LATENCY_S,
                       fabric=fabric, cluster=cluster, source=source,
                       stated=not source.startswith("network unknown"))


#: GPUs of one node, by GPU model, where it is not :data:`GPUS_PER_NODE` (8: an HGX/DGX or OAM baseboard, and the
#: largest AWS/Azure/GCP instances of the PCIe cards, e.g. g6.48xlarge 8 x L4, g5.48xlarge 8 x A10G): a GB200/GB300
#: NVL72 rack is 18 compute trays of 2 Grace CPUs + 4 Blackwell GPUs each (NVIDIA GB200 NVL72 datasheet: "72
#: Blackwell GPUs ... 18 compute nodes"), and a GH200 node is one Grace Hopper superchip (1 GPU).
NODE_GPUS_BY_MODEL = {"GB200": 4, "GB300": 4, "GH200": 1}


def node_gpus(gpu_model: str) -> int:
    """GPUs in one node of ``gpu_model`` (an offers' ``gpu_model``, e.g. "H100-80GB", "GB200"): the unit a
    serving replica that spans instances is made of (optimizer.planning.candidates.cross_node_rule). Unknown
    models: :data:`GPUS_PER_NODE`."""
    name = str(gpu_model or "").upper()
    for model, n in NODE_GPUS_BY_MODEL.items():
        if name == model or name.startswith(model + "-") or name.startswith(model + " "):
            return n
    return GPUS_PER_NODE
