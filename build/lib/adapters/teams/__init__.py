"""Microsoft Teams: activity -> ``RequestContext``, components -> Teams messages.

Translation only, no SDK: everything here reads and writes the Bot Framework wire JSON, so
any host (the botbuilder one in ``bots.teams``, a Microsoft 365 Agents SDK one later) can use
it. The same module names as ``adapters.slack``:

- ``context``: activity -> ``RequestContext`` and the thread key; ``identity``: who asks
- ``render`` (+ ``elements``, ``markdown``, ``tables``, ``charts``, ``limits``): rendering
- ``stream``: one turn's reply (``TeamsReplyStream``), with ``answer`` (the streamed answer
  text), ``slot`` (the message that carries it, across crashes) and ``private`` (admin-only
  detail to the asker only)
- ``controls``: the bot's own controls (feedback, Stop) and the clicks on every button

Teams only: ``activities`` (the wire activities), ``connector`` (the Bot Connector calls a
host provides, and retries), ``files`` (the file consent flow).
"""
