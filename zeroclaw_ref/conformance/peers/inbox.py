"""What every fake MCP peer shares on the runner's side: its queue of IUT messages.

A peer (stdio in stdio.py, HTTP and SSE in httppeers.py) turns what the IUT
writes to it into queued messages ([TX-PEER-03]) that ``expect`` frames take in
arrival order. Each queued item is the message together with its request
headers ([TX-PEER-08]; None on stdio), as one tuple, so a message can never be
paired with another message's headers. A peer that had to refuse what the IUT
sent (an HTTP body over the size limit, broken chunked framing) queues a
``PeerFailure`` in the same order instead, so the frame that would have taken
that message fails with the refusal's reason rather than timing out.
"""

from __future__ import annotations

import queue
from collections.abc import Mapping

from ..core.jsonlex import JSON

Headers = Mapping[str, str] | None


class PeerFailure(Exception):
    """A frame a peer cannot carry out; ``reason`` is a [TX-RUN-06] reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class Inbox:
    """Base of every peer: the IUT's messages to it, oldest first."""

    def __init__(self) -> None:
        self._inbox: queue.Queue[tuple[JSON, Headers] | PeerFailure] = queue.Queue()

    def _queue(self, value: JSON, headers: Headers = None) -> None:
        """One message the IUT wrote, with its request headers when it has any."""
        self._inbox.put((value, headers))

    def _refused(self, failure: PeerFailure) -> None:
        """Something the IUT wrote that the peer refused; the frame taking it fails."""
        self._inbox.put(failure)

    def next_message(self, timeout: float) -> tuple[JSON, Headers]:
        """The next message and its request headers.

        Raises:
            queue.Empty: nothing arrived within ``timeout`` seconds.
            PeerFailure: the next thing the IUT sent was refused by the peer.
        """
        item = self._inbox.get(timeout=timeout)
        if isinstance(item, PeerFailure):
            raise item
        return item

    def drain(self) -> list[JSON]:
        """Every message still queued ([TX-FLOW-08]); a refusal shows as its text."""
        left: list[JSON] = []
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return left
            if isinstance(item, PeerFailure):
                left.append({"$peer-failure": f"{item.reason}: {item}"})
            else:
                left.append(item[0])
