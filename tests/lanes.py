"""How many examples a property test runs in each lane (the profiles: tests/conftest.py).

A test that needs more examples than the profile gives names its count with
``@settings(max_examples=examples(300))``: the full lane runs that many, and
the quick lane no more than its own profile's count, as for every other
property. A count below the profile's (a property whose examples are each
expensive) is kept in both lanes.
"""

from __future__ import annotations

from hypothesis import settings

QUICK_PROFILE = "quick"


def examples(full: int) -> int:
    """``full`` examples, capped at the ``quick`` profile's count when that profile is loaded."""
    if settings.get_current_profile_name() == QUICK_PROFILE:
        return min(full, settings().max_examples)
    return full
