"""The Teams bot: ``threadline teams`` (``app``), its listeners (``bot``), its turn worker
(``turns``), settings, metrics and the Bot Framework plumbing (``botbuilder``, ``connector``,
``outbound``, ``files``); ``package`` writes the Teams app package."""
