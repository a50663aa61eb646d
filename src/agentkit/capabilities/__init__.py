"""Capabilities built on memory: compaction and request assembly.

Depends on agentkit.state.memory, never the other way round.
"""

from agentkit.capabilities._compactor import Compactor, TruncatingCompactor
from agentkit.capabilities._request import Grounder, GroundingSource, RequestBuilder

__all__ = ["Compactor", "Grounder", "GroundingSource", "RequestBuilder", "TruncatingCompactor"]
