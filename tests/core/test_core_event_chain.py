"""The event log's hash chain: every line links to the one before, across rotations.

``presets events verify`` finds the first removed, altered or reordered line;
these tests tamper with a real log the way a person covering their tracks would.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets.cli import PresetsGroup, main
from agent_presets.server.eventlog import GENESIS, line_hash, rotated_paths, verify_log
from agent_presets.server.events import Call, Change, EventLog, check_event, read_events


def _write(path: Path, n: int, **log: int) -> None:
    events = EventLog(path, **log)
    for i in range(n):
        events.write(Call(tool=f"tool-{i}", ok=True, latency_ms=float(i)))
    events.close()


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _verify(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main_group(), ["events", "verify", "--event-log", str(path)])
    return result.exit_code, result.output


def main_group() -> PresetsGroup:
    assert isinstance(main, PresetsGroup)
    return main


def test_every_line_links_to_the_line_before_it(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 5)
    lines = _lines(path)
    assert json.loads(lines[0])["prev"] == GENESIS
    for before, line in itertools.pairwise(lines):
        assert json.loads(line)["prev"] == line_hash(before)
    for event in read_events(path):
        check_event(event)  # prev is part of the schema
    assert verify_log(path).broken is None


def test_a_reopened_log_continues_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 3)
    _write(path, 3)
    assert verify_log(path) == (6, None, 0)


def test_rotation_carries_the_chain_into_the_next_file(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 60, max_bytes=2048, backups=5)
    files = rotated_paths(path)
    assert len(files) > 2
    first_of_newest = json.loads(_lines(files[-1])[0])
    assert first_of_newest["prev"] == line_hash(_lines(files[-2])[-1])
    found = verify_log(path)
    assert found.broken is None and found.lines == sum(len(_lines(f)) for f in files)


def test_a_removed_line_is_found_where_it_was(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 8)
    lines = _lines(path)
    path.write_bytes(b"".join(lines[:3] + lines[4:]))
    broken = verify_log(path).broken
    assert broken is not None and broken.line == 4 and "removed or altered" in broken.problem
    code, out = _verify(path)
    assert code == 1 and f"{path}:4:" in out and "removed" in out


def test_an_altered_line_is_found(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 8)
    lines = _lines(path)
    lines[5] = lines[5].replace(b'"ok":true', b'"ok":false')
    path.write_bytes(b"".join(lines))
    broken = verify_log(path).broken
    # The altered line's own link still holds; the next line no longer links to it.
    assert broken is not None and broken.line == 7 and "removed or altered" in broken.problem


def test_swapped_lines_are_found(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 8)
    lines = _lines(path)
    lines[2], lines[3] = lines[3], lines[2]
    path.write_bytes(b"".join(lines))
    broken = verify_log(path).broken
    assert broken is not None and broken.line == 3


def test_a_cut_across_a_rotation_is_found(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 60, max_bytes=2048, backups=5)
    files = rotated_paths(path)
    middle = files[-2]
    middle.write_bytes(b"".join(_lines(middle)[:-1]))  # its last line removed
    broken = verify_log(path).broken
    assert broken is not None and broken.file == files[-1] and broken.line == 1


def test_a_torn_line_is_skipped_and_the_chain_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 3)
    with path.open("ab") as f:
        f.write(b'{"v":1,"kind":"call","tool":"tor')  # a crash mid-line
    _write(path, 2)
    assert verify_log(path) == (5, None, 0)


def test_lines_from_before_the_chain_are_counted_apart(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    old = Change(preset="p", state="on", by="cli").to_json()
    path.write_text(json.dumps(old) + "\n")
    _write(path, 2)
    assert verify_log(path) == (2, None, 1)
    code, out = _verify(path)
    assert code == 0 and out.startswith("ok 2 lines")


def test_verify_says_ok_with_the_count_and_json_for_machines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 4)
    code, out = _verify(path)
    assert (code, out) == (0, "ok 4 lines\n")
    result = CliRunner().invoke(
        main_group(), ["events", "verify", "--event-log", str(path), "--json"]
    )
    assert json.loads(result.output) == {"ok": True, "lines": 4, "unchained": 0, "break": None}


def test_verify_without_a_log_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main_group(), ["events", "verify", "--state-dir", str(tmp_path)])
    assert result.exit_code == 1 and "no event log at" in result.output


@settings(max_examples=examples(30))
@given(n=st.integers(3, 20), data=st.data())
def test_any_single_removal_or_swap_is_found(n: int, data: st.DataObject) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.jsonl"
        _write(path, n)
        lines = _lines(path)
        if data.draw(st.booleans(), label="swap"):
            i = data.draw(st.integers(0, n - 2), label="line")
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        else:
            # Not the oldest line: without it the chain simply starts one line later.
            i = data.draw(st.integers(1, n - 2), label="line")
            del lines[i]
        path.write_bytes(b"".join(lines))
        broken = verify_log(path).broken
        assert broken is not None and broken.line <= i + 2


def test_an_edit_hidden_by_stripping_the_links_before_it_is_found(tmp_path: Path) -> None:
    # Lines without `prev` count as older than the chain and are not checked;
    # stripping it from every line up to an edited one must not pass for that.
    path = tmp_path / "events.jsonl"
    _write(path, 6)
    lines = [json.loads(line) for line in _lines(path)]
    lines[2]["tool"] = "forged"
    for line in lines[:3]:
        del line["prev"]
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    found = verify_log(path)
    assert found.broken is not None and found.broken.line == 4, found
    code, out = _verify(path)
    assert code == 1 and ":4: the chain breaks here" in out


def test_forged_lines_without_links_before_the_first_line_are_found(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, 2)
    forged = Change(preset="general-shell-tools", state="on", by="cli").to_json()
    path.write_bytes((json.dumps(forged) + "\n").encode() + path.read_bytes())
    found = verify_log(path)
    assert found.broken is not None and found.broken.line == 2, found


def test_a_chain_begun_in_a_new_file_after_older_unchained_files_is_whole(
    tmp_path: Path,
) -> None:
    # An older version rotated its unchained lines away; this one began afresh.
    path = tmp_path / "events.jsonl"
    old = Change(preset="p", state="on", by="cli").to_json()
    (tmp_path / "events.jsonl.1").write_text(json.dumps(old) + "\n")
    _write(path, 2)
    assert verify_log(path) == (2, None, 1)
