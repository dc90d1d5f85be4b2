"""Where messages are stored: each stored message's ledger and entry in each cluster, in
the order it arrived there."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from checkers.mixes.base import _LEDGER_BASE, CLUSTERS, _ragged_arange
from checkers.mixes.sends import _Sends


@dataclass
class _Positions:
    """Each stored message's entry in its segment's ledger in each cluster, in the order
    it arrived there (-1: not stored)."""

    entry: list[np.ndarray]
    ledger_sizes: list[dict[int, int]]
    by_entry: list[np.ndarray]
    """Per cluster, the stored messages by ledger, then entry."""
    ledger_by_entry: list[np.ndarray]

    @staticmethod
    def ledger(segment: np.ndarray | int, cluster: np.ndarray | int) -> np.ndarray:
        """Every segment has a ledger of its own in each cluster."""
        return np.asarray(_LEDGER_BASE + 2 * np.asarray(segment) + cluster, dtype=np.int64)

    @classmethod
    def of(cls, sends: _Sends) -> _Positions:
        entries, sizes, orders, ledgers = [], [], [], []
        stored = np.flatnonzero(sends.written)
        for cluster in range(len(CLUSTERS)):
            ledger = cls.ledger(sends.segment[stored], cluster)
            order = stored[np.lexsort((stored, sends.arrival_in(cluster)[stored], ledger))]
            ledger_sorted = cls.ledger(sends.segment[order], cluster)
            starts = np.r_[0, np.flatnonzero(np.diff(ledger_sorted)) + 1]
            lengths = np.diff(np.r_[starts, len(order)])
            entry = np.full(len(sends.key), -1, dtype=np.int64)
            entry[order] = _ragged_arange(lengths)
            entries.append(entry)
            sizes.append(dict(zip(ledger_sorted[starts].tolist(), lengths.tolist())))
            orders.append(order)
            ledgers.append(ledger_sorted)
        return cls(entries, sizes, orders, ledgers)

    def holders(self, ledger: int, cluster: int) -> np.ndarray:
        """The messages of a ledger, by entry."""
        low, high = np.searchsorted(self.ledger_by_entry[cluster], [ledger, ledger + 1])
        return self.by_entry[cluster][low:high]

    def nearest_earlier(self, msg: np.ndarray, segment: np.ndarray, cluster: int,
                        eligible: np.ndarray) -> np.ndarray:
        """Per message stored in `cluster` (of these segments), the eligible message at
        the nearest earlier entry of its ledger there (-1: none), for all at once."""
        order, ledgers = self.by_entry[cluster], self.ledger_by_entry[cluster]
        at = np.searchsorted(ledgers, self.ledger(segment, cluster)) + self.entry[cluster][msg]
        last_eligible = np.maximum.accumulate(np.where(eligible[order], np.arange(len(order)),
                                                       -1))
        before = np.where(at > 0, last_eligible[np.maximum(at - 1, 0)], -1)
        same_ledger = (before >= 0) & (ledgers[np.maximum(before, 0)] == ledgers[at])
        return np.where(same_ledger, order[np.maximum(before, 0)], -1)

    def beyond(self, sends: _Sends, msg: np.ndarray, offset: int) -> np.ndarray:
        """Entries past the end of each message's ledger in the cluster it was written in,
        two per message (`offset` 0 and 1): positions no other message ever takes."""
        home = sends.home[msg]
        ledgers = self.ledger(sends.segment[msg], home)
        return np.array([self.ledger_sizes[c][int(led)] + 2 * n + offset for n, (c, led)
                         in enumerate(zip(home.tolist(), ledgers.tolist()))], dtype=np.int64)
