"""Topic ownership: who owns namespace bundles (ephemeral nodes), lookups, loading
and unloading topics, and PIP-57's session-expiry policy. See docs/broker.md."""
