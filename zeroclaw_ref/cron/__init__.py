"""The scheduler: the `cron` construction path (policy.md §4.7, §7.1)."""
