"""What some tests need from the machine beyond Python, and the skip that names it.

A machine with only Python passes the quick lane: a test that needs a system
package skips there, its reason naming the package to install (`-ra` prints
it in the summary). The full lane (``--full``, what ``.ci/run`` runs) fails
on any skip (tests/conftest.py), so CI runs every such test and a missing
package fails it, with the same reason.
"""

from __future__ import annotations

import pytest

from agent_presets_general.sandbox import sandbox_status


def need_shell_sandbox() -> None:
    """Skip unless bubblewrap sandboxes commands here (Debian: apt-get install bubblewrap)."""
    ok, why = sandbox_status()
    if not ok:
        # The reason's first clause (what is wrong here); its advice is for an operator.
        pytest.skip(f"needs bubblewrap (apt-get install bubblewrap): {why.split(': ')[0]}")
