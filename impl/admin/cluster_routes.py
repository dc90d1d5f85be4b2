"""`/admin/v2/clusters`: list, create (PUT), update (POST), get, delete."""

from __future__ import annotations

from impl.admin.named_routes import named_routes
from impl.resources import ClusterData

routes = named_routes("clusters", "cluster", ClusterData)
