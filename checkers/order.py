"""Per-key ordering for ordered subscriptions: a key's messages are first delivered in the
order they were sent, whenever one send was acknowledged before the next was invoked.

The second pass behind `checkers.delivery`. The per-value pass (`checkers.per_value`)
found each keyed message's first delivery in each ordered subscription and shuffled those
rows by key; here each partition screens all its keys at once: walking a key's
acknowledgements and invokes in index order, an invoke whose message was first delivered
before some already acknowledged message is an inversion. Only keys that fail the screen
(none, in a legal history) get the exact count.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from checkers.partitions import rows
from checkers.per_value import FINDING, FINDINGS, FIRST, KEY


def with_inversions(found: pa.Table) -> pa.Table:
    """The per-value pass's findings, and one `order` finding per key with inversions:
    how many pairs, and the first pair by the later message's invoke (`at`)."""
    findings = found.filter(pc.equal(found["kind"], FINDING)).select(FINDINGS.names)
    firsts = found.filter(pc.equal(found["kind"], FIRST))
    if not firsts.num_rows:
        return findings
    key_text = pc.binary_join_element_wise(*[firsts[c] for c in KEY], "\x1f")
    group = pc.dictionary_encode(key_text.combine_chunks()).indices.to_numpy()
    first_recv = firsts["first_recv"].to_numpy()
    invoked = firsts["inv_index"].to_numpy()
    done = firsts["ok_index"].to_numpy(zero_copy_only=False).astype("float64")
    by_group = np.argsort(group, kind="stable")
    sorted_groups = group[by_group]
    heads, pairs, earlier, later = [], [], [], []
    for g in _screen(group, first_recv, invoked, done):
        members = by_group[np.searchsorted(sorted_groups, g):
                           np.searchsorted(sorted_groups, g, side="right")]
        counted = _count_inversions(first_recv[members], invoked[members], done[members])
        if counted is not None:
            heads.append(members[0])
            pairs.append(counted[0])
            earlier.append(members[counted[1]])
            later.append(members[counted[2]])
    head = firsts.take(pa.array(heads, pa.int64()))
    early, late = np.array(earlier, np.int64), np.array(later, np.int64)
    inversions = rows(FINDINGS, len(heads), checker="order",
                      **{c: head[c] for c in KEY}, pairs=pa.array(pairs, pa.int64()),
                      earlier=firsts["value"].take(early), later=firsts["value"].take(late),
                      at=pa.array(invoked[late]), proof0=pa.array(done[early].astype(np.int64)),
                      proof1=pa.array(first_recv[late]), proof2=pa.array(first_recv[early]))
    return pa.concat_tables([findings, inversions])


def _screen(group: np.ndarray, first_recv: np.ndarray, invoked: np.ndarray,
            done: np.ndarray) -> np.ndarray:
    """The groups with an inversion: every group's acknowledgements and invokes merged in
    index order, the latest first delivery among acknowledged messages carried along
    (a running maximum, offset per group so one pass serves all groups), and an invoke
    whose message was first delivered earlier than that marks its group."""
    acked = np.flatnonzero(~np.isnan(done))
    at = np.concatenate([done[acked].astype(np.int64), invoked])
    row = np.concatenate([acked, np.arange(len(invoked))])
    is_invoke = np.concatenate([np.zeros(len(acked), bool), np.ones(len(invoked), bool)])
    sweep = np.lexsort((at, group[row]))
    row, is_invoke = row[sweep], is_invoke[sweep]
    span = int(first_recv.max()) + 2
    offset = group[row].astype(np.int64) * span
    latest = np.maximum.accumulate(offset + np.where(is_invoke, -1, first_recv[row]))
    inverted = is_invoke & (latest > offset + first_recv[row])
    return np.unique(group[row][inverted])


def _count_inversions(first_recv: np.ndarray, invoked: np.ndarray,
                      done: np.ndarray) -> tuple[int, int, int] | None:
    """Exact count of pairs (a, b) with a acknowledged before b was invoked and b first
    delivered before a, and the first such pair by b's invoke, vectorised: acknowledgements
    and invokes merged in index order, and for each invoke the acknowledgements before it
    with a later first delivery are counted one bit of the delivery rank at a time (a
    stable sort and a running sum per bit), O(n log² n) in numpy rather than a Python loop."""
    n = len(first_recv)
    rank = np.argsort(np.argsort(first_recv, kind="stable"), kind="stable")
    acked = np.flatnonzero(~np.isnan(done))
    when = np.concatenate([done[acked], invoked.astype("float64")])
    row = np.concatenate([acked, np.arange(n)])
    is_invoke = np.concatenate([np.zeros(len(acked), bool), np.ones(n, bool)])
    sweep = np.argsort(when, kind="stable")
    value, row, is_invoke = rank[row[sweep]], row[sweep], is_invoke[sweep]
    later_delivered = np.zeros(len(sweep), dtype=np.int64)
    for bit in range(max(1, n.bit_length())):
        high, this_bit = value >> (bit + 1), (value >> bit) & 1
        by_high = np.argsort(high, kind="stable")  # sweep order kept within equal prefixes
        hits = ((~is_invoke) & (this_bit == 1))[by_high].astype(np.int64)
        before = np.cumsum(hits) - hits
        starts = np.r_[True, high[by_high][1:] != high[by_high][:-1]]
        before -= np.maximum.accumulate(np.where(starts, before, 0))
        asks = (is_invoke & (this_bit == 0))[by_high]
        later_delivered[by_high[asks]] += before[asks]
    pairs = int(later_delivered[is_invoke].sum())
    if not pairs:
        return None
    b = row[int(np.flatnonzero(is_invoke & (later_delivered > 0))[0])]
    earlier = acked[done[acked] < invoked[b]]
    a = earlier[np.argmax(first_recv[earlier])]
    return pairs, int(a), int(b)
