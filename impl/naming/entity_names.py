"""Names of clusters, tenants and namespaces, checked as Pulsar checks them (its
`NamedEntity`): letters, digits and `_-=:.` only. Each is one node of a ZooKeeper path
and one segment of an admin URL, so a `/` (which arrives URL-encoded) would file a tenant
as a namespace of another, and a NUL cannot be stored at all."""

from __future__ import annotations

import re

_NAME = re.compile(r"[-=:.\w]+", re.ASCII)


class InvalidName(ValueError):
    """A name Pulsar would not accept (the admin API answers 412)."""


def check_name(kind: str, name: str) -> str:
    if not _NAME.fullmatch(name):
        raise InvalidName(f"invalid {kind} name {name!r:.80}: letters, digits and _-=:. only")
    return name
