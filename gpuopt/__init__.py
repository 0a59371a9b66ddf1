"""gpuopt: which cloud GPU instances to run, where, how many, for how long, on which pricing model.

Python API (the CLI is a thin layer over it)::

    import gpuopt
    r = gpuopt.recommend(budget=50000, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=2000)
    r.plan.lines, r.plan.total_monthly_usd, r.to_dict()
    e = gpuopt.estimate(model="meta-llama/Llama-2-70b-hf", task="train", tokens=2e12, gpu="A100-80GB")

Imports are lazy so that ``gpuopt --help`` stays fast.
"""

__version__ = "0.1.0"

__all__ = ["recommend", "estimate", "prices_list", "prices_status", "__version__"]


def __getattr__(name):
    if name in ("recommend", "estimate", "prices_list", "prices_status"):
        from gpuopt import api

        return getattr(api, name)
    raise AttributeError(f"module 'gpuopt' has no attribute {name!r}")
