"""The broker's command line as data: one dataclass, validated at the edge."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import NoReturn

from impl.broker.dedup_policy import DEFAULT_SNAPSHOT_INTERVAL
from impl.broker.limits import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_LIMITS,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_IP,
    DEFAULT_MAX_PENDING_PUBLISH_REQUESTS,
    DEFAULT_MAX_UNCONNECTED_PER_IP,
    ConnectionLimits,
)
from impl.mutants import Mutants, UnknownMutant
from impl.naming.bundles import MAX_NAMESPACE_BUNDLES
from impl.ownership.session_policy import SessionExpiredPolicy
from impl.replication.config import (
    GeoReplicationConfig,
    InvalidReplicationConfig,
    ReplicatedSubscriptionsConfig,
)
from impl.security.config import OPEN, InvalidSecurityConfig, SecurityConfig, parse_roles


@dataclass(frozen=True)
class BrokerConfig:
    cluster: str
    zk: str
    """ZooKeeper connect string, optionally with a chroot."""
    port: int
    admin_port: int
    session_expired_policy: SessionExpiredPolicy
    advertised_host: str = "127.0.0.1"
    session_timeout_ms: int = 30_000
    session_reconnect_retries: int = 3
    mutants: Mutants = Mutants()
    bind_host: str = "127.0.0.1"
    """Loopback unless told: a broker started by hand is not reachable from the network.
    Containers bind 0.0.0.0 (harness/targets/docker/node_specs.py)."""
    replication: GeoReplicationConfig = GeoReplicationConfig()
    scalable_grace_period: float = 60.0
    """Seconds a disconnected scalable-topic stream consumer keeps its session."""
    controller_step_pause_ms: int = 0
    """A fault control, 0 outside tests: see `ControllerConfig.step_pause`."""
    deduplication_enabled: bool = False
    """Pulsar's `brokerDeduplicationEnabled`: deduplication where no policy says."""
    deduplication_entries_interval: int = DEFAULT_SNAPSHOT_INTERVAL
    """Pulsar's `brokerDeduplicationEntriesInterval`: entries between two snapshots."""
    security: SecurityConfig = OPEN
    metadata_digest_file: str | None = None
    """A `user:password` file: ZooKeeper digest authentication, and nodes only that user
    may read or change (docs/security.md)."""
    limits: ConnectionLimits = DEFAULT_LIMITS
    max_namespace_bundles: int = MAX_NAMESPACE_BUNDLES
    """Pulsar's `loadBalancerNamespaceMaximumBundles`: bundles a new namespace may ask for."""

    @property
    def session_timeout(self) -> float:
        return self.session_timeout_ms / 1000

    @property
    def broker_url(self) -> str:
        scheme = "pulsar+ssl" if self.security.tls else "pulsar"
        return f"{scheme}://{self.advertised_host}:{self.port}"

    @property
    def web_url(self) -> str:
        scheme = "https" if self.security.tls else "http"
        return f"{scheme}://{self.advertised_host}:{self.admin_port}"


USAGE_EXIT_CODE = 3
"""The project's exit code for bad input or usage (argparse's own would be 2, which reads
as "unknown" here)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE_EXIT_CODE, f"{self.prog}: error: {message}\n")


def parse_args(argv: list[str] | None = None) -> BrokerConfig:
    parser = _Parser(prog="python -m impl.broker", description="starquake's reference broker")
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--zk", required=True, help="HOST:PORT[,...][/chroot]")
    parser.add_argument("--port", type=int, required=True, help="binary protocol port")
    parser.add_argument("--admin-port", type=int, required=True, help="admin HTTP port")
    parser.add_argument("--advertised-host", default="127.0.0.1")
    parser.add_argument("--bind-host", default=BrokerConfig.bind_host,
                        help="the address both ports listen on (0.0.0.0: every interface)")
    parser.add_argument("--session-timeout-ms", type=int, default=30_000)
    parser.add_argument("--session-expired-policy", required=True,
                        choices=[p.value for p in SessionExpiredPolicy])
    parser.add_argument("--session-reconnect-retries", type=int, default=3)
    parser.add_argument("--mutants", default="", help="comma-separated mutant switches")
    parser.add_argument("--scalable-grace-period-seconds", type=float, default=60.0,
                        help="PIP-468 consumer session grace period (scalable topics)")
    parser.add_argument("--controller-step-pause-ms", type=_bound, default=0,
                        help="a fault control for tests: the scalable-topic controller "
                             "waits this long between terminating a change's parents and "
                             "writing the layout, widening the window a leader's failure "
                             "can fall in (0: no pause)")
    parser.add_argument("--disable-replicated-subscriptions", action="store_true",
                        help="ignore replicate_subscription_state (Pulsar's "
                             "enableReplicatedSubscriptions=false)")
    parser.add_argument("--replicated-subscriptions-snapshot-frequency-ms", type=int,
                        default=ReplicatedSubscriptionsConfig.snapshot_frequency_ms)
    parser.add_argument("--replicated-subscriptions-snapshot-timeout-seconds", type=float,
                        default=ReplicatedSubscriptionsConfig.snapshot_timeout_s,
                        help="a snapshot still unanswered this long is abandoned (Pulsar's "
                             "replicatedSubscriptionsSnapshotTimeoutSeconds)")
    parser.add_argument("--replication-keepalive-seconds", type=float,
                        default=GeoReplicationConfig.keepalive_s,
                        help="a replicator gives up a silent remote connection after "
                             "twice this (Pulsar's keepAliveIntervalSeconds)")
    parser.add_argument("--replicate-individually-deleted", action="store_true",
                        help="our extension (document 003): replicated subscriptions also "
                             "carry messages acknowledged out of order")
    parser.add_argument("--broker-deduplication-enabled", action="store_true",
                        help="deduplicate on topics whose policies do not say (Pulsar's "
                             "brokerDeduplicationEnabled)")
    parser.add_argument("--deduplication-entries-interval", type=int,
                        default=DEFAULT_SNAPSHOT_INTERVAL,
                        help="entries between two snapshots of a topic's sequence ids "
                             "(Pulsar's brokerDeduplicationEntriesInterval)")
    _add_security_arguments(parser)
    parser.add_argument("--broker-max-connections", type=_bound,
                        default=DEFAULT_MAX_CONNECTIONS,
                        help="open connections at most, 0 for no bound (Pulsar's "
                             "brokerMaxConnections)")
    parser.add_argument("--broker-max-connections-per-ip", type=_bound,
                        default=DEFAULT_MAX_CONNECTIONS_PER_IP,
                        help="open connections from one address at most, 0 for no bound "
                             "(Pulsar's brokerMaxConnectionsPerIp)")
    parser.add_argument("--broker-max-unconnected-per-ip", type=_bound,
                        default=DEFAULT_MAX_UNCONNECTED_PER_IP,
                        help="connections from one address without an accepted CONNECT at "
                             "most (one more closes the oldest), 0 for no bound")
    parser.add_argument("--connect-timeout-seconds", type=_positive_seconds,
                        default=DEFAULT_CONNECT_TIMEOUT_S,
                        help="close a connection whose CONNECT is not accepted this soon")
    parser.add_argument("--max-pending-publish-requests-per-connection", type=_positive,
                        default=DEFAULT_MAX_PENDING_PUBLISH_REQUESTS,
                        help="unanswered SENDs of one connection before the broker stops "
                             "reading from it (Pulsar's maxPendingPublishRequestsPerConnection)")
    parser.add_argument("--max-namespace-bundles", type=_positive,
                        default=MAX_NAMESPACE_BUNDLES,
                        help="bundles a new namespace may ask for at most (Pulsar's "
                             "loadBalancerNamespaceMaximumBundles)")
    args = parser.parse_args(argv)
    try:
        mutants = Mutants.parse(args.mutants)
        replication = GeoReplicationConfig(
            enable_replicated_subscriptions=not args.disable_replicated_subscriptions,
            keepalive_s=args.replication_keepalive_seconds,
            subscriptions=ReplicatedSubscriptionsConfig(
                snapshot_frequency_ms=args.replicated_subscriptions_snapshot_frequency_ms,
                snapshot_timeout_s=args.replicated_subscriptions_snapshot_timeout_seconds,
                replicate_individually_deleted=args.replicate_individually_deleted))
        security = SecurityConfig(
            authentication_enabled=args.authentication_enabled,
            authorization_enabled=args.authorization_enabled,
            token_secret_key=args.token_secret_key,
            superuser_roles=parse_roles(args.superuser_roles),
            debug_endpoints=args.debug_endpoints,
            tls_cert_file=args.tls_cert_file, tls_key_file=args.tls_key_file,
            broker_client_token_file=args.broker_client_token_file)
    except (UnknownMutant, InvalidReplicationConfig, InvalidSecurityConfig) as exc:
        parser.error(str(exc))
    return BrokerConfig(
        cluster=args.cluster, zk=args.zk, port=args.port, admin_port=args.admin_port,
        session_expired_policy=SessionExpiredPolicy(args.session_expired_policy),
        advertised_host=args.advertised_host, session_timeout_ms=args.session_timeout_ms,
        session_reconnect_retries=args.session_reconnect_retries, mutants=mutants,
        replication=replication, scalable_grace_period=args.scalable_grace_period_seconds,
        controller_step_pause_ms=args.controller_step_pause_ms,
        deduplication_enabled=args.broker_deduplication_enabled,
        deduplication_entries_interval=args.deduplication_entries_interval,
        bind_host=args.bind_host, security=security,
        metadata_digest_file=args.metadata_digest_file,
        limits=ConnectionLimits(
            max_connections=args.broker_max_connections,
            max_connections_per_ip=args.broker_max_connections_per_ip,
            max_pending_publish_requests=args.max_pending_publish_requests_per_connection,
            max_unconnected_per_ip=args.broker_max_unconnected_per_ip,
            connect_timeout_s=args.connect_timeout_seconds),
        max_namespace_bundles=args.max_namespace_bundles)


def _add_security_arguments(parser: argparse.ArgumentParser) -> None:
    """docs/security.md: all off unless given."""
    parser.add_argument("--authentication-enabled", action="store_true",
                        help="CONNECT and admin requests must carry a valid token")
    parser.add_argument("--authorization-enabled", action="store_true",
                        help="a role may do only what it was granted (needs authentication)")
    parser.add_argument("--token-secret-key", default=None,
                        help="file with the HS256 key tokens are signed with")
    parser.add_argument("--superuser-roles", default="",
                        help="comma-separated roles that may do everything")
    parser.add_argument("--debug-endpoints", action="store_true",
                        help="serve /admin/v2/debug/... (hands out the ZooKeeper session: "
                             "for the nemesis of a test cluster only)")
    parser.add_argument("--tls-cert-file", default=None,
                        help="with --tls-key-file: both ports speak TLS")
    parser.add_argument("--tls-key-file", default=None)
    parser.add_argument("--broker-client-token-file", default=None,
                        help="token this broker presents to other clusters (replicators) "
                             "and to its cluster's brokers (Pulsar's "
                             "brokerClientAuthenticationParameters); its role must be a "
                             "superuser there")
    parser.add_argument("--metadata-digest-file", default=None,
                        help="user:password file: authenticate to ZooKeeper, and create "
                             "nodes only that user may read or change")


def _bound(text: str) -> int:
    """A limit where 0 means none."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of seconds")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value
