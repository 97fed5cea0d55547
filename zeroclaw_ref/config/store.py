"""A reloading holder of the current configuration snapshot (config.md CFG-LOAD-10).

Long-running processes ask the store for a snapshot right before each `resolve()`. The file is
reloaded when its modification time or size changed; a new file that does not load is logged
and the previous snapshot is kept, so a broken edit never takes a running process down.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path

from zeroclaw_ref.config.dirs import config_file
from zeroclaw_ref.config.load import load_config
from zeroclaw_ref.config.model import ConfigError, ConfigSnapshot

log = logging.getLogger(__name__)

# (mtime in ns, size), or None when the file does not exist.
_Stamp = tuple[int, int] | None


class ConfigStore:
    """Holds the last good snapshot of one configuration directory; thread-safe."""

    def __init__(self, config_dir: Path, data_dir: Path, environ: Mapping[str, str]) -> None:
        self._config_dir = config_dir
        self._data_dir = data_dir
        self._environ = dict(environ)
        self._lock = threading.Lock()
        self._snapshot: ConfigSnapshot | None = None
        self._stamp: _Stamp = None

    @property
    def environ(self) -> Mapping[str, str]:
        """The environment every snapshot is loaded with (its overrides, CFG-ENV-11)."""
        return self._environ

    def _current_stamp(self) -> _Stamp:
        try:
            info = config_file(self._config_dir).stat()
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size)

    def snapshot(self) -> ConfigSnapshot:
        """The current snapshot, reloaded first when the file changed.

        Raises:
            ConfigError only when no snapshot has ever loaded; the caller must not start.
        """
        with self._lock:
            stamp = self._current_stamp()
            if self._snapshot is not None and stamp == self._stamp:
                return self._snapshot
            try:
                fresh = load_config(self._config_dir, self._data_dir, self._environ)
            except ConfigError as exc:
                if self._snapshot is None:
                    raise
                # [CFG-LOAD-10] keep the previous snapshot; retry only after the next change.
                self._stamp = stamp
                for line in exc.lines:
                    log.error("config reload failed, keeping previous configuration: %s", line)
                return self._snapshot
            self._snapshot, self._stamp = fresh, stamp
            return fresh
