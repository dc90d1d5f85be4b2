"""`/admin/v2/tenants`: list, create (PUT), update (POST), get, delete (refused while the
tenant has namespaces)."""

from __future__ import annotations

from impl.admin.named_routes import named_routes
from impl.resources import TenantInfo

routes = named_routes("tenants", "tenant", TenantInfo)
