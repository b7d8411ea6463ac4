"""``threadline dev``: the local console. Talk to the agent in a browser and see, side by
side, what the Slack adapter and the Teams adapter deliver for every answer.

    server      the command line (stdlib imports only; builds the demo agent)
    app         the aiohttp app: the page, its JSON/SSE API, the mounted channel fakes
    turns       ``Console``: one turn driven through the agent and both adapters
    turnlog     the terminal's line per turn (who, what, how long, tools, tokens)
    slack_view  the shipped fake Slack Web API, and the page's view of its calls
    teams_view  the shipped fake Bot Connector, and the page's view of its calls
    identity    who is asking (groups) and where (DM or shared channel)
    events      a turn's Server-Sent Events
    index.html, app.js, app.css, markdown.js, blockkit.js, teams.js, teamscharts.js: the page
    vendor/adaptivecards   Microsoft's Adaptive Cards renderer, shipped (MIT)
"""
