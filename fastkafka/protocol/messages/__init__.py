"""Every API's request/response declaration, grouped by purpose; importing registers them."""
from . import admin, cluster_admin, core, groups, quotas, replication, security, transactions  # noqa: F401  (registration side effect)
