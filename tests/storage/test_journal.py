"""The journal alone: group commit answers every waiter, and replay drops a torn tail
but keeps everything before it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from impl.bookie.journal import Journal, Record, RecordKind


def _replay(path: Path) -> tuple[Journal, list[Record]]:
    records: list[Record] = []
    return Journal.replay(path, records.append, _fail), records


def _fail(exc: BaseException) -> None:
    raise AssertionError(f"journal failed: {exc!r}")


def test_concurrent_appends_become_durable_and_replay_in_order(tmp_path: Path) -> None:
    path = tmp_path / "journal.log"

    async def write() -> None:
        journal, _ = _replay(path)
        ends = [journal.append(RecordKind.ENTRY, 1, b"%d" % i)[1] for i in range(50)]
        await asyncio.gather(*(journal.wait_durable(end) for end in ends))
        assert path.stat().st_size == ends[-1]
        await journal.close()

    asyncio.run(write())
    with path.open("ab") as file:
        file.write(b"\x00\x00\x00\x20\x00\x00")  # a header cut short by a crash
    journal, records = _replay(path)
    assert [r.payload for r in records] == [b"%d" % i for i in range(50)]
    assert journal.read(records[7].payload_offset, 1) == b"7"
    assert journal.end == path.stat().st_size  # the torn tail is gone
    asyncio.run(journal.close())
