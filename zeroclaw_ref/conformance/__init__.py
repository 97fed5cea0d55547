"""The golden-transcript oracle: runs the fixture corpus against an ACP agent.

Normative source: transcripts.md. The package is stdlib-only and uses only
relative imports, so its directory can be copied out and run on its own
([TX-RUN-10]). Entry point: ``python -m zeroclaw_ref.conformance``.
"""

from __future__ import annotations
