"""Migrations of the ACP session store (acp.md §8.2)."""
