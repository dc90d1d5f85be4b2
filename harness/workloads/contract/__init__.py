"""The `contract` workload: what a Pulsar user relies on of the official `pulsar-client`,
probed one feature at a time on a cluster without faults, and recorded so that the
checkers judge it from the history alone.

Each group of probes has a topic of its own (`<topic>-<run nonce>-<group>`), so no probe
disturbs another and a rerun against the same Target starts afresh. Two kinds of record:

- Where the contract is "every message sent arrives, nothing else, nothing acknowledged
  comes again", ordinary `send`, `subscribe`, `recv` and `ack` operations, the topic
  workload's shape, for `lost`, `unexpected`, `duplicate`, `order` and `forked-position`.
  Acknowledgements are `info` (`unconfirmed`, the client gives no receipt) except those
  the acknowledgement probes make: each waits until the broker's own backlog count of the
  subscription shows it applied, and only then completes `ok`, so that a later delivery
  of that message in the subscription is a `duplicate`. Legitimate redeliveries (negative
  acknowledgements, the acknowledgement timeout, a closed consumer's messages, a seek)
  are of messages never acknowledged `ok`, so they are never counted.
- Where the expectation is particular (a seek rewinds, a reader from the latest message
  sees no older one), a `probe` operation per expectation: `value` the probe's name,
  `detail` its `expected` and `observed` (JSON values), completed `ok` when they agree and
  `fail` when not; the `contract` checker names every probe whose two differ. A probe whose
  group could not run (its setup failed: a producer, a subscribe, a send of its fixture
  messages, an acknowledgement the broker never confirmed) completes `info`, which makes
  the verdict unknown rather than false. The one call a probe tests is observed whatever
  it does: on a cluster without faults a broker that answers it with an error, or never
  within the client's operation timeout (a seek on a broker without SEEK), breaks the
  contract, so that error is the observation (`{"error": "Timeout"}`) and the probe fails.

The modules: `workload.py` (`ContractWorkload`: the groups in the order they run, the
drain), `recording.py` (what a group records), `clients.py` (the recorded client
operations, and `GroupSpec`), `receiving.py` (the receive loop), `limits.py` (every count
and time), and the probes by theme, each module listing its groups in `GROUPS`:
`queues.py` (queues and acknowledgements), `redelivery.py`, `readers.py` (readers and
seek), `producers.py` (access modes and names), `delayed.py` (delayed delivery),
`large.py` (the largest and chunked messages), `auth.py` (a target that requires credentials
refuses a client without them: the `auth` workload, run on its own), `refusal.py` (a prompt
answer to a request
the target may not serve) and `termination.py`. A new theme is a module with its `GROUPS`,
added to the list in `workload.py`.
"""

from __future__ import annotations

from harness.workloads.contract.workload import ContractWorkload

__all__ = ["ContractWorkload"]
