"""``--context`` is the context window (vLLM ``max_model_len``), never the request length (issue 27, point 0)."""

from __future__ import annotations

import pytest

from gpuopt.kernel.errors import InputError
from optimizer.sizing import Workload, size_replica
from optimizer.sizing.specs import load_gpu, load_model


def _serve(**kw):
    return Workload(task="serve", model=load_model("Qwen2-72B"), precision="bf16", **kw)


def test_the_window_does_not_change_the_requests():
    """Issue 27: `--context 8192` cut a 72B service's tokens/s 5-7x by turning 1,024-token requests into 8,064-token
    ones. The requests stay 1,024 in / 128 out (vLLM benchmark_serving's random dataset) whatever the window."""
    b200 = load_gpu("B200")
    plain = size_replica(_serve(), b200, 1)
    windowed = size_replica(_serve(context_tokens=8192), b200, 1)
    assert windowed.tokens_per_second_per_replica == pytest.approx(plain.tokens_per_second_per_replica)
    assert windowed.concurrency == plain.concurrency


def test_a_window_the_kv_cache_cannot_hold_does_not_start():
    """vLLM refuses to start when one max_model_len sequence does not fit the KV cache. Llama-3.1-70B at TP2 on
    H100-80GB: 80 layers x 8 KV heads / 2 x 128 x 2 (K, V) x 2 B = 163,840 B per token per GPU, so a 131,072-token
    window needs 20 GiB of KV beside ~66 GiB of weights: more than the 72 GiB vLLM uses (0.9 x 80)."""
    m = load_model("Llama-3.1-70B")
    h100 = load_gpu("H100-80GB")
    w = Workload(task="serve", model=m, precision="bf16", context_tokens=131072)
    s = size_replica(w, h100, 2)
    assert s.kv_capacity_sequences == 0 and not s.fits
    assert size_replica(Workload(task="serve", model=m, precision="bf16", context_tokens=8192), h100, 2).fits


def test_a_window_shorter_than_the_requests_is_refused():
    with pytest.raises(InputError, match="context_tokens: the 1000-token window does not hold a request of 1024 "
                                         "input \\+ 128 output tokens"):
        size_replica(_serve(context_tokens=1000), load_gpu("B200"), 1)
    # the requests' lengths are the user's: a 4,096-token window holds 3,000 + 500
    assert size_replica(_serve(context_tokens=4096, input_tokens=3000, output_tokens=500), load_gpu("B200"), 1).fits
