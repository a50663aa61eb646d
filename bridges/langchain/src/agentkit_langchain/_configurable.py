"""The tenant a LangChain run's ``configurable`` names, read by one rule.

``AgentkitRetriever`` and ``AgentkitMemoryMiddleware`` both take the tenant from a
run's config; two readings of the same keys had drifted (an empty ``org_id`` moved a
retriever call to the unscoped bucket but was ignored by the middleware).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import InvalidArgumentType


def configured_tenant(configurable: Mapping[str, Any] | None) -> Ctx | Scope | None:
    """``agentkit_ctx`` (a whole Ctx), else a Scope of ``org_id``/``domain_id``, else None.

    ``""`` counts as unset, as it does in Scope, so an id left empty by a config
    template falls through to the caller's other sources of the tenant.

    Raises:
        InvalidArgumentType: ``agentkit_ctx`` is not a Ctx.
    """
    if not configurable:
        return None
    given = configurable.get("agentkit_ctx")
    if given is not None:
        if not isinstance(given, Ctx):
            raise InvalidArgumentType(
                f"configurable['agentkit_ctx'] must be a Ctx, got {type(given).__name__}"
            )
        return given
    org, domain = configurable.get("org_id"), configurable.get("domain_id")
    org = None if org == "" else org
    domain = None if domain == "" else domain
    if org is None and domain is None:
        return None
    return Scope(org, domain)
