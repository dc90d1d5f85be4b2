"""Every znode path the implementation uses, in one place.

The layout follows Pulsar's so that a reader who knows Pulsar finds each thing where Pulsar
keeps it; the scalable-topic part is PIP-468's "Metadata Store Paths" table. docs/zookeeper.md
has the full table: what each path holds, who writes it, and whether it is ephemeral.

Names that come from users (tenants, namespaces, topics, subscriptions, consumers, broker
URLs) are percent-encoded into a single znode name each (PIP-468's `{encodedTopicName}`), so
a '/' in a topic name can never create a level of its own, and `decode` gives the name back
when a caller lists children.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from impl.metadata.errors import InvalidName

# Characters left as they are: unreserved URL characters plus ':' and '=', which Pulsar
# allows in names and ZooKeeper allows in znode names. Everything else, '/' and '%' first,
# is percent-encoded.
_KEPT = ":="

TOPICS = "/topics"
CLUSTERS = "/admin/clusters"
POLICIES = "/admin/policies"
PARTITIONED_TOPICS = "/admin/partitioned-topics"
TOPIC_POLICIES = "/admin/topic-policies"
BUNDLE_OWNERSHIP = "/namespace"
MANAGED_LEDGERS = "/managed-ledgers"
LEDGERS = "/ledgers"
BOOKIES_AVAILABLE = "/ledgers/available"
# BookKeeper's id generator: create a persistent-sequential child with this prefix, take the
# sequence number as the new ledger id, delete the child (see impl/metadata/ids.py).
LEDGER_ID_PREFIX = "/ledgers/idgen/ID-"
LIVE_BROKERS = "/loadbalance/brokers"
SCHEMAS = "/schemas"
# The lookup service's own metadata (document 003's tenant migration), in its own store.
LOOKUP_CLUSTERS = "/lookup/clusters"
LOOKUP_TENANTS = "/lookup/tenants"


def encode(name: str, what: str = "name") -> str:
    """One znode name for `name`, whatever characters it holds; `what` names it in errors."""
    if not name:
        raise InvalidName(what, name, "it is empty")
    encoded = quote(name, safe=_KEPT)
    # "." and ".." are the only names ZooKeeper refuses that quote() leaves alone.
    if encoded in (".", ".."):
        encoded = encoded.replace(".", "%2E")
    return encoded


def decode(component: str) -> str:
    """The user's name back from a znode name made by `encode` (e.g. a listed child)."""
    return unquote(component)


def _namespace(tenant: str, namespace: str) -> str:
    return f"{encode(tenant, 'tenant')}/{encode(namespace, 'namespace')}"


# --- PIP-468 scalable topics ------------------------------------------------------------


def namespace_scalable_topics(tenant: str, namespace: str) -> str:
    """Parent of a namespace's scalable topics; its children are encoded topic names."""
    return f"{TOPICS}/{_namespace(tenant, namespace)}"


def scalable_topic(tenant: str, namespace: str, topic: str) -> str:
    """`ScalableTopicMetadata` JSON: the segment DAG and epoch (PIP-468)."""
    return f"{namespace_scalable_topics(tenant, namespace)}/{encode(topic, 'topic')}"


def scalable_topic_controller(tenant: str, namespace: str, topic: str) -> str:
    """Ephemeral; the controller leader's broker URL, and the election's lock (PIP-468)."""
    return f"{scalable_topic(tenant, namespace, topic)}/controller"


def scalable_topic_pending_change(tenant: str, namespace: str, topic: str) -> str:
    """The split or merge the controller leader has started and not finished: a new leader
    rolls it forward (starquake's addition to PIP-468's paths; see docs/scalable-topics.md)."""
    return f"{scalable_topic(tenant, namespace, topic)}/pending-change"


def scalable_topic_subscriptions(tenant: str, namespace: str, topic: str) -> str:
    """Parent of the topic's subscriptions; children are encoded subscription names."""
    return f"{scalable_topic(tenant, namespace, topic)}/subscriptions"


def scalable_subscription(tenant: str, namespace: str, topic: str, subscription: str) -> str:
    """`SubscriptionMetadata` JSON (PIP-468)."""
    parent = scalable_topic_subscriptions(tenant, namespace, topic)
    return f"{parent}/{encode(subscription, 'subscription')}"


def subscription_consumers(tenant: str, namespace: str, topic: str, subscription: str) -> str:
    """Parent of a subscription's consumer registrations."""
    return f"{scalable_subscription(tenant, namespace, topic, subscription)}/consumers"


def consumer_registration(
    tenant: str, namespace: str, topic: str, subscription: str, consumer_name: str
) -> str:
    """`ConsumerRegistration` JSON: the durable consumer session (PIP-468). Persistent: the
    session outlives connections; keep-alive state stays in the leader's memory."""
    parent = subscription_consumers(tenant, namespace, topic, subscription)
    return f"{parent}/{encode(consumer_name, 'consumer')}"


# --- clusters, tenants, namespaces -------------------------------------------------------


def cluster(name: str) -> str:
    """Cluster metadata JSON (service URLs), written by the admin API."""
    return f"{CLUSTERS}/{encode(name, 'cluster')}"


def tenant_policies(tenant: str) -> str:
    """Tenant info JSON (admin roles, allowed clusters); namespaces are its children."""
    return f"{POLICIES}/{encode(tenant, 'tenant')}"


def namespace_policies(tenant: str, namespace: str) -> str:
    """Namespace policies JSON (replication clusters, bundles, retention)."""
    return f"{POLICIES}/{_namespace(tenant, namespace)}"


def namespace_partitioned_topics(tenant: str, namespace: str, domain: str) -> str:
    """Parent of a namespace's partitioned topics of one domain (`persistent`)."""
    return f"{PARTITIONED_TOPICS}/{_namespace(tenant, namespace)}/{encode(domain, 'domain')}"


def partitioned_topic(tenant: str, namespace: str, domain: str, topic: str) -> str:
    """Partitioned topic metadata JSON (`{"partitions": N}`, Pulsar's
    `PartitionedTopicMetadata`); the partitions themselves are ordinary topics."""
    parent = namespace_partitioned_topics(tenant, namespace, domain)
    return f"{parent}/{encode(topic, 'topic')}"


def topic_policies(tenant: str, namespace: str, topic: str) -> str:
    """A persistent topic's own policies JSON (Pulsar's `TopicPolicies`, which Pulsar keeps
    in a system topic of the namespace): present once one is set."""
    return f"{TOPIC_POLICIES}/{_namespace(tenant, namespace)}/{encode(topic, 'topic')}"


# --- ownership and liveness (ephemeral) ---------------------------------------------------


def namespace_bundles(tenant: str, namespace: str) -> str:
    """Parent of a namespace's bundle ownership nodes."""
    return f"{BUNDLE_OWNERSHIP}/{_namespace(tenant, namespace)}"


def bundle_owner(tenant: str, namespace: str, bundle_range: str) -> str:
    """Ephemeral; the owning broker's JSON. `bundle_range` is Pulsar's `0x00000000_0xffffffff`
    form. PIP-57: a broker re-owning after a new session checks the ephemeral owner here."""
    return f"{namespace_bundles(tenant, namespace)}/{encode(bundle_range, 'bundle range')}"


def live_broker(broker_url: str) -> str:
    """Ephemeral; one per running broker, value = the broker's JSON (URLs, load)."""
    return f"{LIVE_BROKERS}/{encode(broker_url, 'broker URL')}"


def bookie_registration(bookie_address: str) -> str:
    """Ephemeral; one per running bookie, named by its `host:port`."""
    return f"{BOOKIES_AVAILABLE}/{encode(bookie_address, 'bookie address')}"


# --- managed ledgers and ledgers ----------------------------------------------------------


def namespace_managed_ledgers(tenant: str, namespace: str) -> str:
    """Parent of a namespace's persistent topics' managed ledgers."""
    return f"{MANAGED_LEDGERS}/{_namespace(tenant, namespace)}/persistent"


def managed_ledger(tenant: str, namespace: str, topic: str) -> str:
    """Managed ledger info JSON: the topic's ledger list and terminated flag."""
    return f"{namespace_managed_ledgers(tenant, namespace)}/{encode(topic, 'topic')}"


def managed_cursor(tenant: str, namespace: str, topic: str, cursor: str) -> str:
    """Cursor info JSON (mark-delete position, individually deleted ranges); a child of its
    managed ledger, as in Pulsar."""
    return f"{managed_ledger(tenant, namespace, topic)}/{encode(cursor, 'cursor')}"


def ledger(ledger_id: int) -> str:
    """Ledger metadata JSON (ensemble, state, last entry). Zero-padded so names sort by id."""
    if ledger_id < 0:
        raise InvalidName("ledger", str(ledger_id), "ledger ids are not negative")
    return f"{LEDGERS}/L{ledger_id:010d}"


# --- schemas -------------------------------------------------------------------------------


def topic_schemas(tenant: str, namespace: str, topic: str) -> str:
    """JSON list of a topic's schema versions (impl/broker/schemas), at Pulsar's index path
    (no domain in it: a topic's schema does not depend on it)."""
    return f"{SCHEMAS}/{_namespace(tenant, namespace)}/{encode(topic, 'topic')}"


# --- the lookup service (document 003) ---------------------------------------------------


def lookup_cluster(name: str) -> str:
    """The lookup service's record of a cluster: JSON with its `brokerServiceUrl`."""
    return f"{LOOKUP_CLUSTERS}/{encode(name, 'cluster')}"


def lookup_tenant(tenant: str) -> str:
    """The lookup service's record of the cluster that serves a tenant: JSON `{"cluster"}`."""
    return f"{LOOKUP_TENANTS}/{encode(tenant, 'tenant')}"
