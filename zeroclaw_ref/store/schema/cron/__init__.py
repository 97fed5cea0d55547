"""Migrations of the scheduler's job store (policy.md §4.7, §7.1; config.md CFG-DIR-05)."""
