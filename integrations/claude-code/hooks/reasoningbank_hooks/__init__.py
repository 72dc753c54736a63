"""ReasoningBank's hooks for every agent client, one dispatcher (docs/security/hooks.md#one-dispatcher):

    dispatch.py        the entry: reads the client's event, picks the agent's adapter and the event's
                       handler, prints the answer in the client's shape, reports what failed (exit 0)
    agents/            one adapter per client (Claude Code, Codex CLI, Cursor, Gemini CLI): which of its
                       events runs which handler, where its session id is, the shape of its answer, how
                       its transcript is read and sent; ``ADAPTERS`` is the registry
    handlers.py        one handler per kind of event: the session-start block, the per-prompt memories,
                       the capture; ``HANDLERS`` is the registry
    reading.py         bounded input: the event on stdin, a transcript's two ends, regular files only
    budget.py          the hook's time budget and the numbers it works within (token caps, sizes)
    repository.py      the working directory's git remote, sent so the service finds the project tied to it
    service.py         the HTTP call to the service, the token check, what the user is told when memory is off
    credential.py      the service's URL and the token (apart from the queue: a hook that only asks imports less)
    spool.py           the local queue a capture hands off to, and the detached sender that posts it
    errors.py          HookError: what went wrong, in one line

The package lives inside the Claude Code plugin (integrations/claude-code/hooks/) because installing a
plugin copies that directory alone; the other clients' hook files run their entry scripts from a checkout
(``$REASONINGBANK_HOME/integrations/<client>/``), which find it there. Each entry script is a few lines
that name its agent and call ``dispatch.main``.

Python's standard library only: the hooks run with whatever ``python3`` the user has, nothing installed.
A hook process imports what its event needs and no more — the queue, the git reader and the HTTP client
are imported where they are used — because the tool hook runs before every file a client reads, and each
module is time the client waits (bench/README.md#hooks_codepy-recall-at-the-moment-of-action).
"""
