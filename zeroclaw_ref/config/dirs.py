"""Where configuration and data live (config.md §1).

The caller passes the environment mapping; nothing here reads `os.environ`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def _absolute(raw: str) -> Path:
    # [CFG-DIR-01] `~` expanded and made absolute; symlinks are deliberately left alone.
    return Path(raw).expanduser().absolute()


def resolve_dirs(cli_config_dir: str | None, environ: Mapping[str, str]) -> tuple[Path, Path]:
    """Return (configuration directory, data directory).

    [CFG-DIR-01] `--config-dir`, else a non-empty `ZEROCLAW_CONFIG_DIR`, else `~/.zeroclaw`;
    [CFG-DIR-03] a non-empty `ZEROCLAW_DATA_DIR`, else `<config dir>/data`.
    """
    raw_config = cli_config_dir or environ.get("ZEROCLAW_CONFIG_DIR") or "~/.zeroclaw"
    config_dir = _absolute(raw_config)
    raw_data = environ.get("ZEROCLAW_DATA_DIR")
    data_dir = _absolute(raw_data) if raw_data else config_dir / "data"
    return config_dir, data_dir


def config_file(config_dir: Path) -> Path:
    """[CFG-DIR-02] the configuration file."""
    return config_dir / "config.toml"


def ensure_private_dir(path: Path) -> Path:
    """[CFG-DIR-04] create `path` and missing parents with mode 0700; return it.

    Existing directories keep their mode: only what this call creates is made private.
    """
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            continue
        # mkdir's mode is filtered by the umask; chmod makes 0700 exact.
        directory.chmod(0o700)
    return path
