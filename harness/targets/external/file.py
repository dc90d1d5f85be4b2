"""Target files: a system starquake did not start, described in TOML, validated on load.

A target file tells starquake where a running system's clusters are and how, if at all,
the nemesis may act on each of its nodes. Loading checks every key and stops at the first
problem with one line naming the file, the line and the key (`x.toml:12:
clusters[0].service_urls: missing`), exit code 3, so a typo never becomes a silently weaker
test.

```toml
name = "reference-in-containers"   # optional, for people; default: the file's stem
session_timeout_s = 4.0            # the brokers' metadata-store session timeout; default 30
snapshot_timeout_s = 30.0          # PIP-33 snapshot timeout (replicatedSubscriptionsSnapshot-
                                   # TimeoutSeconds); default 30, Pulsar's
metadata_loss_shutdown_s = 16.0    # optional: how long a broker cut from the metadata store
                                   # may stay up unable to serve before it shuts down (PIP-57)
hook_timeout_s = 30.0              # how long one hook command may run; default 30
features = { scalable = false }    # optional claims, feature -> bool, overriding probes
auth_token_file = "superuser.token"  # optional: a token (Pulsar's JWT) the harness presents
unprivileged_auth_token = "..."    # optional: a token of a role granted nothing

[docker]                           # optional
compose_project = "myproject"      # lets docker nodes name a compose `service`

[hooks]                            # optional shell command templates
kill = "kill -9 $(cat {pidfile})"
start = "..."
pause = "..."
resume = "..."
partition = "..."                  # once per peer: {node} drops what it receives from {peer}
heal = "..."                       # once per node: everything flows again

[lookup]                           # optional: a lookup service (tenant migration)
service_url = "pulsar://..."
admin_url = "http://..."

[[clusters]]
name = "a"
service_urls = ["pulsar://10.0.0.5:6650"]   # one per broker node, in their order
admin_urls = ["http://10.0.0.5:8080"]       # likewise
metadata_store = "10.0.0.2:2181"            # optional, ZooKeeper host:port,...

[[clusters.nodes]]
name = "a-broker1"
role = "broker"                    # broker | bookie | zookeeper
address = "10.0.0.5"               # optional for docker nodes
control = "docker"                 # docker | hooks | none; default none
container = "sq-x-a-broker1"       # docker only: exactly one of container, service, labels
vars = { pidfile = "/tmp/x/broker-1.pid" }   # extra hook placeholders
session_debug = true               # brokers only: it serves our session debug endpoint
```

Decisions the sketch leaves open, made here:

- **Names.** Node names are unique across the whole file (faults name nodes, not
  clusters), and so are cluster names. `features` names are `persistent`, `scalable`,
  `geo-replication`, `replicated-subscriptions` and `migration`.
- **Brokers and URLs.** `service_urls` and `admin_urls` are required, non-empty and of
  equal length. A cluster that lists broker nodes lists exactly one per service URL, in the
  same order. A cluster that lists no broker node gets one per service URL, named
  `<cluster>-broker<n>` from 1, at the URL's host, with `control = "none"`: enough for a
  run without faults on brokers. Service URLs are `pulsar://host:port` or
  `pulsar+ssl://host:port`, one host each; admin and lookup admin URLs are `http(s)://host[:port]`.
- **Addresses.** `address` (a host name or IPv4 address) is required for `hooks` and `none`
  nodes. A `docker` node may omit it: it is learned from its container, the address on the
  first network the engine lists for the container (for `network_mode: container:X`, X's).
  Partitions drop every address of a docker peer's container and the `address` given.
- **Docker nodes.** Exactly one of `container` (a name or id), `service` (a compose service
  of `[docker].compose_project`, found by compose's labels) or `labels` (a table that must
  match exactly one container, stopped ones included). These keys on a node whose control
  is not `docker` are an error. The engine is the one the usual DOCKER_HOST settings name;
  partitions enter the container's network namespace from this machine, so they need the
  engine here, root, `nsenter` and `iptables`.
- **Hooks.** A node with `control = "hooks"` takes the faults whose hooks are all present:
  kill needs `kill` and `start`, pause needs `pause` and `resume`, partition needs
  `partition` and `heal`. A hook without its partner is an error, and so is a hooks node
  when no pair is complete. Placeholders are plain `{name}`: `node`, `address`, `cluster`,
  `role`, in `partition` also `peer`, `peer_address` and `port` (empty when the drop is of
  all traffic), and any key of the node's `vars` (string values; a key may not shadow a
  standard placeholder). A placeholder that is neither standard nor in the `vars` of every
  hooks node is an error (while no node uses hooks: in the `vars` of no node). Every value
  is substituted shell-quoted, so write `{pidfile}`, not `'{pidfile}'`; a literal brace is
  `{{` or `}}` (shell's `${HOME}` is `${{HOME}}`). Hooks run with `sh -c` in the target
  file's directory, each bounded by `hook_timeout_s`; a failure or overrun is exit code 4.
  A drop that replaces one in force runs `heal` first, then `partition` per peer; a drop
  of only one port (the stall-port fault) needs `{port}` in the partition hook.
- **Partitions of docker nodes** use our iptables chain in the container's namespace; a
  drop asked of a killed container is applied when it starts again, and healing removes
  the chain and its jump, nothing else (harness/targets/external/docker_control.py).
- **Credentials.** `auth_token` (the token itself) or `auth_token_file` (a file holding
  it, relative to the target file's directory), not both: the harness's clients connect
  with it (`pulsar.AuthenticationToken`) and its admin requests carry it as
  `Authorization: Bearer`. Give a superuser's: the workloads create tenants and
  namespaces. Either key also makes the `authentication` feature supported.
  `unprivileged_auth_token`, a token of a role granted nothing, lets its probes show that
  such a role is refused.
- **Session debug.** No node of a target file has the `session-debug` capability unless it
  is a broker with `session_debug = true`.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from harness.target import CAPABILITIES, ROLES, Capability, LookupEndpoint, Role
from history.errors import BadInput
from history.toml_input import TomlInput

Feature = Literal["persistent", "scalable", "geo-replication", "replicated-subscriptions",
                  "migration", "authentication"]
FEATURES: tuple[Feature, ...] = ("persistent", "scalable", "geo-replication",
                                 "replicated-subscriptions", "migration", "authentication")
Control = Literal["docker", "hooks", "none"]
CONTROLS: tuple[Control, ...] = ("docker", "hooks", "none")

HOOK_PAIRS: dict[Capability, tuple[str, ...]] = {
    name: spec.hooks for name, spec in CAPABILITIES.items() if spec.hooks}
"""Which hooks a capability needs (harness.target.CAPABILITIES): the fault, and what ends it."""
HOOKS = tuple(hook for pair in HOOK_PAIRS.values() for hook in pair)
NODE_PLACEHOLDERS = ("node", "address", "cluster", "role")
PEER_PLACEHOLDERS = ("peer", "peer_address", "port")
"""Only in the `partition` hook."""

DEFAULT_SESSION_TIMEOUT_S = 30.0
DEFAULT_SNAPSHOT_TIMEOUT_S = 30.0
"""Pulsar's `replicatedSubscriptionsSnapshotTimeoutSeconds`."""
DEFAULT_HOOK_TIMEOUT_S = 30.0
SERVICE_SCHEMES = ("pulsar", "pulsar+ssl")
DEFAULT_PORTS = {"pulsar": 6650, "pulsar+ssl": 6651, "http": 80, "https": 443}
ADMIN_SCHEMES = ("http", "https")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class TargetFileError(BadInput):
    """A target file that does not follow the format; one line naming file and key."""


@dataclass(frozen=True)
class ContainerRef:
    """How a docker-controlled node finds its container: exactly one of the three."""

    container: str | None = None
    service: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        if self.container is not None:
            return f"container {self.container!r}"
        if self.service is not None:
            return f"the container of compose service {self.service!r}"
        return "the container labelled " + ",".join(f"{k}={v}" for k, v in self.labels.items())


@dataclass(frozen=True)
class NodeEntry:
    """One `[[clusters.nodes]]` table (or a broker implied by a service URL)."""

    name: str
    role: Role
    cluster: str
    address: str | None
    """None only for docker nodes: learned from the container."""
    control: Control = "none"
    container: ContainerRef | None = None
    vars: Mapping[str, str] = field(default_factory=dict)
    session_debug: bool = False


@dataclass(frozen=True)
class ClusterEntry:
    name: str
    service_urls: tuple[str, ...]
    admin_urls: tuple[str, ...]
    metadata_store: str | None
    nodes: tuple[NodeEntry, ...]


@dataclass(frozen=True)
class TargetFile:
    """A validated target file."""

    path: Path
    name: str
    clusters: tuple[ClusterEntry, ...]
    session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S
    snapshot_timeout_s: float = DEFAULT_SNAPSHOT_TIMEOUT_S
    metadata_loss_shutdown_s: float | None = None
    """What the Target promises (`Target.metadata_loss_shutdown_s`); None, nothing."""
    hook_timeout_s: float = DEFAULT_HOOK_TIMEOUT_S
    features: Mapping[Feature, bool] = field(default_factory=dict)
    compose_project: str | None = None
    hooks: Mapping[str, str] = field(default_factory=dict)
    lookup: LookupEndpoint | None = None
    auth_token: str | None = None
    """What the harness presents as its credentials (`auth_token` or `auth_token_file`)."""
    unprivileged_auth_token: str | None = None

    @property
    def nodes(self) -> tuple[NodeEntry, ...]:
        return tuple(node for cluster in self.clusters for node in cluster.nodes)

    def node(self, name: str) -> NodeEntry:
        """The node called `name`; KeyError if there is none."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    @property
    def hook_capabilities(self) -> frozenset[Capability]:
        """What a hooks-controlled node can take: the capabilities whose hooks are present."""
        return frozenset(capability for capability, pair in HOOK_PAIRS.items()
                         if all(hook in self.hooks for hook in pair))


def load_target_file(path: Path) -> TargetFile:
    """Read and validate a target file; raises `TargetFileError` naming file, line and key
    (history/toml_input.py)."""
    toml = TomlInput(path, TargetFileError)
    return _Loader(toml).load(toml.data)


def host_port(url: str) -> tuple[str, int]:
    """Where a service or admin URL connects to, with the scheme's default port (Pulsar's
    6650 and 6651, HTTP's 80 and 443); ValueError when it names no host or port."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError("no host")
    port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    if port is None:
        raise ValueError(f"no port, and none is usual for {parts.scheme!r}")
    return parts.hostname, port


def template_fields(template: str) -> Iterator[str]:
    """The placeholder names of a hook template; ValueError when it is not one."""
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not _IDENTIFIER.match(name) or spec or conversion:
            raise ValueError(f"placeholders are plain {{name}}, got {{{name}"
                             f"{'!' + conversion if conversion else ''}"
                             f"{':' + spec if spec else ''}}}")
        yield name


class _Loader:
    """The target file's schema over the checks of history/toml_input.py."""

    def __init__(self, toml: TomlInput) -> None:
        self.toml = toml
        self.path = toml.path

    # --- values of this format (the rest are history/toml_input.py's) ------------------------

    def string(self, key: str, value: Any) -> str:
        return self.toml.string(key, value, non_empty=True)

    def number(self, key: str, value: Any) -> float:
        return self.toml.number(key, value, above=True)

    def strings(self, key: str, value: Any) -> dict[str, str]:
        """A table of strings (`vars`, `labels`)."""
        if not isinstance(value, dict):
            raise self.toml.expected(key, "a table of strings", value)
        return {name: self.string(f"{key}.{name}", item) for name, item in value.items()}

    def url(self, key: str, value: Any, schemes: tuple[str, ...]) -> str:
        url = self.string(key, value)
        try:
            parts = urlsplit(url)
            host_port(url)
        except ValueError as exc:
            raise self.toml.error(key, f"not a URL ({exc}): {url!r}") from None
        if parts.scheme not in schemes or "," in parts.netloc:
            raise self.toml.expected(key, f"a {' or '.join(s + '://' for s in schemes)} URL "
                                          f"with one host", url)
        return url

    def urls(self, key: str, value: Any, schemes: tuple[str, ...]) -> tuple[str, ...]:
        return self.toml.items(key, value, lambda k, v: self.url(k, v, schemes),
                               non_empty=True, what="a non-empty list of URLs")

    # --- the file -------------------------------------------------------------------------

    def load(self, data: dict[str, Any]) -> TargetFile:
        toml = self.toml
        toml.table("", data, ("name", "session_timeout_s", "snapshot_timeout_s",
                              "metadata_loss_shutdown_s", "hook_timeout_s", "features",
                              "docker", "hooks", "lookup", "clusters", "auth_token",
                              "auth_token_file", "unprivileged_auth_token"))
        docker = toml.table("docker", data.get("docker", {}), ("compose_project",))
        compose_project = toml.optional(docker, "compose_project", "docker", self.string, None)
        hooks = {name: self.string(f"hooks.{name}", template) for name, template
                 in toml.table("hooks", data.get("hooks", {}), HOOKS).items()}
        for group in HOOK_PAIRS.values():
            given = [hook for hook in group if hook in hooks]
            for absent in (hook for hook in group if given and hook not in hooks):
                raise toml.error(f"hooks.{absent}", f"missing; hooks.{given[0]} needs it")
        clusters = self.clusters(data, compose_project)
        target = TargetFile(
            path=self.path,
            name=toml.optional(data, "name", "", self.string, self.path.stem),
            clusters=clusters,
            session_timeout_s=toml.optional(data, "session_timeout_s", "", self.number,
                                            DEFAULT_SESSION_TIMEOUT_S),
            snapshot_timeout_s=toml.optional(data, "snapshot_timeout_s", "", self.number,
                                             DEFAULT_SNAPSHOT_TIMEOUT_S),
            metadata_loss_shutdown_s=toml.optional(data, "metadata_loss_shutdown_s", "",
                                                   self.number, None),
            hook_timeout_s=toml.optional(data, "hook_timeout_s", "", self.number,
                                         DEFAULT_HOOK_TIMEOUT_S),
            features=self.features(data.get("features", {})),
            compose_project=compose_project,
            hooks=hooks,
            lookup=self.lookup(data),
            auth_token=self.auth_token(data),
            unprivileged_auth_token=toml.optional(data, "unprivileged_auth_token", "",
                                                  self.string, None))
        self.check_hooks(target)
        return target

    def auth_token(self, data: dict[str, Any]) -> str | None:
        if "auth_token" in data and "auth_token_file" in data:
            raise self.toml.error("auth_token_file",
                                  "give auth_token or auth_token_file, not both")
        if "auth_token" in data:
            return self.string("auth_token", data["auth_token"]).strip()
        if "auth_token_file" not in data:
            return None
        path = self.path.parent / self.string("auth_token_file", data["auth_token_file"])
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise self.toml.error("auth_token_file", f"cannot read {path}: {exc}") from None

    def features(self, raw: Any) -> dict[Feature, bool]:
        table = self.toml.table("features", raw, FEATURES)
        return {cast(Feature, name): self.toml.boolean(f"features.{name}", value)
                for name, value in table.items()}

    def lookup(self, data: dict[str, Any]) -> LookupEndpoint | None:
        if "lookup" not in data:
            return None
        table = self.toml.table("lookup", data["lookup"], ("service_url", "admin_url"))
        return LookupEndpoint(
            self.toml.required(table, "service_url", "lookup",
                               lambda key, value: self.url(key, value, SERVICE_SCHEMES)),
            self.toml.required(table, "admin_url", "lookup",
                               lambda key, value: self.url(key, value, ADMIN_SCHEMES)))

    def clusters(self, data: dict[str, Any], compose_project: str | None
                 ) -> tuple[ClusterEntry, ...]:
        raw = self.toml.required(data, "clusters", "", lambda key, value: value)
        if not isinstance(raw, list) or not raw:
            raise self.toml.expected("clusters", "one or more [[clusters]] tables", raw)
        clusters = tuple(self.cluster(f"clusters[{n}]", table, compose_project)
                         for n, table in enumerate(raw))
        self.unique("name", [(f"clusters[{n}]", c.name) for n, c in enumerate(clusters)])
        self.unique("name", [(f"clusters[{n}].nodes[{m}]", node.name)
                             for n, cluster in enumerate(clusters)
                             for m, node in enumerate(cluster.nodes)])
        return clusters

    def unique(self, field_name: str, keyed: list[tuple[str, str]]) -> None:
        seen: dict[str, str] = {}
        for key, value in keyed:
            if value in seen:
                raise self.toml.error(f"{key}.{field_name}",
                                      f"{value!r} is already the name of {seen[value]}")
            seen[value] = key

    def cluster(self, key: str, raw: Any, compose_project: str | None) -> ClusterEntry:
        toml = self.toml
        table = toml.table(key, raw, ("name", "service_urls", "admin_urls", "metadata_store",
                                      "nodes"))
        name = toml.required(table, "name", key, self.string)
        service_urls = toml.required(table, "service_urls", key,
                                     lambda k, v: self.urls(k, v, SERVICE_SCHEMES))
        admin_urls = toml.required(table, "admin_urls", key,
                                   lambda k, v: self.urls(k, v, ADMIN_SCHEMES))
        if len(admin_urls) != len(service_urls):
            raise toml.error(f"{key}.admin_urls", f"{len(admin_urls)} URLs for "
                             f"{len(service_urls)} service URLs; give one per broker")
        raw_nodes = table.get("nodes", [])
        if not isinstance(raw_nodes, list):
            raise toml.expected(f"{key}.nodes", "[[clusters.nodes]] tables", raw_nodes)
        nodes = tuple(self.node(f"{key}.nodes[{n}]", item, name, compose_project)
                      for n, item in enumerate(raw_nodes))
        brokers = [node for node in nodes if node.role == "broker"]
        if not brokers:
            nodes += tuple(NodeEntry(f"{name}-broker{n}", "broker", name,
                                     urlsplit(url).hostname)
                           for n, url in enumerate(service_urls, start=1))
        elif len(brokers) != len(service_urls):
            raise toml.error(f"{key}.service_urls", f"{len(service_urls)} URLs for "
                             f"{len(brokers)} broker nodes; give one per broker, in their order")
        return ClusterEntry(name, service_urls, admin_urls,
                            toml.optional(table, "metadata_store", key, self.string, None),
                            nodes)

    def node(self, key: str, raw: Any, cluster: str, compose_project: str | None) -> NodeEntry:
        toml = self.toml
        table = toml.table(key, raw, ("name", "role", "address", "control", "container",
                                      "service", "labels", "vars", "session_debug"))
        control: Control = toml.optional(table, "control", key,
                                         lambda k, v: toml.choice(k, v, CONTROLS), "none")
        node = NodeEntry(
            name=toml.required(table, "name", key, self.string),
            role=toml.required(table, "role", key, lambda k, v: toml.choice(k, v, ROLES)),
            cluster=cluster,
            address=toml.optional(table, "address", key, self.string, None),
            control=control,
            vars=toml.optional(table, "vars", key, self.strings, {}),
            session_debug=toml.optional(table, "session_debug", key, toml.boolean, False))
        if node.address is None and control != "docker":
            raise toml.error(f"{key}.address", f"missing; a node with control = "
                                               f"{control!r} needs it")
        if node.session_debug and node.role != "broker":
            raise toml.error(f"{key}.session_debug", "only a broker serves the session "
                                                     "debug endpoint")
        for name in node.vars:
            if not _IDENTIFIER.match(name) or name in NODE_PLACEHOLDERS + PEER_PLACEHOLDERS:
                raise toml.error(f"{key}.vars.{name}", "not a name a placeholder can have, "
                                 "or a standard placeholder's")
        return replace(node, container=self.container_ref(key, table, control,
                                                          compose_project))

    def container_ref(self, key: str, table: dict[str, Any], control: Control,
                      compose_project: str | None) -> ContainerRef | None:
        toml = self.toml
        given = [name for name in ("container", "service", "labels") if name in table]
        if control != "docker":
            if given:
                raise toml.error(f"{key}.{given[0]}", f"only for control = \"docker\", "
                                                      f"this node's is {control!r}")
            return None
        if len(given) != 1:
            raise toml.error(f"{key}.container", "a docker node names its container with "
                             f"exactly one of container, service, labels; got "
                             f"{', '.join(given) or 'none'}")
        if "service" in table and compose_project is None:
            raise toml.error(f"{key}.service", "needs [docker] compose_project")
        ref = ContainerRef(
            container=toml.optional(table, "container", key, self.string, None),
            service=toml.optional(table, "service", key, self.string, None),
            labels=toml.optional(table, "labels", key, self.strings, {}))
        if "labels" in table and not ref.labels:
            raise toml.expected(f"{key}.labels", "at least one label", table["labels"])
        return ref

    def check_hooks(self, target: TargetFile) -> None:
        """Every placeholder of every hook means something for every node that runs it,
        and a hooks node takes at least one fault."""
        toml = self.toml
        users = [node for node in target.nodes if node.control == "hooks"]
        if users and not target.hook_capabilities:
            pairs = ", ".join("+".join(pair) for pair in HOOK_PAIRS.values())
            raise toml.error("hooks", f"node {users[0].name} has control = \"hooks\", but no "
                                      f"hook pair is complete ({pairs})")
        for hook, template in target.hooks.items():
            standard = NODE_PLACEHOLDERS + (PEER_PLACEHOLDERS if hook == "partition" else ())
            try:
                fields = set(template_fields(template))
            except ValueError as exc:
                raise toml.error(f"hooks.{hook}", f"not a template: {exc}; write {{{{ and "
                                                  f"}}}} for literal braces") from None
            # Hooks nobody runs yet are held to the vars some node has.
            groups = [(f" for node {node.name}", set(node.vars)) for node in users] or [
                ("", {name for node in target.nodes for name in node.vars})]
            for who, names in groups:
                unknown = sorted(fields - set(standard) - names)
                if unknown:
                    raise toml.error(f"hooks.{hook}", f"unknown placeholder {{{unknown[0]}}}"
                                     f"{who}; known: {', '.join(sorted({*standard, *names}))} "
                                     f"(a literal brace is {{{{ or }}}})")
