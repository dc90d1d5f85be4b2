"""The implementation's metadata layer: the only code in `impl` that talks to ZooKeeper.

`paths` names every znode, `store.MetadataStore` is the session with its operations, watches
and session events, `election` holds leader election, `ids` allocates sequential ids,
`ephemeral` claims an ephemeral node the PIP-57 way.
See docs/zookeeper.md.
"""
