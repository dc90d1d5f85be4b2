"""The probe of a refusal: a request the target may not serve is answered, served or
refused, well within the client's operation timeout, never left to time out.

The request is a pattern subscription, which needs the namespace's topic list
(GET_TOPICS_OF_NAMESPACE); a target without it should refuse it with an error at once.
The probe passes either way, as long as the answer is prompt: it judges how a request is
refused, not whether the feature is there. (Transactions, the classic such request, are
not in the official Python client, so they cannot be probed through it.)"""

from __future__ import annotations

import re
import time

from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.limits import PROMPT_S
from harness.workloads.contract.recording import Group


def refusal(clients: Clients, group: Group) -> None:
    """A pattern subscription to the group's topics (there are none), timed."""
    started = time.monotonic()
    answer = clients.subscribe_pattern(group, re.compile(re.escape(group.topic) + "-.*"))
    took_s = time.monotonic() - started
    group.expect("unsupported-request-prompt", {"prompt": True},
                 {"prompt": took_s < PROMPT_S}, answer=answer, took_s=round(took_s, 3))


GROUPS = (GroupSpec("refusal", ("unsupported-request-prompt",), refusal),)
