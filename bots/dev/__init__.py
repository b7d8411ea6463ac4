"""``threadline dev``: the local console. Talk to the agent in a browser and see, side by
side, what the Slack adapter and the Teams adapter deliver for every answer.

    server      the command line (stdlib imports only; builds the demo agent)
    app         the aiohttp app: the page, its JSON/SSE API, the in-process Slack Web API
    turns       ``Console``: one turn driven through the agent and both adapters
    slack_view  the Slack Web API the real Slack ``ReplyStream`` talks to
    teams_view  the Bot Connector the real ``TeamsReplyStream`` talks to
    identity    who is asking (groups) and where (DM or shared channel)
    events      a turn's Server-Sent Events
    index.html, app.js, app.css, markdown.js, blockkit.js, teams.js: the page
"""
