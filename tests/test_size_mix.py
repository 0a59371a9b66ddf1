"""A serving workload split into pools by prompt length when that is cheaper (issue 27, point 6; Mélange, arXiv
2404.14527), and a trace's mix of request sizes in the sizing of one pool."""

from __future__ import annotations

import random

import pytest

from optimizer.sizing.buckets import size_buckets


def _bimodal(n=2000, seed=11, long_share=0.2, long_in=(4500, 7500)):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 1 - long_share:
            out.append((int(rng.uniform(40, 220)), int(rng.uniform(100, 300))))
        else:
            out.append((int(rng.uniform(*long_in)), int(rng.uniform(200, 400))))
    return out


def _write(path, lengths):
    path.write_text("input_tokens,output_tokens\n" + "".join(f"{i},{o}\n" for i, o in lengths), encoding="utf-8")
    return path


def test_prompt_length_ranges_of_a_bimodal_trace():
    """Short chats and long documents fall in two ranges with their shares of requests and of output tokens; a
    range under 5 % of the requests is merged into its neighbour; one range when nothing splits."""
    lengths = _bimodal()
    b = size_buckets(lengths)
    assert [x.label for x in b] == ["prompt<256", "prompt4096+"]
    assert sum(x.share for x in b) == pytest.approx(1.0) and sum(x.token_share for x in b) == pytest.approx(1.0)
    short, long_ = b
    assert short.share == pytest.approx(sum(1 for i, _ in lengths if i < 256) / len(lengths))
    assert short.mean_input < 256 <= 4096 <= long_.mean_input
    assert long_.token_share == pytest.approx(sum(o for i, o in lengths if i >= 4096) / sum(o for _, o in lengths))
    assert "prompts of >= 4,096 tokens" in long_.rule()
    # 3 % of requests at 300-900 tokens: merged into a neighbour, never a pool of its own
    few = lengths + [(600, 200)] * 60
    assert len(size_buckets(few)) == 2 and all(x.share >= 0.05 for x in size_buckets(few))
    assert len(size_buckets([(100, 50)] * 100)) == 1
    with pytest.raises(ValueError):
        size_buckets([])


def test_one_pool_of_a_trace_is_sized_for_its_mix_not_its_mean():
    """Each request takes its own range's share of the replica's time (Mélange's load model): the replica's rate
    is the harmonic mix 1 / sum(share / rate) of the ranges sized alone -- below what the mean lengths give when
    long prompts are a fifth of the requests."""
    from optimizer.sizing import Workload, size_replica
    from optimizer.sizing.specs import load_gpu, load_model

    b = size_buckets(_bimodal())
    m, h100 = load_model("Llama-3.1-8B"), load_gpu("H100-80GB")
    alone = [size_replica(Workload(task="serve", model=m, input_tokens=x.mean_input, output_tokens=x.mean_output),
                          h100, 1) for x in b]
    rate = 1 / sum(x.share / (s.tokens_per_second_per_replica / x.mean_output) for x, s in zip(b, alone))
    mean_out = sum(x.share * x.mean_output for x in b)
    mix = size_replica(Workload(task="serve", model=m, input_tokens=1248, output_tokens=218,
                                length_mix=tuple((x.share, x.mean_input, x.mean_output) for x in b)), h100, 1)
    assert mix.tokens_per_second_per_replica == pytest.approx(rate * mean_out)
    at_mean = size_replica(Workload(task="serve", model=m, input_tokens=1248, output_tokens=218), h100, 1)
    assert mix.tokens_per_second_per_replica < 0.9 * at_mean.tokens_per_second_per_replica  # 3,095 vs 3,655
    assert mix.assumptions[0].startswith("request-size mix of the trace")


def _plan(tmp_path, mode, catalog=None, long_share=0.2, **kw):
    from gpuopt import api

    trace = _write(tmp_path / "trace.csv", _bimodal(long_share=long_share))
    args = dict(model="meta-llama/Llama-3.1-8B-Instruct", trace=str(trace), request_rate=40, mix_by_size=mode,
                explain=False, **kw)
    if catalog:
        args["catalog"] = str(catalog)
    return api.recommend(**args).plan


CATALOG = ("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour,payment,"
           "upfront_usd,interconnect,source,as_of\n"
           "myco,dc1,l40s-box,L40S,1,48,on_demand,0.6,,,pcie,illustrative price for a test,2026-12-01\n"
           "myco,dc1,h100-box,H100-80GB,1,80,on_demand,6.0,,,nvlink,illustrative price for a test,2026-12-01\n")


def test_a_plan_whose_cheaper_answer_is_a_mix_by_prompt_length(tmp_path):
    """Short chats are cheapest on a 0.60 USD/h L40S box, 6,000-token documents (10 % of the requests) meet a 600
    ms TTFT only on the H100 box: one pool must be all H100 (4 boxes, 210,240 USD), two pools route short prompts to
    4 L40S boxes and long ones to 3 H100 boxes (178,704 USD), 15 % less -- and the plan says the routing rule."""
    cat = tmp_path / "cat.csv"
    cat.write_text(CATALOG, encoding="utf-8")
    one = _plan(tmp_path, "off", cat, long_share=0.1, ttft_ms=600)
    mix = _plan(tmp_path, "auto", cat, long_share=0.1, ttft_ms=600)
    assert one.feasible and mix.feasible and mix.total_usd < 0.9 * one.total_usd
    by_pool = {w: {ln.instance_type for ln in mix.lines if w in ln.workloads}
               for w in ("workload/prompt<256", "workload/prompt4096+")}
    assert by_pool == {"workload/prompt<256": {"l40s-box"}, "workload/prompt4096+": {"h100-box"}}
    notes = " ".join(mix.notes)
    assert "route prompts of < 256 tokens" in notes and "less (" in notes and "than one pool per workload" in notes


def test_where_the_split_costs_more_one_pool_is_kept_and_the_plan_says_so(tmp_path):
    one = _plan(tmp_path, "auto", providers=["aws"])
    assert all(ln.workloads == ["workload"] for ln in one.lines)
    assert any("a mix by prompt length" in n and "USD more: one pool per workload kept" in n for n in one.notes)
    forced = _plan(tmp_path, "on", providers=["aws"])
    assert forced.total_usd > one.total_usd and any("forced" in n for n in forced.notes)


def test_the_split_is_a_routing_table_in_the_json(tmp_path):
    """A fresh user found the routing rule only in notes: the plan's JSON gives `size_mix`, a table per workload."""
    cat = tmp_path / "cat.csv"
    cat.write_text(CATALOG, encoding="utf-8")
    mix = _plan(tmp_path, "auto", cat, long_share=0.1, ttft_ms=600).to_dict()["size_mix"]
    assert mix["kept"] == "split" and mix["split_usd"] < mix["one_pool_usd"]
    short, long_ = mix["pools"]["workload"]
    assert (short["prompt_tokens_min"], short["prompt_tokens_max"]) == (0, 255)
    assert (long_["prompt_tokens_min"], long_["prompt_tokens_max"]) == (4096, None)
    assert short["instances"] == ["4 x l40s-box (on_demand)"] and long_["instances"] == ["3 x h100-box (on_demand)"]
    assert short["share_of_requests"] + long_["share_of_requests"] == pytest.approx(1.0, abs=1e-3)
