"""Before a run on a system we did not start: can we reach all of it?

A typo'd address, a stopped engine, a removed container or a firewall should end a run
before it starts, with exit code 4 and the one address at fault, not as a history full of
timeouts. Every docker node's container must exist (a missing one is a system that cannot
be reached, not a bad file: containers come and go), every broker's service URL must
accept a TCP connection and its admin URL answer HTTP (any status: an answer is all this
asks), and so must the lookup service's, each within a few seconds. All are tried at once;
the first failure in file order is reported.
"""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from harness.targets.external.docker_control import ContainerControl, ContainerNotFound
from harness.targets.external.file import host_port
from harness.targets.external.target import ExternalTarget
from history.errors import EnvironmentProblem

TIMEOUT_S = 3.0
MAX_PARALLEL = 16
ADMIN_PROBE_PATH = "/admin/v2/clusters"


class TargetUnreachable(EnvironmentProblem):
    """Part of a target cannot be reached; the message names the address."""


def check_reachable(target: ExternalTarget, timeout_s: float = TIMEOUT_S) -> None:
    """Raise TargetUnreachable naming the first container, service URL or admin URL that
    does not answer within `timeout_s`."""
    _first_problem([partial(_container, control) for control in target.containers().values()])
    checks: list[Callable[[], str | None]] = []
    for cluster in target.clusters:  # hosts naming containers resolved: they exist
        for node, service, admin in zip(cluster.of_role("broker"), cluster.service_urls,
                                        cluster.admin_urls):
            checks += [partial(_tcp, f"{node.name}'s service URL", service, timeout_s),
                       partial(_http, f"{node.name}'s admin URL", admin, timeout_s)]
    if target.lookup is not None:
        checks += [partial(_tcp, "the lookup service URL", target.lookup.service_url, timeout_s),
                   partial(_http, "the lookup admin URL", target.lookup.admin_url, timeout_s)]
    _first_problem(checks)


def _first_problem(checks: list[Callable[[], str | None]]) -> None:
    """Run `checks` at once; raise TargetUnreachable with the first problem in order."""
    with ThreadPoolExecutor(max(1, min(MAX_PARALLEL, len(checks)))) as pool:
        problems = list(pool.map(lambda check: check(), checks))
    first = next((problem for problem in problems if problem), None)
    if first:
        raise TargetUnreachable(first)


def _container(control: ContainerControl) -> str | None:
    try:
        control.container()
    except ContainerNotFound as exc:
        return str(exc)
    return None


def _tcp(what: str, url: str, timeout_s: float) -> str | None:
    host, port = host_port(url)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return (f"cannot reach {what} {url}: no TCP connection to {host}:{port} within "
                f"{timeout_s:g} s ({exc.strerror or exc})")


def _http(what: str, url: str, timeout_s: float) -> str | None:
    try:
        with urllib.request.urlopen(url.rstrip("/") + ADMIN_PROBE_PATH, timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None  # an error status is an answer
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return (f"cannot reach {what} {url}: no HTTP answer to GET {ADMIN_PROBE_PATH} within "
                f"{timeout_s:g} s ({getattr(reason, 'strerror', None) or reason})")
