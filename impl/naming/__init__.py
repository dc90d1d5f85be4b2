"""Names every layer of the implementation shares: topic and namespace names as Pulsar
spells them (`topic_name`) and the namespace bundles a topic's name hashes into
(`bundles`), as Pulsar keeps them in `common.naming`. Pure values: they import nothing
of the implementation, so metadata records, storage and ownership may all use them."""
