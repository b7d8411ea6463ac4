"""Channel adapters: chat event -> ``RequestContext``, ``UiComponent`` -> channel payload.

Every adapter fills ``RequestContext.metadata`` with the same keys (see ``agent_core.channel``).
"""
