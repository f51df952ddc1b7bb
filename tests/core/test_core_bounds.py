"""Bounds on what a client's input makes the server hold or echo (unit level).

The attacks themselves, against a running server, are in ``tests/e2e/test_e2e_bounds.py``.
"""

from __future__ import annotations

import pytest

from agent_presets.mcpserver.envelope import INVALID_REQUEST, too_long


@pytest.mark.parametrize(
    ("start", "id_"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"xxxx', 7),
        ('{"jsonrpc":"2.0","id":"a","method":"x"', "a"),
        # The id could be cut short (12 of 123): not trusted.
        ('{"jsonrpc":"2.0","id":12', None),
        # An "id" inside params is not the request's.
        ('{"jsonrpc":"2.0","method":"tools/call","params":{"id":3,"name":"xx', None),
        ("xxxxxxxx", None),
        ('{"jsonrpc":"2.0","id":true,"method":"x"', None),
    ],
)
def test_an_over_long_message_is_answered_with_its_id_only_when_the_start_shows_it_whole(
    start: str, id_: object
) -> None:
    rejection = too_long(start, 100)
    assert rejection.errors[0][:2] == (id_, INVALID_REQUEST)
    assert "limit of 100 characters" in rejection.message
