"""Bearer tokens with profiles: who may call a server over HTTP, and what each may do.

A token is 256 random bits (``secrets.token_urlsafe(32)``), shown once when
it is created; the state directory keeps only its SHA-256. A slow hash buys
nothing against 256 random bits, and a fast one keeps the per-request check
cheap. Each token carries a profile: an allow-list of preset and tool names
(expanded to tools by the server, as ``--allow`` is), call budgets counted
for the server's run, and an optional expiry.

Where the file lives and who writes it
--------------------------------------
``STATE/tokens.json`` (mode 0600), replaced atomically (temp file, fsync,
rename), so a reader sees the old file or the new one, never half.

A running server holds the state directory's lock (``server.store.lock``) for its
whole life, yet tokens must be created and revoked while it runs. So the
token file is *not* server-owned state: the server only ever reads it, and
writers (``presets tokens create|revoke``) serialise among themselves with a
separate lock, ``STATE/tokens.lock``, held (``flock``, blocking) only for one
read-modify-write. The server notices a change by the file's identity
(inode, mtime, size), checked on every request: a rename gives a new inode,
so a revocation is seen on the next request after it. Because inode numbers
are reused and mtimes are coarse, the server also reads the file afresh at
least every ``RELOAD_SECONDS`` (0.5 s), which bounds the worst case.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from agent_presets.lib.atomicfile import write_atomic
from agent_presets.lib.model import PresetError
from agent_presets.lib.principal import LOCAL

T = TypeVar("T")

TOKENS_FILE: Final = "tokens.json"
TOKENS_LOCK: Final = "tokens.lock"
FILE_VERSION: Final = 1
NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_DURATION_RE: Final = re.compile(r"^\s*(\d+)\s*([mhd])\s*$")
_UNITS: Final = {"m": 60, "h": 3600, "d": 86400}
RELOAD_SECONDS: Final = 0.5
"""The longest a running server goes without reading the token file afresh."""


class TokenError(PresetError):
    """A token command was given something it cannot do (a bad name, a duplicate ...)."""


def parse_duration(text: str) -> int:
    """Seconds in ``90m``, ``12h`` or ``30d``."""
    match = _DURATION_RE.match(text)
    if match is None or int(match.group(1)) == 0:
        raise TokenError(
            f"{text!r} is not a duration; use a positive number of minutes, hours or days "
            "such as 90m, 12h or 30d"
        )
    return int(match.group(1)) * _UNITS[match.group(2)]


def digest(token: str) -> str:
    """The hex SHA-256 that the token file keeps in place of the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenRecord:
    """One token as stored: its profile and the SHA-256 of its secret."""

    name: str
    sha256: str
    allow: tuple[str, ...] | None = None
    """Preset and tool names the token may use; None: whatever the server exposes."""
    max_calls: int | None = None
    max_calls_per_tool: int | None = None
    created: float = 0.0
    expires: float | None = None
    """Seconds since the epoch after which the token is refused; None: never."""
    delivery: str | None = None
    """``stable`` or ``live`` for every client of this token (``delivery.py``); None: the
    server's ``--delivery``."""

    def expired(self, now: float | None = None) -> bool:
        return self.expires is not None and (time.time() if now is None else now) >= self.expires

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sha256": self.sha256,
            "allow": list(self.allow) if self.allow is not None else None,
            "max_calls": self.max_calls,
            "max_calls_per_tool": self.max_calls_per_tool,
            "created": self.created,
            "expires": self.expires,
            "delivery": self.delivery,
        }

    def public(self) -> dict[str, Any]:
        """What ``presets tokens list`` shows: everything but the hash."""
        shown = self.to_json()
        del shown["sha256"]
        return shown

    @classmethod
    def from_json(cls, data: Any, source: Path | str) -> TokenRecord:
        try:
            allow = data["allow"]
            record = cls(
                name=str(data["name"]),
                sha256=str(data["sha256"]),
                allow=tuple(str(a) for a in allow) if allow is not None else None,
                max_calls=_optional_int(data.get("max_calls")),
                max_calls_per_tool=_optional_int(data.get("max_calls_per_tool")),
                created=float(data.get("created") or 0.0),
                expires=float(data["expires"]) if data.get("expires") is not None else None,
                delivery=_delivery(data.get("delivery")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TokenError(
                f"{source}: a token entry is malformed ({exc}); fix or remove it"
            ) from None
        if len(record.sha256) != 64:
            raise TokenError(f"{source}: token {record.name!r} has no valid sha256")
        return record


def _delivery(value: Any) -> str | None:
    if value is None:
        return None
    if value not in ("auto", "stable", "live"):
        raise ValueError(f"delivery {value!r} is not one of: auto, stable, live")
    return None if value == "auto" else str(value)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def check_name(name: str) -> None:
    """Refuse a name no token may have: a malformed one, or ``local``.

    A token's name is its principal, and ``local`` is the server's own (its
    context is the host's, its overrides the server's): a token by that name
    would move the host and turn presets off for everyone.
    """
    if not NAME_RE.match(name):
        raise TokenError(
            f"{name!r} is not a token name; use up to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if name == LOCAL:
        raise TokenError(
            f"{name!r} cannot be a token name: it is the server's own principal (stdio and "
            "an unauthenticated server act as it); choose another name"
        )


def read_tokens(path: Path) -> dict[str, TokenRecord]:
    """The records in ``path`` by name; none when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    return parse_tokens(text, path)


def parse_tokens(text: str, path: Path | str) -> dict[str, TokenRecord]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TokenError(f"{path}: not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
        raise TokenError(f"{path}: expected an object with a 'tokens' list")
    records = (TokenRecord.from_json(item, path) for item in data["tokens"])
    return {r.name: r for r in records}


class TokenStore:
    """The token file of one state directory: create, list, revoke.

    Writers hold ``tokens.lock`` for one read-modify-write; the server never
    takes it (it only reads, and a rename is atomic), and this never takes
    the state lock a running server holds.
    """

    def __init__(self, state_dir: str | Path) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / TOKENS_FILE
        self.lock_path = self.state_dir / TOKENS_LOCK
        self.where = str(self.path)
        """Where the tokens are kept, for messages."""

    def list(self) -> list[TokenRecord]:
        return sorted(read_tokens(self.path).values(), key=lambda r: r.name)

    def create(
        self,
        name: str,
        *,
        allow: Iterable[str] | None = None,
        max_calls: int | None = None,
        max_calls_per_tool: int | None = None,
        expires_in: int | None = None,
        replace: bool = False,
        delivery: str | None = None,
    ) -> tuple[str, TokenRecord]:
        """Make a token; return its secret (shown once) and its stored record.

        ``delivery``: ``stable`` or ``live`` for every client of the token (``auto``
        or None: the server's ``--delivery``)."""
        check_name(name)
        try:
            delivery = _delivery(delivery)
        except ValueError as exc:
            raise TokenError(str(exc)) from None
        for label, value in (("max_calls", max_calls), ("max_calls_per_tool", max_calls_per_tool)):
            if value is not None and value < 1:
                raise TokenError(f"{label} must be at least 1, got {value}")
        token = secrets.token_urlsafe(32)
        now = round(time.time(), 3)
        record = TokenRecord(
            name=name,
            sha256=digest(token),
            allow=tuple(allow) if allow is not None else None,
            max_calls=max_calls,
            max_calls_per_tool=max_calls_per_tool,
            created=now,
            expires=now + expires_in if expires_in is not None else None,
            delivery=delivery,
        )

        def add(records: dict[str, TokenRecord]) -> None:
            if name in records and not replace:
                raise TokenError(
                    f"a token named {name!r} exists already; revoke it first, or pass --replace "
                    "to replace it (its old secret stops working)"
                )
            records[name] = record

        self._modify(add)
        return token, record

    def revoke(self, name: str) -> TokenRecord:
        def remove(records: dict[str, TokenRecord]) -> TokenRecord:
            record = records.pop(name, None)
            if record is None:
                from agent_presets.lib.suggest import did_you_mean

                hint = did_you_mean(name, records, "`presets tokens list` shows the names")
                raise TokenError(f"no token named {name!r}{hint}")
            return record

        return self._modify(remove)

    def _modify(self, change: Callable[[dict[str, TokenRecord]], T]) -> T:
        """Apply ``change`` to the records as one read-modify-write; nothing is written if
        it raises."""
        with self._writing() as records:
            return change(records)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[dict[str, TokenRecord]]:
        """The records under ``tokens.lock``; written back if the block ends without error."""
        self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            records = read_tokens(self.path)
            yield records
            _write_private(self.path, records.values())
        finally:
            os.close(fd)  # drops the flock


def _write_private(path: Path, records: Iterable[TokenRecord]) -> None:
    """Replace ``path`` atomically with a file only its owner can read (0600 from creation)."""
    data = {"version": FILE_VERSION, "tokens": [r.to_json() for r in records]}
    payload = (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8")
    write_atomic(path, payload, mode=0o600)


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one presented token: its record, or why it was refused."""

    record: TokenRecord | None
    reason: str | None = None
    """``missing``, ``unknown``, ``expired`` or ``reserved`` (named ``local``) when refused."""


class TokenTable:
    """The server's read-only view of the token file, re-read when the file changes.

    Every check stats the file (about a microsecond, far below one HTTP
    request) and re-reads it when its identity (inode, mtime, size) changed,
    so a revocation or a new token counts from the next request on. Since an
    inode number can be reused and mtimes are coarse, the file is also read
    again at least every ``reload`` seconds whatever its identity, which
    bounds how long a change can go unseen in the worst case.

    Comparison runs over every record with ``hmac.compare_digest`` and no
    early exit, so the time taken does not depend on which hash matched.
    """

    def __init__(self, state_dir: str | Path, *, reload: float = RELOAD_SECONDS) -> None:
        self.path = Path(state_dir) / TOKENS_FILE
        self.reload = reload
        self.where = str(self.path)
        self._lock = threading.Lock()
        self._identity: tuple[int, int, int] | None = None
        self._text: str | None = None
        self._read_at = float("-inf")
        self._records: tuple[TokenRecord, ...] = ()
        self._by_name: dict[str, TokenRecord] = {}
        self.version = 0
        """Bumped each time the file's contents change."""
        self.refresh()

    def refresh(self) -> None:
        now = time.monotonic()
        try:
            info = os.stat(self.path)
            identity: tuple[int, int, int] | None = (info.st_ino, info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            identity = None
        if identity == self._identity and now - self._read_at < self.reload:
            return
        with self._lock:
            try:
                text: str | None = self.path.read_text(encoding="utf-8")
            except FileNotFoundError:
                text = None
            self._identity = identity
            self._read_at = now
            self._take(text)

    def _take(self, text: str | None) -> None:
        """Hold the records of ``text`` (the file's, None: no file). Hold ``_lock``."""
        if text == self._text and self.version:
            return
        try:
            records = parse_tokens(text, self.where) if text is not None else {}
        except TokenError:
            # A broken file refuses every token rather than keeping stale ones.
            records = {}
        self._text = text
        self._records = tuple(records.values())
        self._by_name = dict(records)
        self.version += 1

    def names(self) -> list[str]:
        self.refresh()
        return sorted(self._by_name)

    def get(self, name: str, *, refresh: bool = True) -> TokenRecord | None:
        """The record named ``name``; ``refresh=False`` trusts the last check (one per request)."""
        if refresh:
            self.refresh()
        return self._by_name.get(name)

    def verify(self, presented: str | None) -> Verdict:
        if not presented:
            return Verdict(None, "missing")
        self.refresh()
        wanted = digest(presented).encode("ascii")
        found: TokenRecord | None = None
        for record in self._records:
            if hmac.compare_digest(record.sha256.encode("ascii"), wanted):
                found = record
        if found is None:
            return Verdict(None, "unknown")
        if found.name == LOCAL:
            return Verdict(None, "reserved")  # written before the name was refused
        if found.expired():
            return Verdict(None, "expired")
        return Verdict(found)
