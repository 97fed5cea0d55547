"""The oracle's core: everything that decides the verdict on an agent (transcripts.md §1 to §10).

A scenario file is read and checked (transcript.py, checks.py), played against the agent
process (runner.py with agent.py and exchange.py), each message is matched (match.py with
placeholders.py) and judged a second time by the pinned ACP schema (schema.py), and the
outcome is written (report.py, verdicts.py) for one scenario or a selection (suite.py).
The reading order, with line counts, is in the package above (``conformance/__init__.py``).

Boundaries, checked by tests/architecture/test_conformance_reading_path.py: nothing here
imports ``serve/`` or ``tools/``, so this package reads on its own. The runner imports
``peers/`` only to start the fake MCP servers a scenario declares; whatever a peer receives
is matched here, by the same code as ``acp``.
"""
