"""The state directory's secret key: what the server seals and signs its own files with.

One 32-byte key, ``STATE/request-state.key`` (mode 0600), made on first use.
The served process seals the state of multi-round calls with it
(``server/mcp/rounds.py``); the parse cache signs its entries with a key
derived from it (``parsecache.py``), so each use has a key of its own and an
entry signed for one cannot pass for the other.

It guards against files written by someone who cannot read the key (a
process given the cache folder, a restored backup): whoever can read the
state directory as its owner can read the key too.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import Final

from agent_presets.lib.atomicfile import private_file, write_atomic

__all__ = ["KEY_FILE", "derived_key", "state_key"]

KEY_FILE: Final = "request-state.key"


def state_key(state_dir: Path) -> bytes:
    """The state directory's key, made (0600) when missing or unusable."""
    path = state_dir / KEY_FILE
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        key = b""
    if len(key) < 32:  # missing or unusable: a new key (what was sealed before stops verifying)
        key = secrets.token_bytes(32)
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(path, (key.hex() + "\n").encode("ascii"), mode=0o600)
    else:
        private_file(path)
    return key


def derived_key(key: bytes, purpose: str) -> bytes:
    """A key for one ``purpose`` only, from the state directory's key."""
    return hmac.new(key, f"agent-presets {purpose}".encode(), hashlib.sha256).digest()
