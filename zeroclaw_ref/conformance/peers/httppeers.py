"""Fake MCP servers over Streamable HTTP and legacy HTTP+SSE (transcripts.md §8.3, §8.4).

Both peers listen on a loopback ephemeral port before the IUT starts and bind
``URL_<CH>`` ([TX-PEER-01]); they are passive and write only what frames say,
plus the automatic transport replies below ([TX-PEER-02]).

``HttpPeer`` ([TX-PEER-07]), at ``http://127.0.0.1:<port>/mcp``:

- a POST body is one queued message ([TX-PEER-03]). A body holding a request
  stays open until a ``send`` answers it: the first response carrying that id,
  else (a ``send_raw``, or a ``send`` that is not a response) the oldest open
  POST. The answer is ``200 application/json`` unless the frame's ``http`` says
  ``status``/``headers``; with ``"sse": true`` it is an event stream that also
  carries later sends marked ``"via": "post"`` until one marked ``"end": true``.
  Notifications and responses are answered 202 at once;
- GET is answered 405, or with the channel option ``"get": "stream"`` kept open
  as the stream that sends marked ``"via": "get"`` are written to;
- DELETE is answered 200 and records ``eof`` ([TX-PEER-04]).

``SsePeer`` ([TX-PEER-09]), at ``http://127.0.0.1:<port>/sse``: GET opens the
event stream and at once sends the ``endpoint`` event (``/messages?session_id=<n>``,
``n`` counting streams from 1, or the channel option ``endpoint`` verbatim).
POSTs are queued and answered 202. A ``send`` is written to the newest stream as
a ``message`` event, a ``send_raw`` as its text. The IUT closing the stream
records ``eof``.

Runner-side verbs: ``do: "kill"`` closes every open connection without a
response ([TX-FRAME-08]); ``do: "close_input"`` ends the open event streams
normally (the IUT sees the server close them). Request headers of every queued
message are kept for ``expect`` frames with ``http.headers`` ([TX-PEER-08]).

A POST whose body the peer refuses (httpwire.read_body: over the size limit or
broken framing) is answered 413 or 400 and its connection closed; the frame that
would have taken its message fails as ``peer-exchange-closed`` with the cause.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from ..core.header import Channel
from ..core.jsonlex import JSON, JsonError, loads
from .httpwire import (
    BodyError,
    Handler,
    Listener,
    Mailbox,
    Out,
    http_options,
    parse_message,
    read_body,
    request_headers,
    request_ids,
    respond,
    response_ids,
    shutdown,
    sse_event,
    start_stream,
    write_chunk,
)
from .inbox import Inbox, PeerFailure

__all__ = ["HttpPeer", "PeerFailure", "SsePeer"]


class _Refused:
    """A POST body the peer did not accept (a JSON ``null`` body is a message)."""


class _HttpBase(Inbox):
    """What both transports share: the listener, the queues and the runner-side API."""

    PATH = "/"

    def __init__(self, channel: Channel, timeout_scale: float) -> None:
        super().__init__()
        self.channel = channel
        self.scale = timeout_scale
        self.eofs: queue.Queue[None] = queue.Queue()
        self._cond = threading.Condition()
        self._listener = Listener(self, channel.name)
        self.placeholder = "URL_" + channel.name.upper()
        self.value = f"http://127.0.0.1:{self._listener.port}{self.PATH}"

    # -- the IUT's side ------------------------------------------------------

    def _body(self, h: Handler) -> JSON | _Refused:
        """The POST's message, or ``_Refused`` when its body is refused (then answered here)."""
        try:
            return parse_message(read_body(h))
        except BodyError as exc:
            # [TX-PEER-03] a body is one message, so it is never truncated or guessed at;
            # the rest of it is unread, so the connection cannot carry another request
            # and the exchange fails as a whole ([TX-RUN-06] peer-exchange-closed).
            # Recorded before the answer, so that no IUT (or test) can see the refusal
            # before the runner can.
            self._refused(PeerFailure("peer-exchange-closed", f"the peer refused a POST: {exc}"))
            h.close_connection = True
            with contextlib.suppress(OSError):
                respond(h, exc.status, headers=(("Connection", "close"),))
            return _Refused()

    def _path_ok(self, h: Handler) -> bool:
        if urlsplit(h.path).path == self.PATH:
            return True
        respond(h, 404)
        return False

    def on_post(self, h: Handler) -> None:  # pragma: no cover - overridden
        respond(h, 405)

    def on_get(self, h: Handler) -> None:  # pragma: no cover - overridden
        respond(h, 405)

    def on_delete(self, h: Handler) -> None:
        respond(h, 405)

    def _pump(self, h: Handler, box: Mailbox, streaming: bool) -> bool:
        """Write what the runner posts until the response ends; False when the IUT left."""
        while True:
            out = box.wait()
            if out is None:
                h.close_connection = True
                return False
            if not out.drop and not box.alive():  # the IUT left while the answer was on its way
                out.done.put(False)
                h.close_connection = True
                return False
            if out.drop:
                shutdown(h.connection)
                h.close_connection = True
                out.done.put(False)
                return True
            try:
                if not streaming and out.stream:
                    start_stream(h, out.status, out.headers)
                    streaming = True
                if streaming:
                    write_chunk(h, out.body, last=out.end)
                else:
                    respond(h, out.status, out.body, out.headers, "application/json")
            except OSError:
                out.done.put(False)
                h.close_connection = True
                return False
            out.done.put(True)
            if out.end or not streaming:
                return True

    # -- the runner's side ---------------------------------------------------

    def _wait_for(self, find: Callable[[], Mailbox | None], deadline: float) -> Mailbox | None:
        with self._cond:
            while (box := find()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return box

    @staticmethod
    def _hand_over(box: Mailbox, out: Out, deadline: float, reason: str, what: str) -> None:
        box.put(out)
        try:
            ok = out.done.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            ok = False
        if not ok:
            raise PeerFailure(reason, f"the IUT closed {what} before the peer could write to it")

    def _boxes(self) -> list[Mailbox]:  # pragma: no cover - overridden
        return []

    def _forget_boxes(self) -> None:  # pragma: no cover - overridden
        return

    def kill(self, status: int | None = None) -> bool:
        """[TX-FRAME-08] close every open connection without a response."""
        with self._cond:
            boxes = self._boxes()
            self._forget_boxes()
        for box in boxes:
            box.put(Out(b"", drop=True))
        self._listener.drop_all()
        return True

    def close_output(self) -> bool:
        """End the open event streams normally (the server closes them)."""
        with self._cond:
            streams = [b for b in self._boxes() if not b.ids or b.answered]
            self._forget_streams()
        for box in streams:
            box.put(Out(b"", stream=True, end=True))
        return True

    def _forget_streams(self) -> None:  # pragma: no cover - overridden
        return

    def stop(self) -> None:
        with self._cond:
            boxes = self._boxes()
            self._forget_boxes()
            self._cond.notify_all()
        for box in boxes:
            box.put(Out(b"", drop=True))
        self._listener.close()


def _frame_body(verb: str, data: bytes) -> tuple[JSON, str | None]:
    """(the message a `send` carries, its compact text), or (None, None) for raw bytes."""
    if verb != "send":
        return None, None
    text = data.decode("utf-8", "surrogatepass").removesuffix("\n")
    try:
        return loads(text), text
    except JsonError:  # pragma: no cover - the runner serialised it
        return None, text


class HttpPeer(_HttpBase):
    """[TX-PEER-07] a Streamable HTTP server at ``/mcp``."""

    PATH = "/mcp"

    def __init__(self, channel: Channel, timeout_scale: float) -> None:
        self._posts: list[Mailbox] = []  # POSTs owed an answer, oldest first
        self._post_stream: Mailbox | None = None
        self._get_stream: Mailbox | None = None
        super().__init__(channel, timeout_scale)

    def on_post(self, h: Handler) -> None:
        if not self._path_ok(h):
            return
        headers = request_headers(h)
        if isinstance(value := self._body(h), _Refused):
            return
        ids = request_ids(value)
        if not ids:
            self._queue(value, headers)
            respond(h, 202)
            return
        box = Mailbox(h.connection, ids)
        with self._cond:
            self._posts.append(box)
            self._cond.notify_all()
        self._queue(value, headers)
        try:
            self._pump(h, box, streaming=False)
        finally:
            with self._cond:
                if self._post_stream is box:
                    self._post_stream = None
                self._cond.notify_all()
            box.close()

    def on_get(self, h: Handler) -> None:
        if not self._path_ok(h):
            return
        if self.channel.options.get("get") != "stream":
            respond(h, 405, headers=(("Allow", "POST, DELETE"),))
            return
        start_stream(h)
        box = Mailbox(h.connection)
        with self._cond:
            self._get_stream = box
            self._cond.notify_all()
        try:
            self._pump(h, box, streaming=True)
        finally:
            with self._cond:
                if self._get_stream is box:
                    self._get_stream = None
            box.close()

    def on_delete(self, h: Handler) -> None:
        if not self._path_ok(h):
            return
        respond(h, 200)
        self.eofs.put(None)  # [TX-PEER-04] the IUT ended its session

    def _boxes(self) -> list[Mailbox]:
        found = [*self._posts, self._post_stream, self._get_stream]
        return [b for b in found if b is not None]

    def _forget_boxes(self) -> None:
        self._posts.clear()
        self._post_stream = self._get_stream = None

    def _forget_streams(self) -> None:
        self._post_stream = self._get_stream = None

    def deliver(self, verb: str, data: bytes, http: JSON, deadline: float) -> None:
        """Carry out one ``send``/``send_raw`` frame on this channel.

        Raises:
            PeerFailure: ``peer-stream-not-open`` or ``peer-exchange-closed``.
        """
        status, headers, opts = http_options(http)
        value, text = _frame_body(verb, data)
        event = data if text is None else sse_event(text)
        end = opts.get("end") is True
        if opts.get("via") == "get":
            box = self._wait_for(lambda: self._get_stream, deadline)
            if box is None:
                raise PeerFailure("peer-stream-not-open", "no GET event stream is open")
            with self._cond:
                if end and self._get_stream is box:
                    self._get_stream = None
            self._hand_over(
                box, Out(event, end=end), deadline, "peer-stream-not-open", "the GET stream"
            )
            return
        with self._cond:
            stream = self._post_stream if opts.get("via") == "post" else None
            if stream is not None and end:
                self._post_stream = None
        if stream is not None:
            self._hand_over(
                stream, Out(event, end=end), deadline, "peer-exchange-closed", "the POST stream"
            )
            return
        ids = response_ids(value) if text is not None else frozenset()
        box = self._wait_for(lambda: self._owed(ids), deadline)
        if box is None:
            what = f"request id {', '.join(sorted(ids))}" if ids else "any request"
            raise PeerFailure("peer-exchange-closed", f"no open POST to answer for {what}")
        streaming = opts.get("sse") is True or opts.get("via") == "post"
        with self._cond:
            self._posts.remove(box)
            box.answered = True
            if streaming and not end:
                self._post_stream = box
        if box.gone:
            raise PeerFailure("peer-exchange-closed", "the IUT abandoned the POST to be answered")
        if streaming:
            out = Out(event, status, headers, stream=True, end=end)
        else:
            out = Out(
                data if text is None else text.encode("utf-8", "surrogatepass"), status, headers
            )
        self._hand_over(box, out, deadline, "peer-exchange-closed", "the POST")

    def _owed(self, ids: frozenset[str]) -> Mailbox | None:
        """The POST owed this answer: by id, else the oldest one the IUT still waits on."""
        for box in self._posts:
            if (box.ids & ids) if ids else not box.gone:
                return box
        return None


class SsePeer(_HttpBase):
    """[TX-PEER-09] a legacy HTTP+SSE server: event stream at ``/sse``, POSTs answered 202."""

    PATH = "/sse"

    def __init__(self, channel: Channel, timeout_scale: float) -> None:
        self._stream: Mailbox | None = None
        self._counter = itertools.count(1)
        super().__init__(channel, timeout_scale)

    def on_get(self, h: Handler) -> None:
        if not self._path_ok(h):
            return
        option = self.channel.options.get("endpoint")
        endpoint = (
            option if isinstance(option, str) else f"/messages?session_id={next(self._counter)}"
        )
        start_stream(h)
        write_chunk(h, sse_event(endpoint, "endpoint"))
        box = Mailbox(h.connection)
        with self._cond:
            self._stream = box
            self._cond.notify_all()
        try:
            finished = self._pump(h, box, streaming=True)
        finally:
            with self._cond:
                if self._stream is box:
                    self._stream = None
            box.close()
        if not finished:
            self.eofs.put(None)  # [TX-PEER-04] the IUT closed the event stream

    def on_post(self, h: Handler) -> None:
        headers = request_headers(h)
        if isinstance(value := self._body(h), _Refused):
            return
        self._queue(value, headers)
        respond(h, 202)

    def _boxes(self) -> list[Mailbox]:
        return [self._stream] if self._stream is not None else []

    def _forget_boxes(self) -> None:
        self._stream = None

    def _forget_streams(self) -> None:
        self._stream = None

    def deliver(self, verb: str, data: bytes, http: JSON, deadline: float) -> None:
        """Write one ``send``/``send_raw`` frame to the newest event stream.

        Raises:
            PeerFailure: ``peer-stream-not-open`` when no stream opens before the deadline.
        """
        _value, text = _frame_body(verb, data)
        event = data if text is None else sse_event(text)
        box = self._wait_for(lambda: self._stream, deadline)
        if box is None:
            raise PeerFailure("peer-stream-not-open", "no event stream is open")
        self._hand_over(box, Out(event), deadline, "peer-stream-not-open", "the event stream")
