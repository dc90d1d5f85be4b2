"""The counts and times the probes are bounded by: every loop stops at one of them, so a
group ends whatever the cluster does."""

from __future__ import annotations

RECEIVER_QUEUE = 10
"""Far fewer than the messages each probe sends: the client must refill it many times."""
QUEUE_MESSAGES = 50
MESSAGES = 20
KEYS = 4
OPERATION_TIMEOUT_S = 5
"""The client's operation timeout: how long a call may go unanswered (a seek on a broker
that ignores SEEK costs this long)."""
SETUP_S = 20.0
"""How long a group's producers and subscribes may take to be accepted."""
POLL_MS = 50
QUIET_S = 1.5
"""A receive loop still short of what it waits for gives up after this long without a
message."""
SETTLE_S = 0.5
"""After a resume or a seek delivered what was expected, how long to watch for more."""
RECEIVE_BOUND_S = 10.0
NACK_DELAY_MS = 200
ACK_TIMEOUT_MS = 10_000
"""The C++ client refuses an acknowledgement timeout under 10 s."""
ACK_TIMEOUT_WAIT_S = 2.5 * ACK_TIMEOUT_MS / 1000
"""The client redelivers within about a timeout and one tick of its tracker."""
CONFIRM_S = 5.0
"""How long an acknowledgement may take to show in the broker's backlog."""
CONFIRM_POLL_S = 0.02
SEEK_GAP_S = 0.05
"""Around the timestamp a seek goes to, so no publish time lies on it."""
DELAY_S = 3.0
"""How long a delayed message is held (`deliver_after`, `deliver_at`)."""
DELAY_SLACK_S = 1.5
"""How much earlier than its time a delayed message may come: Pulsar's tracker lets one
through up to a tick early (`delayedDeliveryTickTimeMillis`, 1 s by default, unless
`isDelayedDeliveryDeliverAtTimeStrict`), and the client's and brokers' clocks may differ
a little."""
PROMPT_S = OPERATION_TIMEOUT_S / 2
"""Well under the operation timeout: an answer slower than this was not a prompt one."""
MAX_MESSAGE_SIZE = 5 * 1024 * 1024
"""Pulsar's default `maxMessageSize`, which the large-message probes assume the target
keeps."""
LARGE_SEND_S = 10.0
"""How long a send of megabytes may take. The client's own send timeout is no bound here:
a broker that drops the connection on every attempt keeps the client resending past it."""
