"""The broker's admin REST API (aiohttp), on Pulsar's `/admin/v2` paths where Pulsar has
them, so that Pulsar's own admin tools and a third party's broker answer the harness alike.
docs/broker.md lists every endpoint."""
