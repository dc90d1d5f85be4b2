"""The lookup service of document 003's tenant migration: a front door that answers every
client's lookups by sending it to the cluster that serves the topic's tenant, so a tenant
moves between clusters by changing one record (docs/tenant-migration.md)."""
