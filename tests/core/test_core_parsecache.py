"""The parse cache: an unchanged preset file is not read by YAML again, and nothing else changes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import agent_presets_drawing
from agent_presets.lib import parsecache, yamlfile
from agent_presets.lib.bundles import FileMembers
from agent_presets.lib.loader import parse_presets
from agent_presets.lib.parsecache import ParseCache

DRAWING = Path(agent_presets_drawing.__file__).with_name("presets.yaml").read_text("utf-8")
GOOD = (
    "presets:\n"
    "  - name: good-tools\n"
    "    default_state: auto\n"
    "    risk: normal\n"
    "    contexts: [{surface: any}]\n"
    "    tool_ids: [good.tool]\n"
)


def read(text: str, cache: ParseCache | None) -> tuple[list, list, FileMembers]:
    members = FileMembers()
    presets, problems = parse_presets(text, "p.yaml", members, cache=cache)
    return presets, problems, members


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.exists() else []


def kept(entry: Path) -> dict:
    """An entry's data (the line after its signature)."""
    return json.loads(entry.read_bytes().partition(b"\n")[2])


def keep(cache: ParseCache, entry: Path, data: dict) -> None:
    """Write ``data`` as ``entry``, signed as the cache signs: someone who holds the key."""
    payload = json.dumps(data).encode()
    entry.write_bytes(cache._mac(entry, payload) + b"\n" + payload)


def no_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str, source: str) -> None:
        raise AssertionError("YAML read a file the cache holds")

    monkeypatch.setattr(yamlfile, "compose", refuse)


def test_an_unchanged_file_is_answered_from_the_cache_with_the_same_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ParseCache(tmp_path / "cache")
    fresh = read(DRAWING, None)
    first = read(DRAWING, cache)
    assert len(entries(tmp_path / "cache")) == 1
    no_yaml(monkeypatch)
    again = read(DRAWING, cache)
    assert first[1] == again[1] == fresh[1] == []
    assert again[0] == first[0] == fresh[0]
    # The members (prompts, resources) keep their lines: they come from the kept positions.
    assert again[2].resources == fresh[2].resources and fresh[2].resources
    assert again[2].prompts == fresh[2].prompts


def test_an_edited_file_is_read_again(tmp_path: Path) -> None:
    cache = ParseCache(tmp_path / "cache")
    read(GOOD, cache)
    edited = GOOD.replace("good-tools", "other-tools")
    presets, problems, _ = read(edited, cache)
    assert [p.name for p in presets] == ["other-tools"] and problems == []
    assert len(entries(tmp_path / "cache")) == 2


@pytest.mark.parametrize(
    "text",
    [
        GOOD + "  - {name: good-tools, risk: normal, contexts: [], tool_ids: [a.b]}\n",
        "presets:\n  - name: x\n    name: y\n",
        "presets: [unclosed\n",
        GOOD.replace("risk: normal", "risk: enormous"),
    ],
    ids=["duplicate-preset", "duplicate-key", "syntax", "schema"],
)
def test_a_file_with_a_problem_is_not_kept_and_is_reported_alike_each_time(
    tmp_path: Path, text: str
) -> None:
    cache = ParseCache(tmp_path / "cache")
    first = read(text, cache)
    again = read(text, cache)
    assert first[1] and [str(p) for p in first[1]] == [str(p) for p in again[1]]
    assert entries(tmp_path / "cache") == []


def test_an_entry_that_cannot_be_read_is_ignored_and_written_again(tmp_path: Path) -> None:
    cache = ParseCache(tmp_path / "cache")
    read(GOOD, cache)
    (entry,) = entries(tmp_path / "cache")
    entry.write_text("{not json", encoding="utf-8")
    presets, problems, _ = read(GOOD, cache)
    assert [p.name for p in presets] == ["good-tools"] and problems == []
    assert kept(entry)["format"] == parsecache.FORMAT


def test_an_altered_entry_cannot_hold_what_a_file_could_not(tmp_path: Path) -> None:
    """A kept read is checked again (the schema, every rule): a risky preset stays off."""
    cache = ParseCache(tmp_path / "cache")
    read(GOOD, cache)
    (entry,) = entries(tmp_path / "cache")
    data = kept(entry)
    data["data"]["presets"][0].update(risk="shell", default_state="on")
    keep(cache, entry, data)
    presets, problems, _ = read(GOOD, cache)
    assert presets == []
    assert problems and "default_state" in str(problems[0])
    assert problems[0].line == 3  # the default_state line: located with the kept positions


def test_the_cache_folder_and_its_entries_are_private(tmp_path: Path) -> None:
    folder = tmp_path / "state" / "cache" / "presets"
    read(GOOD, ParseCache(folder))
    for made in (tmp_path / "state", tmp_path / "state" / "cache", folder):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700, made
    (entry,) = entries(folder)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_the_cache_keeps_at_most_its_limit_the_oldest_going_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parsecache, "MAX_ENTRIES", 3)
    cache = ParseCache(tmp_path / "cache")
    texts = [GOOD.replace("good-tools", f"tools-{n}") for n in range(5)]
    for n, text in enumerate(texts):
        read(text, cache)
        # Written in this order, and told so: the file system's clock may not tell them apart.
        os.utime(cache._path(text), ns=((n + 1) * 10**9, (n + 1) * 10**9))
    kept = entries(tmp_path / "cache")
    assert len(kept) == 3
    assert sorted(kept) == sorted(cache._path(t) for t in texts[2:])


def test_a_restarted_host_does_not_import_pyyaml(tmp_path: Path) -> None:
    """What a user pays for: the second start of the same plugins reads no YAML."""
    script = (
        "import sys\n"
        "from agent_presets_general import SpaceHost\n"
        f"with SpaceHost({str(tmp_path / 'state')!r}) as host:\n"
        "    presets = host.start()\n"
        "    print(len(presets.registry), 'yaml' in sys.modules)\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs[0][1] == "True" and runs[1][1] == "False"
    assert runs[0][0] == runs[1][0] != "0"  # the same presets either way


def test_a_symlinked_cache_folder_or_entry_is_not_used(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    (state / "cache").symlink_to(elsewhere)
    presets, problems, _ = read(GOOD, ParseCache(state / "cache" / "presets"))
    assert [p.name for p in presets] == ["good-tools"] and problems == []
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    # An entry planted as a link (to a read someone else wrote) is not read.
    cache = ParseCache(tmp_path / "own")
    read(GOOD, cache)
    (entry,) = entries(tmp_path / "own")
    forged = kept(entry)
    forged["data"]["presets"][0]["name"] = "forged"
    keep(cache, entry, forged)
    os.replace(entry, tmp_path / "forged.json")
    entry.symlink_to(tmp_path / "forged.json")
    presets, _, _ = read(GOOD, cache)
    assert [p.name for p in presets] == ["good-tools"]


def test_keeping_a_read_waits_for_no_disk_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first start pays for no fsync: a lost or torn entry is only read again."""
    flushes: list[int] = []
    monkeypatch.setattr(os, "fsync", flushes.append)
    read(GOOD, ParseCache(tmp_path / "cache"))
    assert len(entries(tmp_path / "cache")) == 1
    assert flushes == []
    torn = entries(tmp_path / "cache")[0]
    torn.write_bytes(torn.read_bytes()[:20])  # what a crash mid-write could leave
    presets, problems, _ = read(GOOD, ParseCache(tmp_path / "cache"))
    assert [p.name for p in presets] == ["good-tools"] and problems == []


SHELL = GOOD.replace("good-tools", "shell-tools").replace(
    "default_state: auto\n    risk: normal", 'default_state: "off"\n    risk: shell'
)


def test_an_edited_entry_is_not_used_and_the_file_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: an entry edited to make a shell preset normal and auto is not served."""
    cache = ParseCache(tmp_path / "cache", key=b"k" * 32)
    (fresh,), _, _ = read(SHELL, cache)
    assert (fresh.risk, fresh.default_state) == ("shell", "off")
    (entry,) = entries(tmp_path / "cache")
    data = kept(entry)
    data["data"]["presets"][0].update(risk="normal", default_state="auto")
    mac = entry.read_bytes().partition(b"\n")[0]
    entry.write_bytes(mac + b"\n" + json.dumps(data).encode())  # edited, not signed again
    (again,), problems, _ = read(SHELL, ParseCache(tmp_path / "cache", key=b"k" * 32))
    assert problems == [] and (again.risk, again.default_state) == ("shell", "off")
    # Read from the YAML, and kept again, signed: the next start uses it.
    no_yaml(monkeypatch)
    (third,), _, _ = read(SHELL, ParseCache(tmp_path / "cache", key=b"k" * 32))
    assert (third.risk, third.default_state) == ("shell", "off")


def test_an_entry_moved_to_another_files_name_or_signed_with_another_key_is_not_used(
    tmp_path: Path,
) -> None:
    cache = ParseCache(tmp_path / "cache", key=b"k" * 32)
    read(GOOD, cache)
    (entry,) = entries(tmp_path / "cache")
    os.replace(entry, cache._path(SHELL))  # GOOD's signed read, under SHELL's name
    (shell,), _, _ = read(SHELL, cache)
    assert (shell.name, shell.risk) == ("shell-tools", "shell")
    other = ParseCache(tmp_path / "cache", key=b"o" * 32)  # another state directory's key
    (again,), _, _ = read(SHELL, other)
    assert again.name == "shell-tools"
    assert len(entries(tmp_path / "cache")) == 1  # rewritten under its own key


def test_a_host_signs_its_cache_with_the_state_directorys_key(tmp_path: Path) -> None:
    from agent_presets.lib.statekey import KEY_FILE
    from agent_presets_general import SpaceHost

    with SpaceHost(tmp_path / "state") as host:
        host.start()
    key = tmp_path / "state" / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    kept_entries = entries(tmp_path / "state" / "cache" / "presets")
    assert kept_entries
    signed = ParseCache(tmp_path / "cache", key=bytes.fromhex(key.read_text()))
    entry = kept_entries[0]
    mac, _, payload = entry.read_bytes().partition(b"\n")
    assert mac == signed._mac(entry, payload)
