"""Sizing: how much GPU memory one replica of a workload needs on a GPU model, and how fast it runs there.

A *replica* is one copy of the model spread over ``gpus`` GPUs of one model: for serving, tensor parallel inside one
instance and, when one instance is too small, pipeline stages across instances (``pipeline_parallel``); for training,
ZeRO data parallel (stage 0-3), across instances only over a cluster fabric. The planner (``optimizer/model.py``)
turns replicas into instances and gives the instances' network (:func:`offer_network`); this sub-package only answers
"does a replica fit on g GPUs of type X laid out so, and what is its throughput?".

Formulas and constants come from ``shared/FORMULAS.md`` (section numbers cited as "F§n") and the papers it cites.
Units: bytes and GiB (2**30 B) for memory, GB/s (1e9 B/s) for bandwidth, FLOP/s, tokens/s, hours.
Every result carries ``assumptions``: the constants used, each with its source.

Modules, lowest first (each imports only those above it; none imports this ``__init__``):

* :mod:`~optimizer.sizing.specs` -- GPU datasheet table and model-config table (``optimizer/data/*.csv``);
* :mod:`~optimizer.sizing.goodput` -- goodput of a training job (failures, checkpoints, restarts, spot reclaims);
* :mod:`~optimizer.sizing.network` -- the network between the instances a replica spans (:class:`NodeNetwork`);
* :mod:`~optimizer.sizing.serving` -- the serving performance model (KV cache, batch, TTFT/TPOT, engines);
* :mod:`~optimizer.sizing.training` -- the training performance model (layout search, step time, MFU, memory);
* :mod:`~optimizer.sizing.workload` -- the :class:`Workload` and :class:`ReplicaSizing` records and validation;
* :mod:`~optimizer.sizing.memory` -- model states under ZeRO, LoRA bytes, training activations;
* :mod:`~optimizer.sizing.throughput` -- 6·N·D FLOPs, peak FLOP/s and MFU, pipeline bubble, data-parallel scaling;
* :mod:`~optimizer.sizing.training_job` -- a train/finetune job on one GPU model (:func:`size_training`);
* :mod:`~optimizer.sizing.estimate` -- one replica (:func:`size_replica`), the smallest that fits, ``gpuopt estimate``.

Layering: sizing sits below planning. Nothing here imports the planner (``optimizer.planning``) or the modules of
the commands above it (``optimizer.review``, ``optimizer.explain``, ``optimizer.diagnose``) nor ``gpuopt`` outside
``gpuopt.kernel``; ``tests/test_structure.py`` checks it. It may import ``gpuopt.kernel`` and ``providers``.

No pandas here (this package is imported by every ``gpuopt`` command): plain floats only. This ``__init__`` re-exports
the public API of the former ``optimizer/sizing.py`` module, so ``from optimizer.sizing import Workload, estimate``
works; the serving, training, specs and goodput models are imported from their own modules
(``optimizer.sizing.serving`` ...).
"""

from optimizer.sizing.estimate import (estimate, gpu_hours, latency_curve, min_gpus_per_replica, operating_point,
                                      replica_sizes, replicas_at_load, size_replica)
from optimizer.sizing.memory import lora_base_weight_bytes, model_state_bytes_per_gpu
from optimizer.sizing.network import (
    CLUSTER_HOP_LATENCY_S,
    DEFAULT_NODE_NETWORK,
    ETHERNET_HOP_LATENCY_S,
    GPUS_PER_NODE,
    INTER_NODE_GBPS_PER_GPU,
    KERNEL_TCP_ONE_WAY_S,
    NCCL_NET_STEP_LATENCY_S,
    PIPELINE_VALUES_PER_TOKEN_PER_HIDDEN,
    UNKNOWN_NETWORK_GBPS_PER_NODE,
    NodeNetwork,
    node_gpus,
    offer_network,
)
from optimizer.sizing.throughput import (
    data_parallel_efficiency,
    pipeline_bubble_fraction,
    pipeline_decode_cycle_s,
    train_flops,
)
from optimizer.sizing.training_job import (
    TRAIN_GPU_COUNTS,
    check_training_options,
    estimate_training,
    size_training,
    training_setup,
)
from optimizer.sizing.workload import (
    DEFAULT_CONTEXT,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_MFU,
    DEFAULT_OUTPUT_TOKENS,
    FULL_TRAINING_TASKS,
    GIB,
    LORA_ADAPTER_BYTES_PER_PARAM,
    LORA_BASE_BYTES,
    LORA_FLOPS_PER_PARAM_TOKEN,
    LORA_MAX_RANK,
    LORA_PRECISIONS,
    LORA_TARGETS,
    PRECISION_BYTES,
    QLORA_NF4_BYTES_PER_PARAM,
    TASKS,
    TRAINING_PRECISIONS,
    TRAINING_TASKS,
    USABLE_FRACTION,
    ZERO_K,
    ZERO_STAGES,
    ReplicaSizing,
    Workload,
    effective_context,
    latency_targets,
    lora_adapter_params,
    lora_defaults,
    lora_zero_stage,
    output_length,
    serve_lengths,
    training_framework,
    validate_workload,
    with_request_rate,
)

__all__ = [
    # workload: records, names, validation
    "Workload", "ReplicaSizing", "validate_workload", "with_request_rate", "effective_context", "output_length",
    "operating_point", "replicas_at_load", "latency_curve",
    "serve_lengths", "latency_targets", "training_framework", "lora_zero_stage", "lora_defaults", "lora_adapter_params",
    "GIB", "TASKS", "TRAINING_TASKS", "FULL_TRAINING_TASKS", "PRECISION_BYTES", "TRAINING_PRECISIONS", "ZERO_K",
    "ZERO_STAGES", "LORA_TARGETS", "LORA_MAX_RANK", "LORA_PRECISIONS", "LORA_ADAPTER_BYTES_PER_PARAM",
    "QLORA_NF4_BYTES_PER_PARAM", "LORA_BASE_BYTES", "LORA_FLOPS_PER_PARAM_TOKEN", "DEFAULT_CONTEXT", "USABLE_FRACTION",
    "DEFAULT_MFU", "DEFAULT_INPUT_TOKENS", "DEFAULT_OUTPUT_TOKENS",
    # network
    "NodeNetwork", "DEFAULT_NODE_NETWORK", "offer_network", "node_gpus", "GPUS_PER_NODE", "INTER_NODE_GBPS_PER_GPU",
    "NCCL_NET_STEP_LATENCY_S", "KERNEL_TCP_ONE_WAY_S", "CLUSTER_HOP_LATENCY_S", "ETHERNET_HOP_LATENCY_S",
    "UNKNOWN_NETWORK_GBPS_PER_NODE", "PIPELINE_VALUES_PER_TOKEN_PER_HIDDEN",
    # memory and throughput formulas
    "model_state_bytes_per_gpu", "lora_base_weight_bytes", "train_flops", "pipeline_bubble_fraction",
    "pipeline_decode_cycle_s", "data_parallel_efficiency",
    # training jobs
    "training_setup", "check_training_options", "size_training", "estimate_training", "TRAIN_GPU_COUNTS",
    # replicas and gpuopt estimate
    "size_replica", "replica_sizes", "min_gpus_per_replica", "gpu_hours", "estimate",
]
