"""Where gpuopt keeps its user price cache: the folder every cache module (snapshots, catalog copies) lives under.

The lowest module of the cache: it imports nothing of gpuopt, so ``pricing_cache.cache`` (dated snapshots) and
``pricing_cache.catalog_cache`` (checked copies of ``--catalog`` CSVs) both build on it without importing each other.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The cache folder: $GPUOPT_CACHE_DIR, else platformdirs' user cache dir for "gpuopt" (not created here)."""
    env = os.environ.get("GPUOPT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("gpuopt", appauthor=False))
