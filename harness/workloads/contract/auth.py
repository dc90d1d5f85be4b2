"""The probes of authentication, for a target that says it requires credentials (a
scenario's `auth = "token"`, a target file's `auth_token`): the harness's own token is
let in, while a client with no token, or with a forged one, gets no producer, an admin
request without one is answered 401, and a role granted nothing is refused
AuthorizationError.

Each refused attempt is a client of its own with a short operation timeout: the official
client takes a refused CONNECT for a dropped connection and retries until then, so what is
observed is only that it never got a producer. The harness's own token, accepted first,
shows that the refusals are not just an unreachable cluster.
"""

from __future__ import annotations

from typing import Any

import pulsar

from harness.admin_api import AdminError, admin_request
from harness.credentials import Credentials, presented
from harness.workloads.client_log import client_logger
from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.limits import PROMPT_S
from harness.workloads.contract.recording import CouldNotRun, Group, observed
from harness.workloads.official_client import close_client

REFUSED = {"refused": True}
UNAUTHORIZED = 401
TENANTS_PATH = "/admin/v2/tenants"


def _producer_as(clients: Clients, group: Group, token: str | None) -> dict[str, Any]:
    """A producer on the group's topic by a client of its own presenting `token`: the
    answer as an observation."""
    c = clients.context
    client = pulsar.Client(
        c.service_url, operation_timeout_seconds=max(1, round(PROMPT_S)),
        authentication=None if token is None else pulsar.AuthenticationToken(token),
        logger=client_logger(c.client_log))
    try:
        answer: dict[str, Any] = observed(
            lambda: {"accepted": bool(client.create_producer(group.topic))})
        return answer
    finally:
        close_client(client)


def _refused(answer: dict[str, Any]) -> dict[str, bool]:
    return {"refused": "error" in answer}


FORGED_SIGNATURE = "A" * 43
"""An HS256 signature's length in base64url, all zero bytes."""


def _forged(token: str) -> str:
    """The token with its signature replaced: the same role claimed without the key."""
    header, payload, _signature = token.rsplit(".", 2)
    return f"{header}.{payload}.{FORGED_SIGNATURE}"


def _admin_status_without_token(clients: Clients) -> int:
    try:
        admin_request(clients.context.admin_urls[0], "GET", TENANTS_PATH,
                      authenticated=False)
    except AdminError as exc:
        return exc.status
    return 200


def authentication(clients: Clients, group: Group) -> None:
    credentials: Credentials | None = presented()
    if credentials is None:
        raise CouldNotRun("the target says it needs no credentials; nothing to probe")
    group.expect("token-admits", {"accepted": True},
                 observed(lambda: clients.accepted_producer(group)))
    no_token = _producer_as(clients, group, None)
    group.expect("no-token-refused", REFUSED, _refused(no_token), answer=no_token)
    forged = _producer_as(clients, group, _forged(credentials.token))
    group.expect("forged-token-refused", REFUSED, _refused(forged), answer=forged)
    group.expect("admin-without-token-refused", {"status": UNAUTHORIZED},
                 {"status": _admin_status_without_token(clients)})
    if credentials.unprivileged is None:
        group.undecided("no-unprivileged-token", "the harness has no token of a role "
                                                 "granted nothing on this target")
        return
    group.expect("unprivileged-cannot-produce", {"error": "AuthorizationError"},
                 _producer_as(clients, group, credentials.unprivileged))


GROUPS = (GroupSpec("authentication", (
    "token-admits", "no-token-refused", "forged-token-refused",
    "admin-without-token-refused", "unprivileged-cannot-produce"), authentication),)
