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
