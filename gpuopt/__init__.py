"""gpuopt: which cloud GPU instances to run, where, how many, for how long, on which pricing model.

Python API (the CLI is a thin layer over it)::

    import gpuopt
    r = gpuopt.recommend(budget=50000, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=2000)
    r.plan.lines, r.plan.total_monthly_usd, r.to_dict()
    r = gpuopt.recommend(gpuopt.PlanRequest(workloads=[gpuopt.WorkloadItem(name="chat", model="...", ...)]))
    e = gpuopt.estimate(model="meta-llama/Llama-2-70b-hf", task="train", tokens=2e12, gpu="A100-80GB")
    rv = gpuopt.review(usage="billing-export.parquet")            # the monthly cost review
    gpuopt.prices_list(gpu=["H100"]).to_dataframe()               # every result: .to_dict() and .to_dataframe()
    gpuopt.prices_status(), gpuopt.prices_refresh(providers=["aws"]), gpuopt.prices_import(file=..., fmt="offers")
    gpuopt.prices_diff(since="2026-01-01"), gpuopt.diff("old.json", "new.json")

Imports are lazy so that ``gpuopt --help`` stays fast.
"""

__version__ = "0.1.0"

_API = ("recommend", "estimate", "review", "prices_list", "prices_status", "prices_refresh", "prices_import",
        "prices_diff", "diff")
__all__ = [*_API, "PlanRequest", "WorkloadItem", "__version__"]


def __getattr__(name):
    if name in ("PlanRequest", "WorkloadItem"):  # the request object (gpuopt.request)
        from gpuopt import request

        return getattr(request, name)
    if name in _API:
        from gpuopt import api

        return getattr(api, name)
    raise AttributeError(f"module 'gpuopt' has no attribute {name!r}")
