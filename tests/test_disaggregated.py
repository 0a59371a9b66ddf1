"""Disaggregated serving (issue 27, point 5): prefill and decode on separate replicas, sized each for its own target,
the KV cache moved between them, chosen by the planner only where it needs fewer instances."""

from __future__ import annotations

import pytest

from optimizer.sizing import DEFAULT_NODE_NETWORK, Workload, size_replica
from optimizer.sizing import serving as sv
from optimizer.sizing.disaggregated import best_unit, md1_wait_p99, pool_rates, units_for
from optimizer.sizing.specs import load_gpu, load_model

H100 = load_gpu("H100-80GB")
L70 = load_model("Llama-3.1-70B")


def _w(inp, out, scenario="chat", **kw):
    return Workload(task="serve", model=L70, precision="bf16", input_tokens=inp, output_tokens=out, scenario=scenario,
                    **kw)


def _colocated_per_instance(w, gpus=8):
    best = 0.0
    for n in (1, 2, 4, 8):
        if n <= gpus and sv.tp_supported(w.model, n):
            s = size_replica(w, H100, n)
            if s.fits:
                best = max(best, gpus // n * s.tokens_per_second_per_replica)
    return best


def test_the_kv_cache_crosses_the_fabric_at_its_bytes():
    """Llama-3.1-70B keeps 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per token (bf16); a 4,000-token
    prompt's 1.31 GB over 8 x 200 Gb/s InfiniBand (200 GB/s per node) takes 6.55 ms plus the hop latency."""
    assert L70.kv_bytes_per_token(2.0) == 327_680
    r = pool_rates(_w(4000, 100), H100, 4, DEFAULT_NODE_NETWORK.gbps_per_node, DEFAULT_NODE_NETWORK.hop_latency_s)
    t_kv = r[5]
    assert t_kv == pytest.approx(4000 * 327_680 / 200e9 + DEFAULT_NODE_NETWORK.hop_latency_s)


def test_the_prefill_pool_is_an_m_d_1_queue_held_at_its_ttft_target():
    """A prefill replica serves prompts one after another (S each): an M/D/1 queue; the pool runs at the highest
    rho (at most 0.95) whose p99 wait (Cramer-Lundberg tail) + S + t_kv meets the p99 TTFT target (chat 2,000 ms)."""
    r_p, r_d, b, S, step, t_kv = pool_rates(_w(4000, 100), H100, 4, 200.0, 0.0)
    rho = r_p * S
    assert 1e3 * (md1_wait_p99(rho, S) + S + t_kv) == pytest.approx(2000.0, rel=1e-4) or rho == pytest.approx(0.95)
    # loose TTFT: the pool is held at 95 % (a queue at 99.9 % never settles: breaker's p99 of 8 s at a "2 s" pool)
    loose = pool_rates(_w(4000, 100, ttft_slo_ms=1e9), H100, 4, 200.0, 0.0)
    assert loose[0] * loose[3] == pytest.approx(0.95, rel=1e-6)
    # the decode pool: the largest batch whose iteration x 1.15 meets the 50 ms TPOT target, no prefill in it
    assert step * 1e3 * sv.P99_OVER_MEAN_TPOT <= 50.0 and b >= 1
    assert r_d == pytest.approx(b / (100 * step))


def test_disaggregation_wins_where_prefill_dominates_and_loses_where_decode_does():
    """Long prompts, short answers (4,000 in / 100 out): prefill interference holds the co-located batch down, and
    separate pools give 8-GPU nodes more tokens/s; short prompts, long answers (100 / 1,000): co-location wins
    (DistServe, OSDI 2024, reports its gains on prefill-heavy workloads)."""
    heavy, light = _w(4000, 100), _w(100, 1000)
    u_heavy = best_unit(heavy, H100, 8, network=DEFAULT_NODE_NETWORK)
    u_light = best_unit(light, H100, 8, network=DEFAULT_NODE_NETWORK)
    assert u_heavy.tokens_per_second / u_heavy.instances > 1.2 * _colocated_per_instance(heavy)  # 512 vs 400
    assert u_heavy.prefill_replicas > u_heavy.decode_replicas
    assert u_light.tokens_per_second / u_light.instances < _colocated_per_instance(light)
    assert u_light.decode_replicas > u_light.prefill_replicas


def test_a_unit_is_sized_for_the_demand_in_whole_units_with_a_spare():
    assert units_for(3000, 1000, 2, 1) == 4 and units_for(500, 1000, 2, 1) == 3 and units_for(3000, 1000) == 3
    w = _w(4000, 100, tokens_per_second=3000.0)
    small = best_unit(w, H100, 8, network=DEFAULT_NODE_NETWORK, demand_tps=3000.0, min_units=2, spare_units=1)
    big = best_unit(w, H100, 8, network=DEFAULT_NODE_NETWORK)
    assert small.instances * units_for(3000, small.tokens_per_second, 2, 1) <= \
        big.instances * units_for(3000, big.tokens_per_second, 2, 1)


def test_the_planner_takes_disaggregation_only_where_it_needs_fewer_instances():
    from gpuopt import api

    def plan(inp, out, tps, mode):
        return api.recommend(model="meta-llama/Llama-3.1-70B-Instruct", tokens_per_second=tps, input_tokens=inp,
                             output_tokens=out, providers=["aws"], gpus=["H100-80GB"], disaggregate=mode,
                             explain=False).plan

    off, auto = plan(4000, 100, 20000, "off"), plan(4000, 100, 20000, "auto")
    assert auto.status == off.status == "optimal" and auto.total_usd < 0.95 * off.total_usd
    # units of both pools on one offer already beat co-located replicas (the plan with one pool per workload) ...
    table = auto.disaggregated_pools
    assert table["one_pool_usd"] < 0.8 * off.total_usd
    # ... and the two pools planned as workloads of their own, in whole replicas, beat the units
    assert table["kept"] == "pools" and table["pools_usd"] == pytest.approx(auto.total_usd)
    assert table["pools_usd"] < table["one_pool_usd"]
    pools = {w["name"]: w["sizing"][0] for w in auto.to_dict()["workloads"]}
    pre, dec = pools["workload/prefill"]["disaggregated"], pools["workload/decode"]["disaggregated"]
    # 200 requests/s of 4,000-token prompts: prefill replicas of 4 H100s at ~2.3 requests/s each, decode replicas
    # of 8 at ~67 (batch 292): many more prefill replicas than decode ones, the KV over the p5's EFA (3,200 Gb/s)
    assert pre["pool"] == "prefill" and dec["pool"] == "decode" and pre["link"] == "efa 400 GB/s"
    assert 200 / pre["request_rate"] > 10 * 200 / dec["request_rate"]
    assert "prefill pool" in pools["workload/prefill"]["gpu_shape"]
    light_off, light_auto = plan(100, 1000, 20000, "off"), plan(100, 1000, 20000, "auto")
    assert light_auto.total_usd == pytest.approx(light_off.total_usd)
    assert "disaggregated" not in light_auto.to_dict()["workloads"][0]["sizing"][0]
    assert light_auto.disaggregated_pools["kept"] == "one pool"
    assert any("would cost" in n and "USD more: one pool per workload kept" in n for n in light_auto.notes)


def test_disaggregate_refuses_an_unknown_mode():
    from gpuopt.kernel.errors import InputError
    from optimizer.sizing import validate_workload

    with pytest.raises(InputError) as exc:
        validate_workload(_w(1000, 100, disaggregate="maybe"))
    assert exc.value.field == "disaggregate" and "auto" in exc.value.accepted


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_the_m_d_1_wait_tail_against_the_simulation(rho):
    """md1_wait_p99 against the seeded simulation of one slot and one-token requests (an M/D/1 queue; 40,000
    requests): p99 TTFT within 12 %; 0 below rho = 1 %."""
    from optimizer.sizing.operating import Engine, simulate

    S = 0.05
    e = Engine(step=lambda b: 1e-9, prefill_s=S, prefill_latency_s=S, cap=1, output_tokens=1.0)
    sim = simulate(e, rho / S, n_requests=40000, warmup=2000, time_budget_s=20.0)
    assert 1e3 * (md1_wait_p99(rho, S) + S) == pytest.approx(sim.ttft_p99_ms, rel=0.12)
    assert md1_wait_p99(0.005, S) == 0.0


def test_plan_files_take_unquoted_on_and_off(tmp_path):
    """YAML 1.1 reads `disaggregate: on` as true (a breaker's plan file was refused: "unknown value True")."""
    from gpuopt.request import PlanRequest

    for raw, want in ((True, "on"), (False, "off"), ("Auto", "auto")):
        req = PlanRequest.model_validate({"workloads": [{"name": "s", "task": "serve", "model": "Llama-3.1-8B",
                                                         "tokens_per_second": 100, "disaggregate": raw}]})
        assert req.workloads[0].disaggregate == want


def test_disaggregate_on_where_no_offer_can_split_says_why():
    """A breaker's --disaggregate on over single-GPU RunPod offers got "no batch meets the targets", which those
    offers do co-located: the reason is that one GPU per instance without a cluster fabric has no room for pools."""
    from gpuopt import api

    plan = api.recommend(model="meta-llama/Llama-3.1-8B-Instruct", tokens_per_second=3000, providers=["runpod"],
                         disaggregate="on", explain=False).plan
    assert not plan.feasible
    text = str(plan.to_dict()["reason"])
    assert "no room for separate prefill and decode replicas" in text
    ok = api.recommend(model="meta-llama/Llama-3.1-8B-Instruct", tokens_per_second=3000, providers=["runpod"],
                       disaggregate="auto", explain=False).plan
    assert ok.feasible


def test_plans_name_the_disaggregated_unit_in_their_tables():
    """Table, markdown and HTML plans named a disaggregated unit nowhere (a breaker): the workload table says it."""
    from gpuopt.templating import serving_split_text

    s = {"disaggregated": {"prefill_replicas": 10, "decode_replicas": 2, "gpus_per_replica": 4, "instances": 6,
                           "link": "efa 400 GB/s"}}
    assert serving_split_text(s) == ("; disaggregated unit: 10 prefill + 2 decode replicas of 4 GPU(s) over 6 "
                                     "instance(s), KV over efa 400 GB/s")
    assert serving_split_text({"utilization": 0.845}) == "; sized at 84 % of saturation"


CATALOG = ("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour,payment,"
           "upfront_usd,interconnect,fabric,source,as_of\n"
           "myco,dc1,l40s-box,L40S,1,48,on_demand,0.9,,,pcie,infiniband,illustrative price for a test,2026-12-01\n"
           "myco,dc1,h200-box,H200-141GB,1,141,on_demand,4.0,,,nvlink,infiniband,illustrative price for a test,2026-12-01\n")


def _pd_plan(tmp_path, catalog=CATALOG, **kw):
    from gpuopt import api

    cat = tmp_path / "cat.csv"
    cat.write_text(catalog, encoding="utf-8")
    args = dict(model="meta-llama/Llama-3.1-8B-Instruct", input_tokens=8000, output_tokens=200, request_rate=5,
                ttft_ms=3000, tpot_ms=30, catalog=str(cat), explain=False)
    args.update(kw)
    return api.recommend(**args).plan


def test_prefill_and_decode_pools_on_different_gpu_types_where_that_is_cheaper(tmp_path):
    """Splitwise's idea (Patel et al., ISCA 2024): prefill is compute-bound, decode bandwidth-bound. 8,000-token
    prompts of Llama-3.1-8B: an L40S (362 dense bf16 TFLOPS, 864 GB/s) prefills ~1 request/s for 0.90 USD/h, an
    H200 (989 TFLOPS, 4.8 TB/s) ~4 for 4.00 -- the L40S prefills cheaper; under a 30 ms TPOT the L40S decodes two
    sequences (0.39 requests/s), the H200 79 (15.2 requests/s) -- the H200 decodes cheaper. Co-located, only the
    H200 serves (4 boxes, 140,160 USD a year); units of both pools on H200 boxes beside co-located ones 128,772 until
    issue 31 made one replica shape per region the default (now 140,160: the co-located boxes); split, 7 L40S prefill
    and 2 H200 decode (125,268 USD, 10.6 % less than co-located), both pools in the one region."""
    from optimizer.sizing import Workload
    from optimizer.sizing.disaggregated import decode_pool, prefill_pool

    m = load_model("meta-llama/Llama-3.1-8B-Instruct")
    w = Workload(task="serve", model=m, precision="bf16", input_tokens=8000, output_tokens=200, ttft_slo_ms=3000,
                 tpot_slo_ms=30)
    l40s, h200 = load_gpu("L40S"), load_gpu("H200-141GB")
    assert prefill_pool(w, l40s, 1, 0.0)[0] / 0.9 > prefill_pool(w, h200, 1, 0.0)[0] / 4.0
    assert decode_pool(w, l40s, 1)[1] <= 2 and decode_pool(w, h200, 1)[1] > 50
    assert decode_pool(w, h200, 1)[0] / 4.0 > decode_pool(w, l40s, 1)[0] / 0.9
    one = _pd_plan(tmp_path, disaggregate="off")
    split = _pd_plan(tmp_path, disaggregate="auto")
    assert {ln.instance_type for ln in one.lines} == {"h200-box"}
    assert split.total_usd < 0.95 * one.total_usd
    by_pool = {w: {ln.instance_type for ln in split.lines if w in ln.workloads}
               for w in ("workload/prefill", "workload/decode")}
    assert by_pool == {"workload/prefill": {"l40s-box"}, "workload/decode": {"h200-box"}}
    table = split.to_dict()["disaggregated_pools"]
    assert table["kept"] == "pools" and table["one_pool_usd"] == pytest.approx(140160.0)
    assert one.total_usd == pytest.approx(140160.0) and split.total_usd == pytest.approx(125268.0)
    pools = table["workloads"]["workload"]
    assert pools["region"] == "myco/dc1"
    assert pools["prefill"] == {"replicas": 7, "gpus_per_replica": [1], "on": ["7 x l40s-box (on_demand)"]}
    assert pools["decode"] == {"replicas": 2, "gpus_per_replica": [1], "on": ["2 x h200-box (on_demand)"]}
    notes = " ".join(split.notes)
    assert "disaggregated into prefill and decode pools in myco/dc1" in notes and "less (" in notes
    assert "prefill pool workload/prefill: 7 replica(s) of 1 GPU(s) on 7 x l40s-box (on_demand)" in notes


def test_pools_that_land_in_two_regions_are_pinned_to_one(tmp_path):
    """The KV cache moves between the pools, so they share a region: with L40S cheaper in dc1 and the H200 only in
    dc2, both pools run in dc2."""
    cat = CATALOG.replace("myco,dc1,h200-box", "myco,dc2,h200-box") + \
        "myco,dc2,l40s-box,L40S,1,48,on_demand,1.1,,,pcie,infiniband,illustrative price for a test,2026-12-01\n"
    plan = _pd_plan(tmp_path, cat, disaggregate="on")
    assert plan.feasible and plan.disaggregated_pools["kept"] == "pools"
    assert {ln.region for ln in plan.lines} == {"dc2"}
    assert plan.disaggregated_pools["workloads"]["workload"]["region"] == "myco/dc2"


def test_the_region_of_either_pool_is_tried(tmp_path):
    """A breaker's catalog: L40S only in dc2, H200 only in dc1, a 450 ms TTFT that L40S prefill cannot meet. The
    pools planned apart were pinned to the decode pool's region only; both regions are tried and dc1 (H200 prefill
    and decode) kept, 455,520 USD against 630,720 for units of both pools on one offer."""
    cat = CATALOG.replace("myco,dc1,l40s-box", "myco,dc2,l40s-box")
    plan = _pd_plan(tmp_path, cat, disaggregate="on", ttft_ms=450, tpot_ms=100)
    assert plan.feasible and plan.disaggregated_pools["kept"] == "pools"
    assert plan.disaggregated_pools["workloads"]["workload"]["region"] == "myco/dc1"
    assert plan.total_usd < plan.disaggregated_pools["one_pool_usd"]


def test_pool_names_that_clash_and_roi_plans_are_not_split_and_say_so(tmp_path):
    import yaml

    from gpuopt import api

    cat = tmp_path / "cat.csv"
    cat.write_text(CATALOG, encoding="utf-8")
    base = {"task": "serve", "model": "meta-llama/Llama-3.1-8B-Instruct", "request_rate": 5, "input_tokens": 8000,
            "output_tokens": 200, "ttft_ms": 3000, "tpot_ms": 30}
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump({"catalog": str(cat), "workloads": [
        {**base, "name": "a", "disaggregate": "auto"}, {**base, "name": "a/prefill"}]}), encoding="utf-8")
    plan = api.recommend(workload=str(f), explain=False).plan
    assert plan.feasible and any("the pool name a/prefill is another workload's" in n for n in plan.notes)
    roi = _pd_plan(tmp_path, disaggregate="auto", objective="roi", value_per_million_tokens=50)
    assert any("not planned for --objective roi" in n for n in roi.notes)


def test_a_workload_region_is_checked_against_the_catalog(tmp_path):
    """`region: AWS/US-EAST-1` was refused for case; a typo gave no hint; `region: dc1` quoted a regex."""
    import yaml

    from gpuopt import api
    from gpuopt.kernel.errors import InputError

    cat = tmp_path / "cat.csv"
    cat.write_text(CATALOG, encoding="utf-8")
    item = {"name": "s", "task": "serve", "model": "meta-llama/Llama-3.1-8B-Instruct", "request_rate": 5,
            "input_tokens": 8000, "output_tokens": 200, "ttft_ms": 3000, "tpot_ms": 30}
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump({"catalog": str(cat), "workloads": [{**item, "region": "MYCO/DC1"}]}),
                 encoding="utf-8")
    assert api.recommend(workload=str(f), explain=False).plan.feasible
    for bad, words in (("myc0/dc1", "no offer in myc0/dc1 (accepted: myco/dc1"), ("dc1", "must be provider/region")):
        f.write_text(yaml.safe_dump({"catalog": str(cat), "workloads": [{**item, "region": bad}]}), encoding="utf-8")
        with pytest.raises(InputError) as exc:
            api.recommend(workload=str(f), explain=False)
        assert str(exc.value).startswith("workloads[0].region:") and words in str(exc.value), str(exc.value)


def test_one_pool_of_a_disaggregated_deployment_from_a_plan_file(tmp_path):
    """A team running prefill capacity already plans only the decode pool (`serve_phase: decode`); a bad pool
    name is one line naming the key."""
    import yaml

    from gpuopt import api
    from gpuopt.kernel.errors import InputError

    cat = tmp_path / "cat.csv"
    cat.write_text(CATALOG, encoding="utf-8")
    item = {"name": "decode", "task": "serve", "model": "meta-llama/Llama-3.1-8B-Instruct", "request_rate": 5,
            "input_tokens": 8000, "output_tokens": 200, "ttft_ms": 3000, "tpot_ms": 30, "serve_phase": "decode"}
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump({"catalog": str(cat), "workloads": [item]}), encoding="utf-8")
    plan = api.recommend(workload=str(f), explain=False).plan
    assert {ln.instance_type for ln in plan.lines} == {"h200-box"}
    assert plan.to_dict()["workloads"][0]["sizing"][0]["disaggregated"]["pool"] == "decode"
    f.write_text(yaml.safe_dump({"catalog": str(cat), "workloads": [{**item, "serve_phase": "both"}]}),
                 encoding="utf-8")
    with pytest.raises(InputError) as exc:
        api.recommend(workload=str(f), explain=False)
    assert "serve_phase" in str(exc.value) and "prefill" in str(exc.value)
