"""Schedules in the running bots: the operators' command, the console's view, and the run
host each channel gives a scheduled turn (``agent_core.schedules`` is the channel-free core)."""
