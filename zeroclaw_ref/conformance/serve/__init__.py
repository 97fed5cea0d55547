"""``serve``: the oracle plays the agent so that an ACP *client* is judged (transcripts.md §14).

Why a package of its own, and not ``core/`` or ``tools/``: serve decides verdicts (a
client's pass or fail, [TX-SERVE-01]), so it is judging, not tooling; but it judges in the
other direction. Here the oracle writes the scenario's ``expect`` frames and checks what the
client ``send``s, with its own rules for what a real client can be held to (rules.py,
[ZC-SERVE-01] to [ZC-SERVE-07]). It shares the format and the matching with ``core/``
(transcript.py, placeholders.py, match.py, report.py, verdicts.py) and nothing of the
agent's side (runner.py, agent.py, exchange.py, schema.py). Kept apart, an agent author's
reading path stays free of serve's 1.5k lines, and a client author reads those five core
modules and then this package. ``serve`` may import ``core/`` and ``peers/`` (for the
relay path it binds), never ``tools/``; ``core/`` never imports it.

Reading order: rules.py and values.py (the pure rules: servability, invented values, the
check of one client message), play.py (one scenario over stdio) with input.py (the
client's lines as events), suite.py and relay.py (``serve --suite`` and the agent command
it hands the client), steps.py (what ``show --json`` tells a client harness).
"""
