"""Microsoft Teams: activity -> ``RequestContext``, components -> Teams messages.

Translation only, no SDK: everything here reads and writes the Bot Framework wire JSON, so
any host (the botbuilder one in ``bots.teams.bot``, a Microsoft 365 Agents SDK one later)
can use it.

- ``context``: activity -> ``RequestContext`` and the thread key; ``identity``: who asks
- ``cards`` (+ ``adaptive``, ``markdown``, ``tables``, ``charts``, ``limits``): rendering
- ``reply`` (+ ``streaming``, ``private``, ``activities``, ``files``): one turn's messages
- ``connector``: the outbound calls a host provides, and retries; ``invokes``: buttons,
  feedback; ``state``: the key/value store they keep ids and caches in
"""
