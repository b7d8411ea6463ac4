"""Slack adapter: signed payloads -> ``RequestContext``, workspace identity, Block Kit
rendering and the reply stream (streaming answers, status, private delivery).

    context   bolt payloads -> RequestContext, thread keys, mention stripping
    identity  SlackUserResolver (users.info, user groups, admins; cached)
    blocks    UiComponent -> Block Kit messages (tables, charts, cards...), within limits
    reply     one turn's components -> Web API calls (answer, status, private, updates)
"""
