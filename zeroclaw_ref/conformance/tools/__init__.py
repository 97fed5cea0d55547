"""The corpus author's commands: ``lint``, ``coverage``, ``record``, ``show`` and ``list``.

Nothing here decides a verdict on an agent or a client. ``lint`` applies the checks that
``run`` and ``serve`` apply before they start (core/transcript.py, core/checks.py,
serve/values.py) and adds the corpus-wide ones; ``coverage`` holds the cited requirement IDs
to the manifest (with citations.py); ``record`` drafts expected frames from an agent for
review (with generalise.py), reusing the runner; ``show`` and ``list`` print scenarios.
"""
