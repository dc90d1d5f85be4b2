"""Target files load into a Target with the capabilities their controls give; every
mistake is exit code 3 with one line naming file and key; hooks run as templated, bounded,
and fail naming the node; reachability and feature probes answer from the system itself."""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from harness.credentials import admin_headers, present
from harness.targets.external.features import Support, probe_features
from harness.targets.external.file import FEATURES, Feature, TargetFileError, load_target_file
from harness.targets.external.hook_control import HookFailed, PortDropUnsupported
from harness.targets.external.reachability import TargetUnreachable, check_reachable
from harness.targets.external.target import ExternalTarget, NodeNotControlled
from history.errors import BAD_INPUT, ENVIRONMENT

VALID = """
name = "two-brokers"
session_timeout_s = 4
snapshot_timeout_s = 5
hook_timeout_s = 5

[hooks]
kill = "echo kill {node} {pidfile} >> ops.log"
start = "echo start {node} {address} {cluster} {role} >> ops.log"
partition = "echo partition {node} {peer} {peer_address} port={port} >> ops.log"
heal = "echo heal {node} >> ops.log"

[[clusters]]
name = "a"
service_urls = ["pulsar://127.0.0.1:6650", "pulsar://127.0.0.2:6650"]
admin_urls = ["http://127.0.0.1:8080", "http://127.0.0.2:8080"]
metadata_store = "127.0.0.1:2181"

[[clusters.nodes]]
name = "a-broker1"
role = "broker"
address = "127.0.0.1"
control = "hooks"
vars = { pidfile = "/tmp/a b/broker-1.pid" }
session_debug = true

[[clusters.nodes]]
name = "a-broker2"
role = "broker"
address = "127.0.0.2"
control = "hooks"
vars = { pidfile = "/tmp/broker-2.pid" }

[[clusters.nodes]]
name = "a-zk1"
role = "zookeeper"
address = "127.0.0.3"
"""


def write(tmp_path: Path, text: str, name: str = "target.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def ops(tmp_path: Path) -> list[str]:
    log = tmp_path / "ops.log"
    return log.read_text().splitlines() if log.exists() else []


# --- the format ---------------------------------------------------------------------------


def test_a_valid_file_becomes_a_target_with_capabilities_from_its_controls(
        tmp_path: Path) -> None:
    target = ExternalTarget(load_target_file(write(tmp_path, VALID)))
    assert target.file.name == "two-brokers"
    assert (target.session_timeout_s, target.snapshot_timeout_s) == (4.0, 5.0)
    assert target.lookup is None
    (cluster,) = target.clusters
    assert cluster.service_url == "pulsar://127.0.0.1:6650,127.0.0.2:6650"
    assert cluster.metadata_store == "127.0.0.1:2181"
    assert cluster.broker_admin_urls == {"a-broker1": "http://127.0.0.1:8080",
                                         "a-broker2": "http://127.0.0.2:8080"}
    nodes = {node.name: node for node in cluster.nodes}
    assert nodes["a-broker1"].capabilities == {"kill", "partition", "session-debug"}
    assert nodes["a-broker2"].capabilities == {"kill", "partition"}
    assert nodes["a-zk1"].capabilities == frozenset()
    assert nodes["a-zk1"].address == "127.0.0.3"
    assert target.network is not None
    assert target.network.names == ["a-broker1", "a-broker2"]
    with pytest.raises(NodeNotControlled, match="a-zk1 has no process control"):
        target.control("a-zk1")


def test_defaults_and_brokers_implied_by_service_urls(tmp_path: Path) -> None:
    path = write(tmp_path, """
[[clusters]]
name = "x"
service_urls = ["pulsar://10.1.0.5:6650", "pulsar+ssl://broker-b.example:6651"]
admin_urls = ["http://10.1.0.5:8080", "https://broker-b.example"]
""", "minimal.toml")
    target = ExternalTarget(load_target_file(path))
    assert target.file.name == "minimal"
    assert (target.session_timeout_s, target.snapshot_timeout_s) == (30.0, 30.0)
    assert target.metadata_loss_shutdown_s is None  # nothing promised
    assert target.network is None
    assert [(n.name, n.role, n.address, n.capabilities) for n in target.clusters[0].nodes] == [
        ("x-broker1", "broker", "10.1.0.5", frozenset()),
        ("x-broker2", "broker", "broker-b.example", frozenset())]


def _authentication(target: ExternalTarget) -> Support:
    """The feature's support, claimed so that no admin API is asked of the others."""
    claims: dict[Feature, bool] = {f: False for f in FEATURES if f != "authentication"}
    return probe_features(ExternalTarget(dataclasses.replace(target.file, features=claims)))[
        "authentication"]


def test_a_token_file_makes_the_harness_present_it_and_authentication_supported(
        tmp_path: Path) -> None:
    (tmp_path / "superuser.token").write_text("header.payload.signature\n")
    target = ExternalTarget(load_target_file(write(
        tmp_path, 'auth_token_file = "superuser.token"\n' + CLUSTER)))
    try:
        assert target.file.auth_token == "header.payload.signature"
        assert admin_headers() == {"Authorization": "Bearer header.payload.signature"}
        assert target.file.features == {}
        assert _authentication(target).supported
    finally:
        present(None)


def test_without_a_token_authentication_is_unsupported(tmp_path: Path) -> None:
    target = ExternalTarget(load_target_file(write(tmp_path, CLUSTER)))
    support = _authentication(target)
    assert not support.supported and "no auth_token" in support.why
    assert admin_headers() == {}


BROKER = '[[clusters.nodes]]\nname = "a-broker1"\nrole = "broker"\naddress = "10.0.0.5"\n'
CLUSTER = ('[[clusters]]\nname = "a"\nservice_urls = ["pulsar://10.0.0.5:6650"]\n'
           'admin_urls = ["http://10.0.0.5:8080"]\n')

BAD = {
    "unknown top-level key": (
        "colour = 'red'\n" + CLUSTER, "colour: unknown key"),
    "unknown node key": (
        CLUSTER + BROKER + 'colour = "red"\n', "clusters[0].nodes[0].colour: unknown key"),
    "missing service_urls": (
        '[[clusters]]\nname = "a"\nadmin_urls = ["http://h:8080"]\n',
        "clusters[0].service_urls: missing"),
    "missing clusters": ('name = "x"\n', "clusters: missing"),
    "wrong type": (
        "session_timeout_s = 'soon'\n" + CLUSTER, "session_timeout_s: expected a number"),
    "snapshot timeout not a number": (
        "snapshot_timeout_s = true\n" + CLUSTER, "snapshot_timeout_s: expected a number"),
    "shutdown bound not above 0": (
        "metadata_loss_shutdown_s = 0\n" + CLUSTER,
        "metadata_loss_shutdown_s: expected a number above 0"),
    "service url not a list": (
        CLUSTER.replace('["pulsar://10.0.0.5:6650"]', '"pulsar://10.0.0.5:6650"'),
        "clusters[0].service_urls: expected a non-empty list"),
    "service url scheme": (
        CLUSTER.replace("pulsar://10.0.0.5", "http://10.0.0.5"),
        "clusters[0].service_urls[0]: expected a pulsar:// or pulsar+ssl:// URL"),
    "unknown control": (
        CLUSTER + BROKER + 'control = "ssh"\n',
        "clusters[0].nodes[0].control: expected one of docker, hooks, none, got 'ssh'"),
    "unknown role": (
        CLUSTER + BROKER.replace('"broker"', '"proxy"'),
        "clusters[0].nodes[0].role: expected one of broker, bookie, zookeeper"),
    "service_urls count": (
        CLUSTER + BROKER + BROKER.replace("broker1", "broker2"),
        "clusters[0].service_urls: 1 URLs for 2 broker nodes"),
    "admin_urls count": (
        CLUSTER.replace('["http://10.0.0.5:8080"]', '["http://a:1", "http://b:2"]'),
        "clusters[0].admin_urls: 2 URLs for 1 service URLs"),
    "duplicate node name": (
        CLUSTER + BROKER + BROKER.replace('"broker"', '"bookie"'),
        "clusters[0].nodes[1].name: 'a-broker1' is already the name of clusters[0].nodes[0]"),
    "duplicate cluster name": (
        CLUSTER + CLUSTER, "clusters[1].name: 'a' is already the name of clusters[0]"),
    "hook placeholder unknown": (
        '[hooks]\nkill = "kill $(cat {pid_file})"\nstart = "true"\n' + CLUSTER + BROKER
        + 'control = "hooks"\nvars = { pidfile = "/p" }\n',
        "hooks.kill: unknown placeholder {pid_file} for node a-broker1"),
    "peer placeholder outside partition": (
        '[hooks]\nkill = "kill {peer}"\nstart = "true"\n' + CLUSTER + BROKER
        + 'control = "hooks"\n', "hooks.kill: unknown placeholder {peer}"),
    "hook without its partner": (
        '[hooks]\npause = "x"\n' + CLUSTER, "hooks.resume: missing; hooks.pause needs it"),
    "unknown hook": ('[hooks]\nexplode = "x"\n' + CLUSTER, "hooks.explode: unknown key"),
    "hooks node without hooks": (
        CLUSTER + BROKER + 'control = "hooks"\n', "hooks: node a-broker1 has control"),
    "bad template": (
        '[hooks]\nkill = "echo {"\nstart = "true"\n' + CLUSTER, "hooks.kill: not a template"),
    "shell braces": (
        '[hooks]\nkill = "echo ${HOME}"\nstart = "true"\n' + CLUSTER,
        "hooks.kill: unknown placeholder {HOME}; known: address, cluster, node, role "
        "(a literal brace is {{ or }})"),
    "address missing": (
        CLUSTER + BROKER.replace('address = "10.0.0.5"\n', ""),
        "clusters[0].nodes[0].address: missing; a node with control = 'none' needs it"),
    "docker node without container": (
        CLUSTER + BROKER + 'control = "docker"\n',
        "clusters[0].nodes[0].container: a docker node names its container with exactly one"),
    "container on a hooks node": (
        CLUSTER + BROKER + 'container = "x"\n',
        "clusters[0].nodes[0].container: only for control = \"docker\""),
    "compose service without project": (
        CLUSTER + BROKER + 'control = "docker"\nservice = "broker1"\n',
        "clusters[0].nodes[0].service: needs [docker] compose_project"),
    "session_debug on a bookie": (
        CLUSTER + BROKER + BROKER.replace("a-broker1", "a-bookie1").replace(
            '"broker"', '"bookie"') + "session_debug = true\n",
        "clusters[0].nodes[1].session_debug: only a broker"),
    "unknown feature": (
        "features = { teleport = true }\n" + CLUSTER, "features.teleport: unknown key"),
    "feature not a bool": (
        'features = { scalable = "no" }\n' + CLUSTER, "features.scalable: expected true or false"),
    "var shadowing a placeholder": (
        CLUSTER + BROKER + 'vars = { node = "x" }\n', "clusters[0].nodes[0].vars.node"),
    "lookup without admin_url": (
        '[lookup]\nservice_url = "pulsar://l:6650"\n' + CLUSTER, "lookup.admin_url: missing"),
    "not toml": ("clusters = [", "not valid TOML"),
    "both token keys": ('auth_token = "t"\nauth_token_file = "f"\n' + CLUSTER,
                        "auth_token_file: give auth_token or auth_token_file, not both"),
    "token file missing": ('auth_token_file = "absent.token"\n' + CLUSTER,
                           "auth_token_file: cannot read"),
}


@pytest.mark.parametrize("case", BAD)
def test_each_mistake_is_bad_input_naming_file_and_key(case: str, tmp_path: Path) -> None:
    text, expected = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(TargetFileError) as caught:
        load_target_file(path)
    message = str(caught.value)
    assert caught.value.exit_code == BAD_INPUT
    assert re.match(rf"{re.escape(str(path))}(:\d+)?: ", message), message
    assert expected in message, message
    assert "\n" not in message, message


def test_a_missing_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(TargetFileError, match="cannot read") as caught:
        load_target_file(tmp_path / "absent.toml")
    assert caught.value.exit_code == BAD_INPUT


# --- hooks --------------------------------------------------------------------------------


def test_hooks_run_rendered_with_placeholders_and_vars_shell_quoted(tmp_path: Path) -> None:
    target = ExternalTarget(load_target_file(write(tmp_path, VALID)))
    target.control("a-broker1").kill()
    target.control("a-broker2").start()
    assert ops(tmp_path) == ["kill a-broker1 /tmp/a b/broker-1.pid",
                             "start a-broker2 127.0.0.2 a broker"]


def test_partition_runs_once_per_peer_and_heal_once_per_node(tmp_path: Path) -> None:
    target = ExternalTarget(load_target_file(write(tmp_path, VALID)))
    network = target.network
    assert network is not None
    network.drop("a-broker1", ["a-broker2", "a-zk1"])
    network.drop("a-broker2", ["a-broker1"], to_port=6650)
    assert ops(tmp_path) == [
        "partition a-broker1 a-broker2 127.0.0.2 port=",
        "partition a-broker1 a-zk1 127.0.0.3 port=",
        "partition a-broker2 a-broker1 127.0.0.1 port=6650"]
    # A new drop replaces the old one: heal first, then the new peers.
    network.drop("a-broker1", ["a-zk1"])
    network.drop("a-broker1", [])
    network.drop("a-broker2", [])
    assert ops(tmp_path)[3:] == ["heal a-broker1", "partition a-broker1 a-zk1 127.0.0.3 port=",
                                 "heal a-broker1", "heal a-broker2"]
    with pytest.raises(NodeNotControlled, match="a-zk1 cannot be partitioned"):
        network.drop("a-zk1", ["a-broker1"])


def test_a_port_drop_needs_a_port_placeholder(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace(" port={port}", ""))
    network = ExternalTarget(load_target_file(path)).network
    assert network is not None
    with pytest.raises(PortDropUnsupported) as caught:
        network.drop("a-broker1", ["a-broker2"], to_port=6650)
    assert str(caught.value) == (f"{path}: hooks.partition: has no {{port}} placeholder, so it "
                                 f"cannot drop only TCP to port 6650 (asked of node a-broker1)")
    assert caught.value.exit_code == BAD_INPUT
    assert ops(tmp_path) == []


def test_a_failing_hook_names_node_hook_and_output(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace('kill = "echo kill', 'kill = "echo no such pid >&2; '
                                                              'exit 3; echo'))
    with pytest.raises(HookFailed) as caught:
        ExternalTarget(load_target_file(path)).control("a-broker2").kill()
    assert caught.value.exit_code == ENVIRONMENT
    assert str(caught.value).startswith("hook kill of node a-broker2 exited 3: ")
    assert str(caught.value).endswith("\nno such pid")


def test_a_hook_that_hangs_is_killed_with_everything_it_started(tmp_path: Path) -> None:
    text = VALID.replace("hook_timeout_s = 5", "hook_timeout_s = 0.5").replace(
        'kill = "echo kill', 'kill = "echo stuck; sleep 60 | cat; echo')
    target = ExternalTarget(load_target_file(write(tmp_path, text)))
    began = time.monotonic()
    with pytest.raises(HookFailed, match=r"hook kill of node a-broker1 did not finish within "
                                         r"0.5 s") as caught:
        target.control("a-broker1").kill()
    assert time.monotonic() - began < 5
    assert str(caught.value).endswith("\nstuck")


# --- reachability and features --------------------------------------------------------------


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_address_nobody_listens_on_is_an_environment_problem(tmp_path: Path) -> None:
    port = unused_port()
    path = write(tmp_path, f"""
[[clusters]]
name = "a"
service_urls = ["pulsar://127.0.0.1:{port}"]
admin_urls = ["http://127.0.0.1:{port}"]
""")
    with pytest.raises(TargetUnreachable) as caught:
        check_reachable(ExternalTarget(load_target_file(path)), timeout_s=1)
    assert caught.value.exit_code == ENVIRONMENT
    message = str(caught.value)
    assert message.startswith(f"cannot reach a-broker1's service URL pulsar://127.0.0.1:{port}")
    assert f"127.0.0.1:{port}" in message and "\n" not in message


class FakeAdmin(BaseHTTPRequestHandler):
    """Answers GETs from `routes` (path -> JSON), 404 with Pulsar's body otherwise."""

    routes: ClassVar[dict[str, object]] = {}

    def do_GET(self) -> None:
        found = self.path in self.routes
        body = json.dumps(self.routes[self.path] if found else {"reason": "Not Found"})
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def admin_servers() -> Iterator[list[tuple[str, type[FakeAdmin]]]]:
    """Two fake admin endpoints, each with its own routes: (url, handler class)."""
    servers = []
    for _ in range(2):
        handler = type("Admin", (FakeAdmin,), {"routes": {}})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append((server, handler))
    yield [(f"http://127.0.0.1:{server.server_address[1]}", handler)
           for server, handler in servers]
    for server, _ in servers:
        server.shutdown()
        server.server_close()


def two_clusters(tmp_path: Path, admins: list[str], extra: str = "") -> ExternalTarget:
    text = extra + "".join(f"""
[[clusters]]
name = "{name}"
service_urls = ["pulsar://127.0.0.1:6650"]
admin_urls = ["{admin}"]
""" for name, admin in zip("ab", admins))
    return ExternalTarget(load_target_file(write(tmp_path, text)))


def test_probes_answer_from_the_admin_api(
        tmp_path: Path, admin_servers: list[tuple[str, type[FakeAdmin]]]) -> None:
    (url_a, admin_a), (url_b, admin_b) = admin_servers
    common = {"/admin/v2/tenants": ["public"],
              "/admin/v2/namespaces/public": ["public/default"]}
    admin_a.routes = {**common, "/admin/v2/clusters": ["a", "b"],
                      "/admin/v2/scalable/public/default": []}
    found = probe_features(two_clusters(tmp_path, [url_a, url_b]))
    assert {name: support.supported for name, support in found.items()} == {
        "persistent": False, "scalable": True, "geo-replication": False,
        "replicated-subscriptions": False, "migration": False, "authentication": False}
    assert found["geo-replication"].why.endswith("/admin/v2/clusters: 404 Not Found")
    assert found["migration"].why == "needs a [lookup] service in the target file"

    # Clusters that do not know each other yet still replicate: the workload links them.
    admin_b.routes = {**common, "/admin/v2/clusters": ["b"]}
    del admin_a.routes["/admin/v2/scalable/public/default"]
    found = probe_features(two_clusters(tmp_path, [url_a, url_b], extra=(
        'features = { persistent = false }\n[lookup]\nservice_url = "pulsar://127.0.0.1:1"\n'
        f'admin_url = "{url_b}"\n')))
    assert {name: support.supported for name, support in found.items()} == {
        "persistent": False, "scalable": False, "geo-replication": True,
        "replicated-subscriptions": True, "migration": True, "authentication": False}
    assert found["persistent"].why.endswith("features.persistent = false")
    assert "404" in found["scalable"].why and "not served" in found["scalable"].why
