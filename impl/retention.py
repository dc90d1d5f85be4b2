"""Two namespace policies in Pulsar's JSON shapes: retention (`RetentionPolicies`) and
backlog quotas (`BacklogQuota`, one per `BacklogQuotaType`).

Our brokers store and answer them but do not act on them: no ledger is trimmed by age or
size, and no producer is held or refused for a backlog over its quota (docs/broker.md).
They are kept for what a Pulsar user's scripts set and read back, and for the rule Pulsar
applies between them: a backlog quota must stay below the retention it lives in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from impl.json_fields import INT32_MAX, INT64_MAX, whole

QUOTA_TYPES = ("destination_storage", "message_age")
QUOTA_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")
UNLIMITED = -1
MIB = 1024 * 1024


def _whole(value: dict[str, Any], key: str, default: int, high: int = INT32_MAX) -> int:
    """`key`'s number, -1 (unlimited) or more, within its Java type (`int` unless `high`
    says `long`)."""
    return whole(value.get(key, default), key, UNLIMITED, high)


@dataclass(frozen=True)
class RetentionPolicies:
    time_in_minutes: int = 0
    size_in_mb: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"retentionTimeInMinutes": self.time_in_minutes,
                "retentionSizeInMB": self.size_in_mb}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> RetentionPolicies:
        return cls(_whole(value, "retentionTimeInMinutes", 0),
                   _whole(value, "retentionSizeInMB", 0, INT64_MAX))


@dataclass(frozen=True)
class BacklogQuota:
    limit_size: int = UNLIMITED
    """Bytes; -1 for none."""
    limit_time: int = UNLIMITED
    """Seconds; -1 for none."""
    policy: str = "producer_request_hold"

    def to_json(self) -> dict[str, Any]:
        return {"limitSize": self.limit_size, "limitTime": self.limit_time,
                "policy": self.policy}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> BacklogQuota:
        """Pulsar's body; its deprecated `limit` stands for `limitSize`."""
        size = _whole(value, "limitSize", _whole(value, "limit", UNLIMITED, INT64_MAX),
                      INT64_MAX)
        policy = value.get("policy", "producer_request_hold")
        if policy not in QUOTA_POLICIES:
            raise ValueError(f"policy must be one of {', '.join(QUOTA_POLICIES)}, "
                             f"not {policy!r:.40}")
        return cls(size, _whole(value, "limitTime", UNLIMITED), policy)


def quota_type(name: str | None) -> str:
    """The `backlogQuotaType` query parameter; `destination_storage` when absent."""
    if name is None:
        return QUOTA_TYPES[0]
    if name not in QUOTA_TYPES:
        raise ValueError(f"backlogQuotaType must be one of {', '.join(QUOTA_TYPES)}")
    return name


def exceeds_retention(quota: BacklogQuota, retention: RetentionPolicies | None) -> bool:
    """Pulsar refuses a backlog quota at or above the retention limit it would live in
    (and a retention below a quota already set)."""
    if retention is None:
        return False
    by_size = (retention.size_in_mb > 0 and quota.limit_size != UNLIMITED
               and quota.limit_size >= retention.size_in_mb * MIB)
    by_time = (retention.time_in_minutes > 0 and quota.limit_time != UNLIMITED
               and quota.limit_time >= retention.time_in_minutes * 60)
    return by_size or by_time
