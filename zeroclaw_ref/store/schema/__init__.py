"""SQL migration scripts, one folder per database family (DESIGN §10)."""
