"""The golden-transcript oracle: judges ACP agents (``run``) and ACP clients (``serve``).

Normative source: transcripts.md, with the project's additions in fixtures/CONTRACT.md. The
package is stdlib-only and uses only relative imports, so its directory can be copied out
and run on its own ([TX-RUN-10]). Entry point: ``python -m zeroclaw_ref.conformance``
(``__main__.py``; ``locate.py`` finds the corpus, ``corpus/`` ships it in the wheel).

Four subpackages, so that what decides a verdict reads without the rest:

- ``core/``  the verdict on an agent, and the transcript format every command shares;
- ``serve/`` the verdict on a client: the oracle plays the agent (why apart: its docstring);
- ``peers/`` the fake MCP servers a scenario's channels ask for; they judge nothing;
- ``tools/`` the corpus author's commands: lint, coverage, record, show and list.

Reading path: the verdict on an agent (line counts as of this writing)::

    core/transcript.py          335  a scenario file: its lines, its frames, the Scenario
    core/header.py              332  line 1: the header's members, as a table
    core/placeholders.py        289  ${NAME} and ${name:type}: grammar, types, substitution
    core/match.py               293  expected against actual: the first difference and its pointer
    core/runner.py              594  one scenario: directories, environment, frames, ending
    core/agent.py               162  the agent as a child process; stdout as a queue of events
    core/exchange.py            185  requests and answers followed; settled or not; stderr frames
    core/report.py              146  a failure's report, host paths written as placeholders
    core/verdicts.py            223  the outcomes and how a run writes them
    core/suite.py               166  a selection of scenarios, in parallel; expected failures

and what those lean on, to read when they send you there::

    core/jsonlex.py             197  JSON that keeps number kinds and duplicate names
    core/profiles.py            182  profiles and needs: which agents a scenario can judge
    core/checks.py              225  the rules that follow the frames: binding, placeholders
    core/options.py              37  the options of a run
    core/schema.py              500  the pinned ACP schema as a second judge

The verdict on a client reads core/transcript.py, placeholders.py, match.py, report.py and
verdicts.py above, then::

    serve/rules.py              207  what a real client can be held to
    serve/values.py             398  servability, invented values, the check of one message
    serve/play.py               449  one scenario served over stdio
    serve/input.py              114  the client's lines as classified events
    serve/suite.py              183  serve --suite: many scenarios, one agent command
    serve/relay.py               69  the agent command a client launches under serve --suite
    serve/steps.py              140  show --json: what a client harness must do, step by step

The fake MCP servers (a scenario with ``channels``)::

    peers/inbox.py               68  the queue of what the agent wrote to a peer
    peers/stdio.py              171  stdio peers, reached through the relay script
    peers/relay.py               61  the relay the agent starts as its MCP server
    peers/httpwire.py           414  HTTP plumbing: bodies, event streams, mailboxes
    peers/httppeers.py          417  Streamable HTTP and legacy HTTP+SSE peers

The tools::

    tools/lint.py               198  lint: every file's checks, then the corpus-wide ones
    tools/transcript_schema.py  259  the format's JSON Schema (fixtures/schema/), as lint applies it
    tools/coverage.py           330  coverage: cited requirement IDs against the manifest
    tools/citations.py          107  the IDs tests and code tags cite
    tools/record.py             431  record: drafting goldens from an agent for review
    tools/generalise.py         289  an actual message turned into an expected value
    tools/show.py               123  show and list
"""

from __future__ import annotations
