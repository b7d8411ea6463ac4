"""The Slack bot: ``threadline slack``.

app       the command: settings -> state -> bot -> transport (HTTP or Socket Mode)
bot       the listeners: Slack events and clicks -> durable turns, feedback, Stop
turns     the worker: a queued turn -> the agent -> ``adapters.slack`` stream and slot
clients   the Web API client of each workspace (one token, or OAuth installations)
settings  ``SlackSettings`` from the environment
metrics   Prometheus metrics on ``/metrics``
"""
