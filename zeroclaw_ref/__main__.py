"""`python -m zeroclaw_ref <subcommand>`."""

from __future__ import annotations

from zeroclaw_ref.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
