"""`duplicate`'s pairing of deliveries with earlier acks (checkers/per_value.py), against
the plain definition on random histories: a delivery is a duplicate when an ack of the
same value, subscription and cluster came before it and that ack is of the same stored
copy, or either position is unknown, or the run deduplicates; its proof is the earliest
such ack. The finder reaches that answer without pairing every delivery with every acked
copy, which a value stored and delivered thousands of times made a billion rows."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from checkers.partitions import TextCodes
from checkers.per_value import _OUTPUT, _duplicate

SCOPE = ["run", "value", "topic", "subscription", "cluster"]


def _events(rng: random.Random, count: int) -> list[dict[str, object]]:
    return [{"run": rng.choice(("r1", "r2")), "value": rng.choice(("v1", "v2", "v3")),
             "topic": "t", "subscription": rng.choice(("s1", "s2")),
             "cluster": rng.choice(("a", "b")),
             "position": rng.choice((None, "0:1", "0:2", "0:3", "1:1")),
             "index": index, "kind": rng.choice(("recv", "ack"))}
            for index in range(count)]


def _expected(events: list[dict[str, object]], deduplicating: set[str]
              ) -> set[tuple[object, ...]]:
    found = set()
    acks = [e for e in events if e["kind"] == "ack"]
    for recv in (e for e in events if e["kind"] == "recv"):
        proofs = [int(str(ack["index"])) for ack in acks
                  if all(ack[c] == recv[c] for c in SCOPE)
                  and int(str(ack["index"])) < int(str(recv["index"]))
                  and (recv["position"] is None or ack["position"] is None
                       or recv["run"] in deduplicating or ack["position"] == recv["position"])]
        if proofs:
            found.add((*(recv[c] for c in SCOPE), recv["index"], min(proofs)))
    return found


@pytest.mark.parametrize("seed", range(20))
def test_duplicates_are_the_deliveries_after_an_ack_of_their_copy(seed: int) -> None:
    rng = random.Random(seed)
    events = _events(rng, rng.randint(1, 80))
    deduplicating = {"r2"} if seed % 2 else set()
    table = pa.Table.from_pylist(events, schema=pa.schema(
        [(c, pa.string()) for c in [*SCOPE, "position"]]
        + [("index", pa.int64()), ("kind", pa.string())]))
    codes = TextCodes(table, [*SCOPE, "position"])
    coded = codes.table
    recvs = coded.filter(pc.equal(coded["kind"], "recv"))
    acks = coded.filter(pc.equal(coded["kind"], "ack"))
    runs = codes.encode(pa.table({"run": pa.array(sorted(deduplicating), pa.string())}))
    found = _duplicate(codes.coded(_OUTPUT), recvs, acks, runs["run"].combine_chunks())
    texts = {c: codes.text(c, found[c].combine_chunks()).to_pylist() for c in SCOPE}
    got = {(*(texts[c][n] for c in SCOPE), found["at"][n].as_py(), found["proof0"][n].as_py())
           for n in range(found.num_rows)}
    assert set(found["checker"].to_pylist()) <= {"duplicate"}
    assert got == _expected(events, deduplicating)
