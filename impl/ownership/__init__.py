"""Topic ownership: namespace bundles, who owns them (ephemeral nodes), lookups, loading
and unloading topics, and PIP-57's session-expiry policy. See docs/broker.md."""
