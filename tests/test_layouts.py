"""Replica layouts that can be bought: tensor parallel inside one instance, pipeline stages across instances
(serving), and training across instances only over a cluster fabric. Every asserted number cites its source.

Sources used below:
- Llama-3.1-405B config (HF config.json via litgpt 0.5.13; shared/data/reference/model_configs.csv): 126 layers,
  hidden 16384, 128 heads, 8 KV heads, head_dim 128, vocab 128256, untied embeddings, 405,853,388,800 params;
  KV cache 2 x 126 x 8 x 128 x 2 B = 516,096 B/token (FORMULAS.md s.6).
- NVIDIA H100 SXM5 datasheet: 3,350 GB/s HBM3, 989.5 TFLOP/s dense BF16, NVLink 900 GB/s; 80 GiB
  (81,920 MiB as AWS reports it, providers.gpu_names). A100 40GB SXM4: 1,555 GB/s, 312 TFLOP/s, NVLink 600 GB/s
  bidirectional = 300 GB/s one way (FORMULAS.md s.9).
- vLLM distributed serving docs ("the tensor parallel size is the number of GPUs you want to use in each node, and
  the pipeline parallel size is the number of nodes ... 16 GPUs in 2 nodes: TP 8, PP 2").
- vLLM ``VllmConfig.max_concurrent_batches`` = pipeline_parallel_size ("PP requires PP-size concurrent batches to
  fill the pipeline"); ``IntermediateTensors({"hidden_states", "residual"})`` between stages.
- GPipe (Huang et al. 2019, arXiv 1811.06965) bubble (p - 1)/(m + p - 1); Megatron-LM (Narayanan et al. 2021).
- AWS fabric facts (providers/facts.py, from the EC2 docs): p4d.24xlarge 4 x 100 Gbit/s EFA = 50 GB/s,
  p5.48xlarge 3,200 Gbit/s EFA = 400 GB/s.
- gpuopt's serving model (optimizer/sizing/serving.py: decode step, prefill, fitted on shared/data/perf/serving.csv by
  benchmarks/serving_fit.py) and sizing constants (optimizer/sizing/, each with its own source): USABLE_FRACTION
  0.9 (vLLM gpu_memory_utilization), MFU 0.40, ZeRO volumes (ZeRO paper s.7), hop latency (NCCL tuning.cc + kernel
  TCP).
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import OFFER_COLUMNS
from optimizer.planning.candidates import MAX_GPUS_PER_REPLICA, candidates_for, shape_label
from optimizer.sizing import (
    CLUSTER_HOP_LATENCY_S,
    DEFAULT_MFU,
    DEFAULT_NODE_NETWORK,
    ETHERNET_HOP_LATENCY_S,
    UNKNOWN_NETWORK_GBPS_PER_NODE,
    NodeNetwork,
    Workload,
    data_parallel_efficiency,
    estimate,
    min_gpus_per_replica,
    offer_network,
    pipeline_bubble_fraction,
    pipeline_decode_cycle_s,
    size_replica,
)
from optimizer.sizing.specs import load_gpu, load_model

GIB = 2**30
H100 = load_gpu("H100-80GB")
A100_40 = load_gpu("A100-40GB")
LLAMA405 = load_model("Llama-3.1-405B")
LLAMA70 = load_model("meta-llama/Llama-2-70b-hf")
LLAMA7 = load_model("meta-llama/Llama-2-7b-hf")

#: AWS p5.48xlarge: 3,200 Gbit/s EFA = 400 GB/s per node (providers/facts.py, AWS EFA docs), 8 x H100 per node.
P5_NETWORK = NodeNetwork(gbps_per_node=400.0, gpus_per_node=8, hop_latency_s=CLUSTER_HOP_LATENCY_S, fabric="efa",
                         cluster=True, source="p5.48xlarge 3200 Gbit/s EFA")


def serve405(**kw) -> Workload:
    # gpuopt defaults: requests of 1,024 + 128 tokens, bf16 weights, the server scenario's targets
    return Workload(task="serve", model=LLAMA405, **kw)


def _offer(instance_type: str, gpu_model: str, gpu_count: float, gpu_memory_gib: float, fabric: str | None,
           provider: str = "aws", usd_per_hour: float = 10.0, interconnect: str = "nvlink") -> dict:
    row = {c: None for c in OFFER_COLUMNS}
    row.update(provider=provider, region="us-east-1", zone="", instance_type=instance_type, gpu_model=gpu_model,
               gpu_count=float(gpu_count), gpu_memory_gib=gpu_memory_gib, vcpus=96.0, memory_gib=1152.0,
               interconnect=interconnect, fabric=fabric, zone_kind="", pricing="on_demand", payment="",
               upfront_usd=0.0, recurring_usd_per_hour=usd_per_hour, usd_per_hour=usd_per_hour, term_hours=0.0,
               currency="USD", source="test", as_of="2026-01-01")
    if fabric is None:
        del row["fabric"]
    return row


def _frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


# ------------------------------------------------------------------------------------------------ serving layouts


def test_405b_on_8_gpu_h100_instances_is_tp8_inside_and_pp_across():
    # p5.48xlarge: 8 x H100 80 GiB, EFA. 405B bf16 weights alone are 811.7 GB = 756 GiB (2 B/param), more than the
    # instance's 8 x 72 GiB usable: the replica spans instances, each a pipeline stage of TP 8 (vLLM docs).
    df = _frame(_offer("p5.48xlarge", "H100-80GB", 8, 80.0, "efa", usd_per_hour=98.32))
    cands, rejected, sizing = candidates_for(serve405(tokens_per_second=100.0), df)
    assert rejected == {}
    (c,) = cands
    assert c.tensor_parallel == 8 and c.sizing.tensor_parallel == 8  # = GPUs per instance, never 16
    assert c.pipeline_parallel >= 2 and c.sizing.pipeline_parallel == c.pipeline_parallel
    assert c.instances_per_unit == c.pipeline_parallel and c.replicas_per_unit == 1
    assert c.sizing.gpus_per_replica == 8 * c.pipeline_parallel
    assert c.fabric == "efa" and c.max_units is None
    assert c.usd_per_unit_hour == pytest.approx(c.instances_per_unit * 98.32)
    assert "TP8 PP2" in c.shape and c.shape in sizing
    assert any(a.startswith("layout TP 8 x PP 2") for a in c.sizing.assumptions)


def test_405b_on_h100_smallest_layout_is_two_stages():
    # Per GPU of a TP 8 x PP 2 replica (DERIVED from the config and FORMULAS.md s.4): 63 of 126 blocks of
    # (N - 2Vh)/126 params + one V x h matrix, x 2 B / 8 GPUs; usable = vLLM's 0.9 of 80 GiB; the KV cache is what is
    # left after the weights and vLLM's activation workspace, and the batch the largest that fits it and the targets
    s = min_gpus_per_replica(serve405(), H100)
    assert (s.gpus_per_replica, s.tensor_parallel, s.pipeline_parallel) == (16, 8, 2)
    embed = LLAMA405.vocab_size * LLAMA405.hidden_size  # 128256 x 16384
    stage_params = 63 * (LLAMA405.params_total - 2 * embed) / 126 + embed
    assert s.breakdown_gib["weights"] / 16 == pytest.approx(stage_params * 2 / 8 / GIB, rel=1e-9)
    assert s.usable_gib_per_gpu == pytest.approx(80 * 0.9)  # H100 80 GiB x vLLM's 0.9
    assert s.fits and s.memory_gib_per_gpu <= s.usable_gib_per_gpu
    assert s.concurrency <= s.kv_capacity_sequences
    # the same through gpuopt estimate's path (no offer: 8-GPU nodes)
    e = estimate(serve405(), "H100-80GB")
    assert (e["gpus_per_replica"], e["tensor_parallel"], e["pipeline_parallel"]) == (16, 8, 2)


def _stage_s(batch: int, stages: int, context: float) -> float:
    """One stage's decode step (optimizer.sizing.serving.decode_step_s) for a micro-batch."""
    from optimizer.sizing import serving as sv

    return sv.decode_step_s(LLAMA405, H100, sv.Layout(8, stages), "bf16", batch, context)


def _host_s(batch: int) -> float:
    """vLLM's host time per iteration (fitted on published rate sweeps, benchmarks/latency_fit.py)."""
    from optimizer.sizing.serving import ENGINES

    return ENGINES["vllm"].step_overhead_s + ENGINES["vllm"].seq_overhead_s * batch


def _prefill_s(inp: int) -> float:
    from optimizer.sizing import serving as sv

    return sv.prefill_s(LLAMA405, H100, sv.Layout(8, 2), "bf16", inp)


def test_pipeline_decode_first_principles_405b():
    # 16 sequences, PP 2: vLLM keeps PP = 2 micro-batches of 8 in flight; a token crosses both stages:
    # cycle = max(m t_stage, p t_stage + (p-1) hop + return), hop = 52.4 us + 2 x 16384 x 2 B x 8 / 400 GB/s
    # (hidden_states + residual over p5's EFA), return = 52.4 us; TPOT = cycle + (B / O) x one prefill (continuous
    # batching, optimizer/sizing/serving.py), tokens/s = B / TPOT
    s = size_replica(serve405(concurrency=16), H100, 16, pipeline_parallel=2, network=P5_NETWORK)
    inp, out = 1024, 128  # gpuopt's default request (vLLM benchmark_serving random dataset)
    t_stage = _stage_s(8, 2, inp + out / 2)
    hop = 52.4e-6 + 2 * 16384 * 2 * 8 / 400e9
    cycle = max(2 * t_stage, 2 * t_stage + hop + 52.4e-6)
    tpot = cycle + _host_s(16) + 16 / out * _prefill_s(inp)
    assert CLUSTER_HOP_LATENCY_S == pytest.approx(52.4e-6)  # 30 us kernel TCP + 8.4 + 14 us NCCL network step
    assert s.time_per_output_token_ms == pytest.approx(tpot * 1e3, rel=1e-9)
    assert s.tokens_per_second_per_replica == pytest.approx(16 / tpot, rel=1e-9)


def test_pipeline_costs_throughput_and_latency_against_one_16_gpu_nvlink_domain():
    # A hypothetical 16 x H100 box with one NVLink domain (TP 16) holds the same replica. At the same 16 sequences,
    # each of its GPUs reads 1/16 of the weights ONCE per step for all sequences; each pipeline stage reads its half
    # of the weights once PER MICRO-BATCH (2 per token), so in the bandwidth-bound regime the pipeline is slower.
    w = serve405(concurrency=16)
    pp = size_replica(w, H100, 16, pipeline_parallel=2, network=P5_NETWORK)
    box = size_replica(w, H100, 16)  # pipeline_parallel=1: TP 16 over NVLink (no such instance exists)
    assert (box.tensor_parallel, box.pipeline_parallel) == (16, 1)
    assert pp.tokens_per_second_per_replica < 0.8 * box.tokens_per_second_per_replica
    assert pp.time_per_output_token_ms > box.time_per_output_token_ms
    # memory: TP 16 replicates the 8 KV heads on 16 GPUs, so the pipelined replica needs no more per GPU
    assert pp.memory_gib_per_gpu <= box.memory_gib_per_gpu


def test_pipeline_matches_one_domain_once_compute_bound():
    # With enough sequences a decode step is compute-bound (s.7): FLOPs per GPU per token are the same for TP 8 x
    # PP 2 and TP 16 and the stages are busy (m = p micro-batches, no bubble): the two come within a few percent
    w = serve405(concurrency=512, input_tokens=128, output_tokens=256)
    pp = size_replica(w, H100, 16, pipeline_parallel=2, network=P5_NETWORK)
    box = size_replica(w, H100, 16)
    assert pp.concurrency == box.concurrency == 512
    assert pp.tokens_per_second_per_replica / box.tokens_per_second_per_replica == pytest.approx(1.0, abs=0.05)


def test_more_stages_do_not_add_decode_throughput_when_bandwidth_bound():
    # Each stage re-reads its weights per micro-batch: p stages x W/(p x 8) per GPU = W/8 per cycle whatever p
    # (DERIVED, s.7): three stages give about the throughput of two, in less memory per GPU
    two = size_replica(serve405(concurrency=16), H100, 16, pipeline_parallel=2, network=P5_NETWORK)
    three = size_replica(serve405(concurrency=16), H100, 24, pipeline_parallel=3, network=P5_NETWORK)
    assert three.tokens_per_second_per_replica == pytest.approx(two.tokens_per_second_per_replica, rel=0.10)
    assert three.breakdown_gib["weights"] / 24 < two.breakdown_gib["weights"] / 16


def test_bubble_formula_and_in_flight_micro_batches():
    # GPipe: bubble (p - 1)/(m + p - 1): p = 4, m = 4 -> 3/7; p = 8, m = 32 -> 7/39 (Huang et al. 2019).
    assert pipeline_bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert pipeline_bubble_fraction(8, 32) == pytest.approx(7 / 39)
    assert pipeline_bubble_fraction(1, 1) == 0.0
    # continuous decode, no hops: one micro-batch in flight idles each stage (p-1)/p = the bubble at m = 1;
    # p micro-batches in flight (vLLM max_concurrent_batches = PP) keep every stage busy.
    for p in (2, 3, 8):
        one = pipeline_decode_cycle_s(1.0, 0.0, 0.0, p, 1)
        full = pipeline_decode_cycle_s(1.0, 0.0, 0.0, p, p)
        assert 1 - 1 * 1.0 / one == pytest.approx(pipeline_bubble_fraction(p, 1))
        assert p * 1.0 / full == pytest.approx(1.0)
    # hops lengthen the trip: p t_stage + (p - 1) t_hop + t_return (DERIVED)
    assert pipeline_decode_cycle_s(10e-3, 1e-3, 0.1e-3, 2, 2) == pytest.approx(20e-3 + 1e-3 + 0.1e-3)
    with pytest.raises(InputError):
        pipeline_bubble_fraction(0, 1)


def test_one_sequence_through_two_stages_waits_for_both():
    # concurrency 1: one micro-batch, so each token crosses both stages: cycle = 2 t_stage + hop + return, and the
    # stages idle half the time (the GPipe bubble at m = 1 of p = 2: 1/2)
    s = size_replica(serve405(concurrency=1), H100, 16, pipeline_parallel=2, network=P5_NETWORK)
    cycle = 2 * _stage_s(1, 2, 1024 + 64) + (52.4e-6 + 2 * 16384 * 2 / 400e9) + 52.4e-6
    tpot = cycle + _host_s(1) + 1 / 128 * _prefill_s(1024)
    assert s.time_per_output_token_ms == pytest.approx(tpot * 1e3, rel=1e-9)
    assert s.tokens_per_second_per_replica == pytest.approx(1 / tpot, rel=1e-9)


def test_slower_network_costs_pipeline_throughput():
    # the same stages over 25 Gbit/s Ethernet (3.125 GB/s; providers.facts "ethernet" default) with kernel-TCP
    # hops (82.4 us) decode a little slower than over p5's 400 GB/s EFA; one sequence: the cycle is
    # 2 t_stage + hop + return, so the difference is the hops'
    eth = dataclasses.replace(P5_NETWORK, gbps_per_node=UNKNOWN_NETWORK_GBPS_PER_NODE, fabric="ethernet",
                              cluster=False, hop_latency_s=ETHERNET_HOP_LATENCY_S)
    fast = size_replica(serve405(concurrency=1), H100, 16, pipeline_parallel=2, network=P5_NETWORK)
    slow = size_replica(serve405(concurrency=1), H100, 16, pipeline_parallel=2, network=eth)
    assert ETHERNET_HOP_LATENCY_S == pytest.approx(82.4e-6)
    assert slow.tokens_per_second_per_replica < fast.tokens_per_second_per_replica
    hop_slow = 82.4e-6 + 2 * 16384 * 2 / 3.125e9
    hop_fast = 52.4e-6 + 2 * 16384 * 2 / 400e9
    assert slow.time_per_output_token_ms - fast.time_per_output_token_ms == pytest.approx(
        1e3 * (hop_slow - hop_fast + 82.4e-6 - 52.4e-6), rel=1e-6)


def test_serving_spans_instances_only_over_a_cluster_fabric():
    # DESIGN.md (the planning model): "PP across instances only where the fabric allows". The same p5.48xlarge
    # over plain Ethernet holds no 405B replica; over its EFA (400 GB/s, providers.facts) it is TP 8 x PP 2.
    df = _frame(_offer("p5.48xlarge", "H100-80GB", 8, 80.0, "ethernet"))
    cands, rejected, _ = candidates_for(serve405(tokens_per_second=100.0), df)
    assert cands == [] and rejected == {"no_cluster_fabric": 1}
    df = _frame(_offer("p5.48xlarge", "H100-80GB", 8, 80.0, "efa"))
    (c,), _, _ = candidates_for(serve405(tokens_per_second=100.0), df)
    assert (c.tensor_parallel, c.pipeline_parallel, c.fabric) == (8, 2, "efa")


def test_pipeline_parallel_is_checked():
    with pytest.raises(InputError) as e:
        size_replica(serve405(), H100, 16, pipeline_parallel=3)  # 16 GPUs do not split in 3 stages
    assert e.value.field == "pipeline_parallel"
    with pytest.raises(InputError) as e:  # training pipelines too (issue 11), in stages that divide the GPUs
        size_replica(Workload(task="train", model=LLAMA7, tokens=1e9), H100, 16, pipeline_parallel=3)
    assert e.value.field == "pipeline_parallel"
    assert size_replica(Workload(task="train", model=LLAMA7, tokens=1e9), H100, 16, pipeline_parallel=2).pipeline_parallel == 2
    with pytest.raises(InputError):
        size_replica(serve405(), H100, 0.5, pipeline_parallel=2)
    with pytest.raises(InputError):
        size_replica(serve405(), H100, 128 * 2, pipeline_parallel=128)  # 128 stages > 126 layers


def test_one_stage_is_one_tensor_parallel_group():
    # pipeline_parallel=1: TP 4 of Llama-2-70B on 4 x H100; at its operating point tokens/s = rate x output tokens
    # = batch / TPOT (Little's law; the batch rounded to a whole sequence)
    w = Workload(task="serve", model=LLAMA70)
    s = size_replica(w, H100, 4)
    assert (s.tensor_parallel, s.pipeline_parallel) == (4, 1)
    assert s.tokens_per_second_per_replica == pytest.approx(s.request_rate * s.output_tokens)
    assert s.time_per_output_token_ms == pytest.approx(1e3 * s.concurrency / s.tokens_per_second_per_replica,
                                                       rel=1.0 / s.concurrency)


# ------------------------------------------------------------------------------------------------ training


def train70(**kw) -> Workload:
    # Llama-2-70B full training, ZeRO-3: 16 B/param x 68.98e9 = 1.1 TB of model states (ZeRO paper, K = 12),
    # more than one 8 x A100-40GB instance (8 x 36 GiB usable)
    return Workload(task="train", model=LLAMA70, tokens=1e9, deadline_hours=730.0, **kw)


def test_multi_instance_training_refused_on_ethernet_accepted_on_efa():
    efa = _offer("p4d.24xlarge", "A100-40GB", 8, 40.0, "efa", usd_per_hour=32.77)
    eth = dict(efa, instance_type="p4d-like.ethernet", fabric="ethernet")
    cands, rejected, _ = candidates_for(train70(), _frame(efa, eth))
    assert rejected == {"no_cluster_fabric": 1}
    (c,) = cands
    assert c.offer["instance_type"] == "p4d.24xlarge" and c.fabric == "efa"
    assert c.instances_per_unit >= 2 and c.sizing.gpus_per_replica == 8 * c.instances_per_unit
    # the job's layout (issue 11): TP inside an instance, the rest pipeline/data parallel over the fabric
    lay = c.sizing.training_layout
    assert lay["tensor_parallel"] <= 8
    assert lay["tensor_parallel"] * lay["pipeline_parallel"] * lay["data_parallel"] * lay["context_parallel"] == \
        c.sizing.job_gpus
    assert "efa 50 GB/s" in c.shape  # p4d: 4 x 100 Gbit/s EFA (providers/facts.py)
    # an unknown fabric ("") is not a cluster fabric either
    unknown = dict(efa, provider="mycloud", instance_type="box8", fabric="")
    _, rejected, _ = candidates_for(train70(), _frame(unknown))
    assert rejected == {"no_cluster_fabric": 1}


def test_training_that_needs_no_second_instance_is_kept_without_a_fabric():
    # Llama-2-7B LoRA fits one A100-40GB; on an Ethernet-only offer the job may not spread its data-parallel group
    # over several instances: max_units = 1 (on EFA: no limit)
    w = Workload(task="lora", model=LLAMA7, tokens=1e9, deadline_hours=100.0)
    eth = _offer("box8", "A100-40GB", 8, 40.0, "ethernet", provider="mycloud")
    efa = dict(eth, instance_type="p4d.24xlarge", provider="aws", fabric="efa")
    cands, rejected, _ = candidates_for(w, _frame(eth, efa))
    assert rejected == {}
    by = {c.offer["instance_type"]: c for c in cands}
    assert by["box8"].max_units == 1 and by["box8"].instances_per_unit == 1
    assert by["p4d.24xlarge"].max_units is None


def test_data_parallel_efficiency_falls_with_fabric_bandwidth():
    # ZeRO-3 over 16 A100-40GB (2 nodes): t_comm = 3 x 2 B x N x (n-1)/n / busbw, busbw = min(NVLink 300 GB/s one
    # way, node fabric) (ZeRO paper s.7; NCCL busbw, FORMULAS.md s.9); t_compute = 6 N b s / (312e12 x 0.40).
    w = train70()
    nets = {gbps: NodeNetwork(gbps_per_node=gbps, gpus_per_node=8, hop_latency_s=CLUSTER_HOP_LATENCY_S,
                              fabric="efa", cluster=True) for gbps in (12.5, 50.0, 400.0)}
    eff = {gbps: data_parallel_efficiency(w, A100_40, 16, net) for gbps, net in nets.items()}
    assert eff[12.5] < eff[50.0] < eff[400.0]
    t_compute = 6 * LLAMA70.params_active * 1 * 4096 / (312e12 * DEFAULT_MFU["datacenter_nvlink"])
    for gbps, e in eff.items():
        busbw = min(300.0, gbps)  # p5-class 400 GB/s is capped by A100 NVLink's 300 GB/s one way
        t_comm = 3 * 2 * LLAMA70.params_total * 15 / 16 / (busbw * 1e9)
        assert e == pytest.approx(t_compute / (t_compute + t_comm), rel=1e-12)
    # default (no offer, gpuopt estimate): 8-GPU nodes at 8 x 25 GB/s = 200 GB/s, as before
    assert data_parallel_efficiency(w, A100_40, 16) == pytest.approx(
        data_parallel_efficiency(w, A100_40, 16, dataclasses.replace(nets[50.0], gbps_per_node=200.0)))
    assert DEFAULT_NODE_NETWORK.gbps_per_node == 200.0 and DEFAULT_NODE_NETWORK.gpus_per_node == 8
    # inside one node the fabric is not used
    assert data_parallel_efficiency(w, A100_40, 8, nets[12.5]) == data_parallel_efficiency(w, A100_40, 8, nets[400.0])


def test_training_candidates_are_slower_over_a_slower_fabric():
    # the same 8 x A100-40GB shape in a user's catalog: "rdma" (facts default 3,200 Gbit/s = 400 GB/s) against
    # "infiniband" (facts default 100 Gbit/s = 12.5 GB/s): same replica, less throughput over the slower fabric
    fast = _offer("boxr", "A100-40GB", 8, 40.0, "rdma", provider="mycloud")
    slow = dict(fast, instance_type="boxi", fabric="infiniband")
    cands, _, sizing = candidates_for(train70(), _frame(fast, slow))
    by = {c.offer["instance_type"]: c for c in cands}
    assert by["boxr"].instances_per_unit == by["boxi"].instances_per_unit
    assert by["boxi"].throughput_per_unit < by["boxr"].throughput_per_unit
    assert by["boxr"].shape != by["boxi"].shape and len(sizing) == 2


# ------------------------------------------------------------------------------------------------ offer network


def test_offer_network_from_the_fabric_column():
    p4d = offer_network(_offer("p4d.24xlarge", "A100-40GB", 8, 40.0, "efa"))
    assert (p4d.fabric, p4d.cluster, p4d.gbps_per_node, p4d.gpus_per_node) == ("efa", True, 50.0, 8)
    assert p4d.hop_latency_s == CLUSTER_HOP_LATENCY_S
    # a frame without the column (written before it existed) gets the documented fabric of the instance type
    assert offer_network(_offer("p5.48xlarge", "H100-80GB", 8, 80.0, None)).gbps_per_node == 400.0
    # empty = unknown: no cluster fabric, the assumed 25 Gbit/s
    unk = offer_network(_offer("box", "L4", 1, 22.35, "", provider="mycloud"))
    assert (unk.fabric, unk.cluster, unk.gbps_per_node) == ("", False, UNKNOWN_NETWORK_GBPS_PER_NODE)
    assert unk.hop_latency_s == ETHERNET_HOP_LATENCY_S
    assert offer_network(_offer("box", "L4", 1, 22.35, pd.NA, provider="mycloud")).cluster is False


def test_shape_labels():
    assert shape_label("L4", 4, 22.35, "pcie") == "L4 x4 (22.35 GiB, pcie)"
    assert shape_label("H100-80GB", 8, 80, "nvlink", instances=2, tensor_parallel=8, pipeline_parallel=2,
                       fabric="efa", gbps_per_node=400.0) == "H100-80GB x8 (80 GiB, nvlink) x2 instances, TP8 PP2 over efa 400 GB/s"


def test_no_layout_beyond_the_gpu_cap():
    # Llama-3.1-405B on 1 x T4 instances: 756 GiB of fp16 weights (Turing has no bf16) x 1.2 (s.8) + 31.5 GiB of KV cache = 938.7 GiB
    # over 15 GiB x 0.9 = 13.5 GiB usable per T4 (AWS reports 15,360 MiB) = 70 stages > MAX_GPUS_PER_REPLICA 64
    need = (LLAMA405.params_total * 2 * 1.2 + 516_096 * 4096 * 16) / GIB
    assert math.ceil(need / 13.5) > MAX_GPUS_PER_REPLICA
    df = _frame(_offer("g4dn.xlarge", "T4", 1, 15.0, "ethernet", interconnect="pcie"))
    cands, rejected, _ = candidates_for(serve405(tokens_per_second=1.0, precision="fp16"), df)
    assert cands == [] and rejected == {"does_not_fit": 1}
    # in bf16 the T4 is refused before any sizing
    assert candidates_for(serve405(tokens_per_second=1.0), df)[1] == {"precision_unsupported": 1}
