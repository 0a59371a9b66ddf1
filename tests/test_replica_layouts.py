"""Issue 31, points 1 and 2: replica layouts an operator would run, and one replica shape per serving workload and
region.

The issue's cases, on rows of the shipped snapshot (``pricing_cache/data/offers.csv``):

* DeepSeek-V3 (fp8, SGLang, 4 requests/s) was planned as one replica pipelined over 11 single-H100 ``p5.4xlarge``
  VMs (TP1 x PP11 over 12.5 GB/s EFA). SGLang and vLLM document DeepSeek-V3 on one 8 x H200 (or B200) node; a
  replica now lives on one node, across nodes only node by node over a cluster fabric.
* A Llama-2-70B replica pipelined over two single-GPU VMs; 36 L4s over 9 four-GPU VMs: rejected (not whole nodes).
* Replicas of different speeds behind one endpoint and a top-up replica carrying a sliver of the demand: one
  replica shape per workload and region unless ``--mixed-replicas``, and then each shape carries at least
  ``--min-replica-share`` (10 %) of the demand.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app
from optimizer.planning.candidates import cross_node_rule, unit_shape
from optimizer.planning.problem import FleetBlock, FleetProblem, FleetWorkload, replica_shape
from optimizer.planning.solve import solve_cost
from optimizer.sizing import Workload, node_gpus, offer_network, size_replica
from optimizer.sizing.specs import load_gpu, load_model
from tests.test_exact import _cand

runner = CliRunner()


def _offer(itype: str, gpus: int, fabric: str = "efa") -> dict:
    return {"provider": "aws", "instance_type": itype, "fabric": fabric, "gpu_count": float(gpus)}


def test_node_size_by_gpu():
    # HGX/OAM boards hold 8 GPUs; a GB200 NVL72 compute tray 4 (18 trays of 2 Grace + 4 Blackwell = 72 GPUs,
    # NVIDIA GB200 NVL72 datasheet); a GH200 node one superchip
    assert node_gpus("H100-80GB") == 8 and node_gpus("L4") == 8 and node_gpus("A100-40GB") == 8
    assert node_gpus("GB200") == 4 and node_gpus("GH200") == 1


def test_llama2_70b_is_never_pipelined_over_single_gpu_vms():
    # p5.4xlarge: one H100 with EFA (providers.facts) -- the issue's "Llama-2-70B replica pipelined over two
    # single-GPU VMs"; a 70B bf16 replica (~129 GiB of weights) does not fit one 80 GiB GPU
    w = Workload(model=load_model("meta-llama/Llama-2-70b-hf"), task="serve", precision="bf16", tokens_per_second=500)
    gpu = load_gpu("H100-80GB")
    net = offer_network(_offer("p5.4xlarge", 1))
    assert net.cluster and net.fabric == "efa"
    assert unit_shape(size_replica, w, gpu, 1.0, "nvlink", net) == (None, None, "not_whole_node")
    # on the 8-GPU node it fits inside one instance: one node per replica, tensor parallel inside it
    k, r, s = unit_shape(size_replica, w, gpu, 8.0, "nvlink", offer_network(_offer("p5.48xlarge", 8)))
    assert k == 1 and r >= 1 and s.pipeline_parallel == 1 and s.tensor_parallel * r <= 8


def test_four_gpu_l4_vms_are_not_chained_and_whole_nodes_need_a_fabric():
    # the "36 L4s over 9 VMs": g6.12xlarge is 4 x L4 (the largest L4 instance, g6.48xlarge, has 8)
    w = Workload(model=load_model("meta-llama/Llama-2-70b-hf"), task="serve", precision="bf16", tokens_per_second=500)
    l4 = load_gpu("L4")
    assert cross_node_rule(l4, 4, offer_network(_offer("g6.12xlarge", 4))) == "not_whole_node"
    assert unit_shape(size_replica, w, l4, 4.0, "pcie", offer_network(_offer("g6.12xlarge", 4)))[2] \
        in ("not_whole_node", "does_not_fit", "misses_latency_target")
    # a whole node without a cluster fabric: no replica across nodes
    assert cross_node_rule(load_gpu("H100-80GB"), 8, offer_network(_offer("p5.48xlarge", 8, "ethernet"))) \
        == "no_cluster_fabric"
    assert cross_node_rule(load_gpu("H100-80GB"), 8, offer_network(_offer("p5.48xlarge", 8))) == ""


def test_a_model_too_big_for_one_node_spans_whole_nodes_over_the_fabric():
    # DeepSeek-V3 in bf16 (671 B parameters, ~1.25 TiB of weights) does not fit one 8 x H100 node (640 GB): two or
    # more whole p5.48xlarge nodes, tensor parallel inside each and pipeline stages over EFA (3,200 Gbit/s)
    w = Workload(model=load_model("deepseek-v3"), task="serve", precision="bf16", tokens_per_second=500)
    k, r, s = unit_shape(size_replica, w, load_gpu("H100-80GB"), 8.0, "nvlink", offer_network(_offer("p5.48xlarge", 8)))
    if k is None:  # the latency targets may not be met at any batch: then never a chain of small VMs either
        assert s in ("misses_latency_target", "does_not_fit")
    else:
        assert k >= 2 and r == 1 and s.tensor_parallel == 8 and s.pipeline_parallel == k


def _plan(args):
    res = runner.invoke(app, ["recommend", *args, "--no-explain", "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_deepseek_v3_is_served_one_node_per_replica():
    # the request: DeepSeek-V3, fp8, SGLang, 4 requests/s on AWS. Before: 22 x p5.4xlarge (TP1 x PP11 per
    # replica). Now every replica lives on one 8-GPU node (p5en.48xlarge, 8 x H200 141 GB: the node SGLang's and
    # vLLM's DeepSeek-V3 recipes name), experts expert parallel inside it, and the rejections are counted
    d = _plan(["--model", "deepseek-v3", "--task", "serve", "--precision", "fp8", "--engine", "sglang",
               "--request-rate", "4", "--provider", "aws"])
    assert d["status"] == "optimal" and d["lines"]
    for ln in d["lines"]:
        assert ln["gpu_count"] >= 8, ln["instance_type"]
        assert ln["pipeline_parallel"] == 1 and ln["gpus_per_replica"] <= ln["gpu_count"]
    assert {ln["instance_type"] for ln in d["lines"]} <= {"p5en.48xlarge", "p5e.48xlarge", "p6-b200.48xlarge"}
    notes = " ".join(d["notes"])
    assert "would need a replica over several instances smaller than one node" in notes
    assert "expert parallel over the 8 GPUs of a node (EP8, 32 experts a GPU)" in notes and "--ep-size 8" in notes
    # DeepSeek-V3 is released in FP8 (its config.json quantization_config: e4m3, 128x128 blocks): nothing to
    # quantize on load (a fresh user read "fp8 replicas quantize the 16-bit checkpoint on load")
    assert "fp8 replicas run the publisher's own checkpoint: deepseek-ai/DeepSeek-V3 stores its weights in FP8" \
        in notes and "quantize the 16-bit checkpoint" not in notes


def test_a_replica_over_two_nodes_gets_the_pipeline_flags_in_its_note():
    # 2,000 tokens/s of DeepSeek-V3 fp8 on AWS: replicas of two p5.48xlarge (8 x H100 80 GB: 640 GB, not enough
    # for 671 GB of FP8 weights alone), TP8 inside each node, 2 pipeline stages over EFA -- the note's flags say so
    d = _plan(["--model", "deepseek-v3", "--precision", "fp8", "--tokens-per-second", "2000", "--provider", "aws"])
    assert d["status"] == "optimal"
    pp = {ln["pipeline_parallel"] for ln in d["lines"]}
    for ln in d["lines"]:
        assert ln["gpu_count"] == 8 and ln["tensor_parallel"] == 8
    assert pp == {2}
    notes = " ".join(d["notes"])
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2 --enable-expert-parallel" in notes
    assert "--tp 8 --ep-size 8 --pp-size 2" in notes


def test_experts_that_do_not_split_over_the_gpus_stay_tensor_parallel():
    # a breaker's case: Mixtral-8x22B (8 experts) on GCP's a2-megagpu-16g at TP16 was told "EP16"; 8 experts do not
    # split over 16 ranks (vLLM and SGLang place E / N experts on each): tensor parallel, no expert-parallel flag
    from types import SimpleNamespace as NS

    from gpuopt.plan_inputs import expert_layout_notes
    from optimizer.sizing.specs import load_model

    w = NS(name="moe", workload=NS(task="serve", model=load_model("Mixtral-8x22B-v0.1")))
    result = NS(workloads=[{"name": "moe", "sizing": [{"tensor_parallel": 16, "pipeline_parallel": 1},
                                                       {"tensor_parallel": 8, "pipeline_parallel": 1}]}])
    notes = expert_layout_notes([w], result)
    assert len(notes) == 2
    assert "its 8 experts do not split evenly over 16 GPUs" in notes[1] and "--enable-expert-parallel" not in notes[1]
    assert "(EP8, 1 expert a GPU)" in notes[0] and "--ep-size 8" in notes[0]


def test_no_plan_names_the_layout_rule_not_memory():
    # a breaker's case: DeepSeek-V3 fp8 on GH200 only (one GPU a node; Lambda's and CoreWeave's GH200 offers have no
    # cluster fabric) was "no offered GPU can hold one replica ... it would fit on 8 x GH200"
    res = runner.invoke(app, ["recommend", "--task", "serve", "--model", "deepseek-v3", "--precision", "fp8", "--gpu",
                              "GH200", "--tokens-per-second", "100", "--no-explain", "--format", "json"])
    assert res.exit_code == 1
    d = json.loads(res.stdout)
    assert "replicas span instances only node by node over a cluster fabric" in d["reason"]["message"]
    assert "2 have no cluster fabric" in d["reason"]["message"] and "would fit on" not in d["reason"]["message"]
    assert d["solver"]["rejected"]["workload"] == {"no_cluster_fabric": 2}


def test_min_replica_share_needs_mixed_replicas():
    res = runner.invoke(app, ["recommend", "--tokens-per-second", "500", "--min-replica-share", "0.2", "--no-explain"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "give it with mixed_replicas: true (--mixed-replicas)" in res.output


def _shapes_problem(share: float | None):
    # a workload of 410 tokens/s in one region; shape A: 100 tokens/s at $1/h a unit, shape B: 20 tokens/s at
    # $0.30/h (no minimum replicas, no N+1: the shape rule alone decides)
    cands = {"w": [_cand("r1", "A", "on_demand", 1.0, 100.0), _cand("r1", "B", "on_demand", 0.30, 20.0)]}
    blocks = [FleetBlock(start_hour=0.0, hours=730.0, demand={"w": 410.0}, label="b0")]
    ws = [FleetWorkload(name="w", workload=SimpleNamespace(task="serve", model=SimpleNamespace(name="m")),
                        mixed_replicas=share is not None, min_replica_share=share or 0.0)]
    return FleetProblem(ws, blocks, cands, {}, horizon_months=1, placement="region")


@pytest.mark.parametrize("share,units,usd_per_hour", [
    (None, {"A": 5}, 5.00),              # one shape: 5 x A ($5.00/h); 21 x B would cost $6.30/h
    (0.0, {"A": 4, "B": 1}, 4.30),       # mixed, no least share: a B tops up 10 tokens/s (20 of 410: 4.9 %)
    (0.10, {"A": 3, "B": 6}, 4.80),      # mixed, 10 %: B carries >= 41 tokens/s; 4 x A + 3 x B costs $4.90
])
def test_one_replica_shape_by_default_and_a_least_share_when_mixed(share, units, usd_per_hour):
    pr = _shapes_problem(share)
    for exact in (True, False):
        sol = solve_cost(pr, gap_rel=0.0, exact=exact)
        assert sol.report.status == "optimal"
        used = {}
        for (w, ok, b), x in {**sol.A, **sol.X}.items():
            if x > 1e-9:
                used[ok.split("|")[3]] = used.get(ok.split("|")[3], 0) + round(x)
        assert used == units
        assert sol.cost == pytest.approx(usd_per_hour * 730.0)


def test_the_least_share_holds_in_the_blocks_a_shape_runs_in():
    # a breaker's case: with the share asked in every block, a shape that tops up the peak had to run at night too,
    # so any share above 0 gave the one-shape plan. Peak 410 tokens/s, off-peak 200, half a month each; shapes A
    # (100 tokens/s, $1/h) and B (20 tokens/s, $0.30/h). At 10 %: the peak 3 x A + 6 x B ($4.80/h, B carries 120 of
    # 410) and off-peak 2 x A alone ($2.00/h); one shape: 5 x A and 2 x A ($5.00/h, $2.00/h)
    cands = {"w": [_cand("r1", "A", "on_demand", 1.0, 100.0), _cand("r1", "B", "on_demand", 0.30, 20.0)]}
    blocks = [FleetBlock(start_hour=0.0, hours=365.0, demand={"w": 410.0}, label="peak"),
              FleetBlock(start_hour=365.0, hours=365.0, demand={"w": 200.0}, label="off")]
    for mixed, usd in ((True, (4.80 + 2.00) * 365), (False, (5.00 + 2.00) * 365)):
        ws = [FleetWorkload(name="w", workload=SimpleNamespace(task="serve", model=SimpleNamespace(name="m")),
                            mixed_replicas=mixed, min_replica_share=0.10 if mixed else 0.0)]
        sol = solve_cost(FleetProblem(ws, blocks, cands, {}, horizon_months=1, placement="region"), gap_rel=0.0)
        assert sol.report.status == "optimal" and sol.cost == pytest.approx(usd)
        if mixed:
            off = {ok.split("|")[3]: round(x) for (w, ok, b), x in sol.X.items() if b == 1 and x > 1e-9}
            assert off == {"A": 2}


def test_replica_shape_ignores_the_purchase_option():
    a = _cand("r1", "A", "on_demand", 1.0, 100.0)
    b = _cand("r1", "A", "reserved_1y", 0.6, 100.0)
    assert replica_shape(a) == replica_shape(b) != replica_shape(_cand("r1", "B", "on_demand", 1.0, 100.0))


def test_mixed_replicas_on_the_shipped_snapshot_says_how_to_route(tmp_path, monkeypatch):
    # Llama-2-13B chat on the bundled daily profile (gpuopt/data/chat_daily.csv), min 2 replicas, no N+1: one shape
    # by default; with --mixed-replicas and no least share the plan mixes RunPod A100, H100 and L40S replicas and
    # says how to route; a least share never makes a plan cheaper
    import shutil
    from pathlib import Path

    from gpuopt import api

    monkeypatch.chdir(tmp_path)
    shutil.copy(Path(api.__file__).parent / "data" / "chat_daily.csv", tmp_path / "chat_daily.csv")
    base = ("horizon_months: 12\nworkloads:\n  - {name: chat, task: serve, model: meta-llama/Llama-2-13b-hf, "
            "precision: bf16, input_tokens: 1024, output_tokens: 256, scenario: server, "
            "demand_profile: chat_daily.csv, min_replicas: 2, redundancy: none%s}\n")
    plans = {}
    for tag, extra in (("one", ""), ("mixed0", ", mixed_replicas: true, min_replica_share: 0"),
                       ("mixed10", ", mixed_replicas: true")):
        (tmp_path / f"{tag}.yaml").write_text(base % extra, encoding="utf-8")
        plans[tag] = _plan(["--workload", str(tmp_path / f"{tag}.yaml")])
    one, mixed0, mixed10 = plans["one"], plans["mixed0"], plans["mixed10"]
    for d in plans.values():
        assert d["status"] == "optimal"

    def shapes(d):
        return {(ln["provider"], ln["region"], ln["gpu_model"], ln["tensor_parallel"], ln["precision"])
                for ln in d["lines"]}
    assert len(shapes(one)) == 1
    assert len(shapes(mixed0)) > 1 and mixed0["total_usd"] < one["total_usd"]
    assert any("--mixed-replicas" in n and "weighted round robin" in n for n in mixed0["notes"])
    assert mixed0["total_usd"] <= mixed10["total_usd"] <= one["total_usd"] + 0.01


def test_min_replica_share_is_checked():
    res = runner.invoke(app, ["recommend", "--tokens-per-second", "500", "--mixed-replicas",
                              "--min-replica-share", "1.5", "--no-explain"])
    assert res.exit_code == 1
    assert "--min-replica-share" in res.output and "at most 1" in res.output and "Traceback" not in res.output
