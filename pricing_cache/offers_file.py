"""Read one offers.csv (the shipped snapshot's, or a cached snapshot's): exactly the offer columns and types.

Files of an older readable schema (``READABLE_SCHEMA_VERSIONS``: version 1 lacks ``fabric`` and ``zone_kind``,
version 2 ``offering_class``, version 3 ``tier``) are read, never refused: the missing columns are filled from the
documented facts (``providers._common.fill_facts``, ``fill_offering_class``). Both ``pricing_cache.store`` (the
shipped snapshot) and ``pricing_cache.cache`` (the user cache) read their files here, so neither imports the other
for it.

pandas is imported inside the function: importing this module is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpuopt.kernel.errors import SnapshotError
from gpuopt.kernel.records import ADDED_IN_V3, ADDED_IN_V4, FILLED_FROM_FACTS, OFFER_COLUMNS, OFFER_DTYPES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The fix named by every message about a bad shipped snapshot.
REBUILD_HINT = "rebuild it with `python -m pricing_cache.build_snapshot` or reinstall gpuopt"

#: The offer columns of schema version 3 (before ``tier``), 2 (before ``offering_class`` too) and 1 (before
#: ``fabric`` and ``zone_kind`` too).
OFFER_COLUMNS_V3: tuple[str, ...] = tuple(c for c in OFFER_COLUMNS if c not in ADDED_IN_V4)
OFFER_COLUMNS_V2: tuple[str, ...] = tuple(c for c in OFFER_COLUMNS_V3 if c not in ADDED_IN_V3)
OFFER_COLUMNS_V1: tuple[str, ...] = tuple(c for c in OFFER_COLUMNS_V2 if c not in FILLED_FROM_FACTS)


def read_offers_file(path: Path) -> "pd.DataFrame":
    """Read an offers.csv written by the snapshot build or a refresh: exactly OFFER_COLUMNS, OFFER_DTYPES.

    A file of schema version 1 (OFFER_COLUMNS_V1: no ``fabric``/``zone_kind``) is read too: the two columns are
    filled from the documented facts; one of version 1 or 2 gets ``offering_class`` filled (``standard`` for AWS
    reservations, the only class read before version 3; "" otherwise); one of version 1, 2 or 3 gets ``tier``
    filled from the documented facts (``providers.facts.tier_of``). Any other set of columns raises SnapshotError.
    """
    import pandas as pd

    float_cols = [c for c in OFFER_COLUMNS if OFFER_DTYPES[c] == "float64"]
    try:
        df = pd.read_csv(path, dtype={c: ("string" if OFFER_DTYPES[c] == "string" else "float64") for c in
                                      OFFER_COLUMNS}, keep_default_na=False, na_values={c: [""] for c in float_cols})
    except (ValueError, pd.errors.ParserError) as e:
        raise SnapshotError(f"price snapshot {path} cannot be parsed: {e}; {REBUILD_HINT}") from None
    if tuple(df.columns) == OFFER_COLUMNS_V1:
        from providers._common import fill_facts

        df = fill_facts(df)[list(OFFER_COLUMNS_V2)]  # fabric, zone_kind (and tier, dropped here, filled below)
    if tuple(df.columns) == OFFER_COLUMNS_V2:
        from providers._common import fill_offering_class

        df = fill_offering_class(df)[list(OFFER_COLUMNS_V3)]
    if tuple(df.columns) == OFFER_COLUMNS_V3:
        from providers._common import fill_facts

        df = fill_facts(df)[list(OFFER_COLUMNS)]  # tier; fabric and zone_kind are the file's (kept where given)
    if tuple(df.columns) != OFFER_COLUMNS:
        raise SnapshotError(f"price snapshot {path} has columns {list(df.columns)}, expected {list(OFFER_COLUMNS)}; "
                            f"{REBUILD_HINT}")
    return df.astype(OFFER_DTYPES)
