"""Slack adapter: signed payloads -> ``RequestContext``, workspace identity, Block Kit
rendering and the reply stream (streaming answers, status, private delivery, recovery).

    context   bolt payloads -> RequestContext (ChannelMetadata + slack_ extras), thread keys
    identity  SlackUserResolver (users.info, user groups, admins; cached)
    render    SlackRenderer: UiComponent -> Block Kit messages (elements, tables, charts,
              markdown), within limits
    stream    SlackReplyStream: one turn's components -> Web API calls (answer, status, ...)
    answer    AnswerStream: the answer's markdown, streamed (chat.startStream ...)
    slot      AnswerSlot: what a turn posted, taken back on a re-run; notices in its place
    private   PrivateDelivery: admin-only detail to the asker only (chat.postEphemeral)
    controls  feedback / Stop / action buttons, and reading the clicks on them
    Slack only: status (assistant.threads.setStatus), history (a thread's earlier messages),
              threads (threads the bot takes part in), home (suggested prompts, welcome),
              installations + oauth_state (multi-workspace install)
"""
