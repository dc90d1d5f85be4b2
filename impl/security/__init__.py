"""Who a client is and what it may do: token authentication, namespace permissions, TLS
(docs/security.md). Off unless the broker's flags switch it on."""
