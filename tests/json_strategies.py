"""Hypothesis strategies for JSON-like values, shared by the schema tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st


def nested(
    scalars: st.SearchStrategy[Any], keys: Sequence[str], max_leaves: int = 12
) -> st.SearchStrategy[Any]:
    """Scalars, and lists and objects (keys drawn from ``keys``) of them, nested."""
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(list(keys)), inner, max_size=3),
        ),
        max_leaves=max_leaves,
    )


def _signed(magnitude: int, negative: bool) -> int:
    return -magnitude if negative else magnitude


HUGE_INTEGERS: st.SearchStrategy[int] = st.builds(
    _signed,
    st.sampled_from([10**400, 2**1024]) | st.integers(min_value=2**1024, max_value=10**4000),
    st.booleans(),
)
"""Valid JSON integers past a float's range (``10**400``), of either sign.

JSON puts no bound on an integer, and Python reads every one (up to 4300
digits) exactly; one that a tool turns into a float overflows. Strategies
for JSON values draw these too, so fuzzing reaches them.
"""

JSON_NUMBERS: st.SearchStrategy[int | float] = (
    st.integers() | st.floats(allow_nan=False, allow_infinity=False) | HUGE_INTEGERS
)
"""Every number valid JSON can spell: integers of any size, finite floats."""
