"""Streaming HTTP shared by the network providers: one POST read as server-sent events, bounded
retries on 429, credential-scrubbed failures and prompt cancellation (config.md CFG-PROV-06..08).

Design notes:
- `requests` and `sseclient` are imported inside functions only, so answering `initialize`
  never loads them (DESIGN §5.4, test_startup_imports).
- Cancellation (DESIGN §7.6): the engine sets `ModelRequest.stop`. A watcher thread waits on it
  and shuts the response's socket down for reading, which wakes the blocked read at once; the
  reading thread then closes the response itself (closing it from another thread can deadlock,
  PEERS "Library facts"). The watcher is released by setting `stop` when the stream ends, which
  is what the engine's pump does anyway once a stream is over.
- Reads use `raw.read1`, so each event is handed on as soon as its bytes arrive, whether the
  server frames the body with chunked encoding, a length, or the connection's end.
- A stop before the response headers arrive is noticed when they do: requests offers no safe way
  to abort a pending POST; the read timeout bounds that wait.
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from zeroclaw_ref.core.jsontypes import JSONObject, dumps
from zeroclaw_ref.core.scrub import clean_output, redact_secrets
from zeroclaw_ref.providers.base import ProviderError, ProviderEvent

if TYPE_CHECKING:
    from requests import Response

    from zeroclaw_ref.config.model import ProviderConfig

log = logging.getLogger(__name__)

# [CFG-PROV-08] a failure quotes at most this many characters of the response body.
EXCERPT_CHARS: Final = 500
# Design: how much of an error body is read to build the excerpt (it is cut to 500 anyway).
ERROR_BODY_BYTES: Final = 16_384
# Design: connecting takes at most this long (or `timeout_secs` when smaller); `timeout_secs`
# bounds every wait for response bytes.
CONNECT_TIMEOUT_SECS: Final = 10.0
# Design: 429 handling — at most this many attempts in all, waiting `Retry-After` (or the
# default when absent) between them; a longer `Retry-After` fails at once rather than stall a turn.
MAX_ATTEMPTS: Final = 3
DEFAULT_RETRY_AFTER_SECS: Final = 1.0
MAX_RETRY_AFTER_SECS: Final = 60.0
_READ_BYTES: Final = 65_536


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how one provider posts; `headers` and `secrets` are never logged."""

    provider: str
    url: str
    headers: Mapping[str, str]
    timeout_secs: float
    secrets: tuple[str, ...] = ()

    def scrub(self, text: str) -> str:
        """Remove the configured secrets in every spelling a server may echo them (verbatim,
        JSON-escaped, URL-encoded, base64; CFG-PROV-08), then scrub credential shapes
        (ACP-UPD-12)."""
        return clean_output(redact_secrets(text, self.secrets))

    def failure(self, detail: str) -> ProviderError:
        """[CFG-PROV-08] `provider <name>: <detail>`, scrubbed."""
        return ProviderError(f"provider {self.provider}: {self.scrub(detail)}")

    def excerpt(self, body: str) -> str:
        """[CFG-PROV-08] at most 500 characters, scrubbed before cutting so no key part survives."""
        return self.scrub(body.strip())[:EXCERPT_CHARS]


def keyed_endpoint(
    config: ProviderConfig,
    default_base_url: str,
    path: str,
    key_headers: Callable[[str], Mapping[str, str]],
) -> Endpoint:
    """The endpoint of a keyed provider: `<base_url or default><path>`, the configured extra
    headers plus `key_headers(api_key)`, and every header value scrubbed from error texts.

    Raises:
        ProviderError: [CFG-PROV-04] no api_key (a configuration may be prepared before its
            key is entered; using it fails).
    """
    if not config.api_key:
        raise ProviderError(f"provider {config.name}: api_key is not set")
    extra = {k: str(v) for k, v in config.extra_headers.items()}
    base = (config.base_url or default_base_url).rstrip("/")
    return Endpoint(
        provider=config.name,
        url=f"{base}{path}",
        headers={**extra, **key_headers(config.api_key)},
        timeout_secs=float(config.timeout_secs),
        secrets=(config.api_key, *extra.values()),
    )


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event: its `event` name (`message` when absent) and `data`."""

    event: str
    data: str


class RateLimited(ProviderError):
    """A 429 (or an in-stream rate-limit error); retried only before anything was streamed."""

    def __init__(self, text: str, retry_after: float | None) -> None:
        super().__init__(text)
        self.retry_after = retry_after


class _Stopped(Exception):
    """The engine set `stop`: the stream ends quietly, without `Done`."""


class _StopWatcher:
    """Shuts the current response's socket down when `stop` is set (module note)."""

    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop
        self._lock = threading.Lock()
        self._response: Response | None = None
        self._finished = False
        threading.Thread(target=self._run, name="provider-stop", daemon=True).start()

    def _run(self) -> None:
        self._stop.wait()
        with self._lock:
            if not self._finished and self._response is not None:
                _shutdown(self._response)

    def attach(self, response: Response) -> None:
        with self._lock:
            self._response = response
        if self._stop.is_set():  # set while the POST was pending: the watcher may have fired
            _shutdown(response)

    def detach(self) -> None:
        with self._lock:
            self._response = None

    def finish(self) -> None:
        with self._lock:
            self._finished = True
            self._response = None
        self._stop.set()  # releases the watcher thread; the stream is over either way


def _shutdown(response: Response) -> None:
    # An already closed or released response has nothing left to wake.
    with contextlib.suppress(AttributeError, ValueError, RuntimeError, OSError):
        response.raw.shutdown()  # urllib3 >= 2.3: shutdown(SHUT_RD), safe from another thread


def stream_with_retries(
    endpoint: Endpoint,
    body: JSONObject,
    stop: threading.Event,
    parse: Callable[[Iterator[SseEvent]], Iterator[ProviderEvent]],
) -> Iterator[ProviderEvent]:
    """POST `body` and yield what `parse` makes of the event stream.

    A 429 is retried after its `Retry-After` while nothing has been yielded yet, never after.
    The stream ends quietly, without `Done`, once `stop` is set.

    Raises:
        ProviderError: every failure, with the CFG-PROV-08 text; the turn fails with it.
    """
    watcher = _StopWatcher(stop)
    try:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            yielded = False
            try:
                for event in parse(_events(endpoint, body, watcher, stop)):
                    yielded = True
                    yield event
                return
            except RateLimited as exc:
                delay = DEFAULT_RETRY_AFTER_SECS if exc.retry_after is None else exc.retry_after
                # [CFG-PROV-08] never retried once a token was streamed: the engine already
                # showed it, and a second answer would repeat it.
                if yielded or attempt == MAX_ATTEMPTS or delay > MAX_RETRY_AFTER_SECS:
                    raise
                log.warning("%s; retrying in %.1f s", exc, delay)
                if _pause(stop, delay):
                    return
            except _Stopped:
                return
    finally:
        watcher.finish()


def _pause(stop: threading.Event, seconds: float) -> bool:
    """Wait before a retry; True when `stop` was set meanwhile. Tests replace it to record."""
    return stop.wait(seconds)


def _events(
    endpoint: Endpoint, body: JSONObject, watcher: _StopWatcher, stop: threading.Event
) -> Iterator[SseEvent]:
    import requests
    import sseclient

    timeout = (min(CONNECT_TIMEOUT_SECS, endpoint.timeout_secs), endpoint.timeout_secs)
    headers = {
        **endpoint.headers,
        "content-type": "application/json",
        "accept": "text/event-stream",
    }
    try:
        response = requests.post(
            endpoint.url,
            data=dumps(body).encode("utf-8"),
            headers=headers,
            timeout=timeout,
            stream=True,
        )
    except requests.exceptions.ConnectTimeout:
        raise endpoint.failure(f"connect timeout after {timeout[0]:g} s") from None
    except requests.exceptions.Timeout:
        raise endpoint.failure(f"no response within {endpoint.timeout_secs:g} s") from None
    except requests.exceptions.RequestException as exc:
        raise endpoint.failure(f"request failed: {exc}") from None
    watcher.attach(response)
    try:
        if stop.is_set():
            raise _Stopped
        _check_response(endpoint, response, stop)
        client = sseclient.SSEClient(_chunks(endpoint, response, stop))
        for event in client.events():
            if stop.is_set():
                raise _Stopped
            yield SseEvent(event.event, event.data)
        if stop.is_set():
            raise _Stopped
    finally:
        watcher.detach()
        response.close()  # on the reading thread, never from the watcher (module note)


def _check_response(endpoint: Endpoint, response: Response, stop: threading.Event) -> None:
    status = response.status_code
    if status == 429:
        text = _read_excerpt(endpoint, response, stop)
        raise RateLimited(
            endpoint.failure(f"HTTP 429: {text}").args[0],
            _retry_after(response.headers.get("retry-after")),
        )
    if status >= 300:
        raise endpoint.failure(f"HTTP {status}: {_read_excerpt(endpoint, response, stop)}")
    kind = response.headers.get("content-type", "")
    if kind and not kind.lower().startswith("text/event-stream"):
        # An HTML login page or a non-streaming JSON answer: say what came instead.
        text = _read_excerpt(endpoint, response, stop)
        raise endpoint.failure(f"HTTP {status}: expected an event stream, got {kind}: {text}")


def _read_excerpt(endpoint: Endpoint, response: Response, stop: threading.Event) -> str:
    data = b""
    for chunk in _chunks(endpoint, response, stop):
        data += chunk
        if len(data) >= ERROR_BODY_BYTES:
            break
    return endpoint.excerpt(data.decode("utf-8", "replace")) or "(empty body)"


def _chunks(endpoint: Endpoint, response: Response, stop: threading.Event) -> Iterator[bytes]:
    raw = response.raw
    while True:
        try:
            data = raw.read1(_READ_BYTES)
        except Exception as exc:  # urllib3 and socket errors alike: the connection broke
            if stop.is_set():
                raise _Stopped from None
            if _is_timeout(exc):
                raise endpoint.failure(
                    f"no data from the server for {endpoint.timeout_secs:g} s (read timeout)"
                ) from None
            raise endpoint.failure(f"connection lost mid-stream: {exc}") from None
        if not data:
            if stop.is_set():
                raise _Stopped
            return
        yield data


def _is_timeout(exc: BaseException) -> bool:
    # Design: urllib3 raises its ReadTimeoutError from the socket's TimeoutError; walking the
    # chain keeps urllib3 itself out of our imports (DESIGN §5.3).
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, TimeoutError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _retry_after(value: str | None) -> float | None:
    """`Retry-After` as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
