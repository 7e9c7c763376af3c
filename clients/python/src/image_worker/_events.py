"""Typed events of a download, parsed from the worker's ``download/*`` notifications."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Mapping, Optional, Union

from . import _shared
from ._errors import DownloadError, download_error

Token = Union[str, int]


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


class _Pixels:
    """What a delivered image (final or partial) offers: its bytes, and numpy / Pillow views."""

    path: Optional[str]
    data: Optional[bytes]
    width: Optional[int]
    height: Optional[int]
    pixel_format: Optional[str]
    stride: Optional[int]
    mime_type: Optional[str]

    def read_bytes(self) -> bytes:
        """The delivered bytes: inline ``data``, the shared-memory ``buffer``, or the file at ``path``."""
        if self.data is not None:
            return self.data
        buffer: Optional[memoryview] = getattr(self, "buffer", None)
        if buffer is not None:
            return bytes(buffer)
        if self.path is not None:
            with open(self.path, "rb") as f:
                return f.read()
        raise ValueError("nothing was delivered (output delivery 'none'): no data and no path")

    def to_pil(self) -> Any:
        """A ``PIL.Image.Image`` (needs Pillow)."""
        try:
            from PIL import Image as PILImage  # type: ignore[import-not-found, unused-ignore]
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_pil() needs Pillow: pip install Pillow") from e
        raw = self.read_bytes()
        if self.pixel_format is not None:
            mode = {"rgba": "RGBA", "rgb": "RGB", "gray": "L"}[self.pixel_format]
            assert self.width is not None and self.height is not None
            return PILImage.frombuffer(mode, (self.width, self.height), raw, "raw", mode, self.stride or 0, 1)
        return PILImage.open(io.BytesIO(raw))

    def to_numpy(self) -> Any:
        """A ``numpy`` array of shape (height, width, channels), ``uint8``: channels is 4 for
        ``rgba``, 3 for ``rgb`` and 1 for ``gray`` (and for grayscale PNG or original bytes).

        Raw formats (``rgba``, ``rgb``, ``gray``) need only numpy; PNG and original bytes need
        Pillow too, to decode them. Pixels delivered in shared memory are not copied: the array
        maps them (copy-on-write); inline ones (small images, or shared memory without room) are
        copied into it. Writable either way."""
        try:
            import numpy  # type: ignore[import-not-found, unused-ignore]
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_numpy() needs numpy: pip install numpy") from e
        if self.pixel_format is None:
            array = numpy.asarray(self.to_pil())
            return array[:, :, None] if array.ndim == 2 else array
        assert self.width is not None and self.height is not None
        channels = {"rgba": 4, "rgb": 3, "gray": 1}[self.pixel_format]
        stride = self.stride or self.width * channels
        buffer: Optional[memoryview] = getattr(self, "buffer", None)
        # Shared memory: the array is a view of the mapped pixels (copy-on-write), no copy made;
        # inline bytes are immutable, so they are copied (the array is writable either way).
        source = buffer if buffer is not None else bytearray(self.read_bytes())
        rows = numpy.frombuffer(source, dtype=numpy.uint8).reshape(self.height, stride)
        pixels = rows[:, : self.width * channels]
        return pixels.reshape(self.height, self.width, channels)


@dataclass(frozen=True)
class Metrics:
    """Where a download spent its time (every ``download/completed``): milliseconds, bytes,
    counts. A phase that did not happen is None (no new connection for one that reused one;
    nothing transferred for a response served from the cache)."""

    #: from the download request to its fetch starting
    queued_ms: Optional[float] = None
    #: waiting for new connections: DNS, TCP, TLS and a proxy's tunnel together
    connect_ms: Optional[float] = None
    reused_connection: Optional[bool] = None
    #: from the last attempt's start to its response head
    ttfb_ms: Optional[float] = None
    #: from the response head to the body's end
    transfer_ms: Optional[float] = None
    #: decoding, scaling and encoding
    decode_ms: Optional[float] = None
    #: writing the file
    write_ms: Optional[float] = None
    #: body bytes read from the network, every attempt together
    wire_bytes: int = 0
    http_version: Optional[str] = None
    #: ``ip:port`` of the last attempt's connection
    remote_address: Optional[str] = None
    attempts: int = 0
    #: attempts that resumed a body part-way
    resumed: int = 0
    redirects: int = 0
    from_cache: bool = False
    revalidated: bool = False

    WIRE: ClassVar[Dict[str, str]] = {
        "queuedMs": "queued_ms", "connectMs": "connect_ms", "reusedConnection": "reused_connection", "ttfbMs": "ttfb_ms",
        "transferMs": "transfer_ms", "decodeMs": "decode_ms", "writeMs": "write_ms", "wireBytes": "wire_bytes",
        "httpVersion": "http_version", "remoteAddress": "remote_address", "attempts": "attempts", "resumed": "resumed",
        "redirects": "redirects", "fromCache": "from_cache", "revalidated": "revalidated",
    }

    @staticmethod
    def from_wire(m: Any) -> Optional["Metrics"]:
        if not isinstance(m, dict):
            return None

        def number(key: str) -> Optional[float]:
            value = m.get(key)
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        return Metrics(
            queued_ms=number("queuedMs"), connect_ms=number("connectMs"),
            reused_connection=m["reusedConnection"] if isinstance(m.get("reusedConnection"), bool) else None,
            ttfb_ms=number("ttfbMs"), transfer_ms=number("transferMs"), decode_ms=number("decodeMs"),
            write_ms=number("writeMs"), wire_bytes=_int(m.get("wireBytes")) or 0, http_version=_str(m.get("httpVersion")),
            remote_address=_str(m.get("remoteAddress")), attempts=_int(m.get("attempts")) or 0,
            resumed=_int(m.get("resumed")) or 0, redirects=_int(m.get("redirects")) or 0,
            from_cache=m.get("fromCache") is True, revalidated=m.get("revalidated") is True)


@dataclass(frozen=True)
class Image(_Pixels):
    """A finished download: what was delivered and what it is."""

    token: Token
    url: str
    status: int
    byte_length: int
    mime_type: Optional[str]
    #: where redirects led, as fetched (``url`` is the URL exactly as given)
    final_url: str = ""
    source_format: Optional[str] = None
    width: Optional[int] = None
    height: Optional[int] = None
    orientation: Optional[int] = None
    #: the source is an animation (GIF, WebP, AVIF sequence); the image is its first frame
    animated: bool = False
    #: an animated source's frames (1 for a still image)
    frame_count: int = 1
    #: an animated source's repetitions after the first play, 0 forever; None when it does not say
    loop_count: Optional[int] = None
    pixel_format: Optional[str] = None
    stride: Optional[int] = None
    path: Optional[str] = None
    uri: Optional[str] = None
    data: Optional[bytes] = field(default=None, repr=False)
    #: the delivered bytes in shared memory (``delivery="shared"``, the default for raw pixel
    #: formats without ``dir``): mapped; its file, taken from the worker's folder, is given back
    #: for a later image when the last view of it goes
    buffer: Optional[memoryview] = field(default=None, repr=False, compare=False)
    #: the delivered bytes' SHA-256 (hex), when asked (``sha256=True``, a ``{sha256}`` name, a manifest)
    sha256: Optional[str] = None
    #: the SHA-256 of the bytes received (the original), with ``sha256=True``: a thumbnail's
    #: ``sha256`` is the thumbnail's
    source_sha256: Optional[str] = None
    #: the original's size as stored (before scaling and orientation): decoded formats, and
    #: originals with ``verify``; ``width`` and ``height`` are what was delivered
    source_width: Optional[int] = None
    source_height: Optional[int] = None
    #: ``skip_existing`` found the file: kept as it was, nothing fetched (``status`` is 0)
    skipped: bool = False
    #: the worker's HTTP cache (``--cache-dir``) answered: without a request, or after a 304
    from_cache: bool = False
    #: the stored response was revalidated: the server answered 304 to a conditional request
    revalidated: bool = False
    #: where the time went (None for a kept file's event from an older worker)
    metrics: Optional[Metrics] = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    # Wire name -> attribute, for every field the protocol defines (checked against the schema).
    WIRE: ClassVar[Dict[str, str]] = {
        "token": "token", "outcome": "", "url": "url", "finalUrl": "final_url", "status": "status", "byteLength": "byte_length",
        "mimeType": "mime_type", "sourceFormat": "source_format", "width": "width", "height": "height",
        "orientation": "orientation", "pixelFormat": "pixel_format", "stride": "stride", "path": "path",
        "uri": "uri", "data": "data", "shared": "buffer", "sha256": "sha256", "skipped": "skipped", "animated": "animated",
        "frameCount": "frame_count", "loopCount": "loop_count", "fromCache": "from_cache", "revalidated": "revalidated",
        "metrics": "metrics", "sourceSha256": "source_sha256", "sourceWidth": "source_width", "sourceHeight": "source_height",
    }

    @staticmethod
    def from_params(p: Mapping[str, Any]) -> "Image":
        data = _str(p.get("data"))
        path = _str(p.get("path"))
        buffer: Optional[memoryview] = None
        if p.get("shared") is True and path is not None:
            buffer = _shared.take(path)  # the file is the client's: mapped, then held until dropped
            path = None
        return Image(
            token=p["token"], url=str(p.get("url", "")), final_url=str(p.get("finalUrl", "")), status=_int(p.get("status")) or 0,
            byte_length=_int(p.get("byteLength")) or 0, mime_type=_str(p.get("mimeType")),
            source_format=_str(p.get("sourceFormat")), width=_int(p.get("width")), height=_int(p.get("height")),
            orientation=_int(p.get("orientation")), animated=p.get("animated") is True, frame_count=_int(p.get("frameCount")) or 1,
            loop_count=_int(p.get("loopCount")), pixel_format=_str(p.get("pixelFormat")),
            stride=_int(p.get("stride")), path=path, uri=_str(p.get("uri")),
            data=base64.b64decode(data) if data is not None else None, buffer=buffer, sha256=_str(p.get("sha256")),
            source_sha256=_str(p.get("sourceSha256")), source_width=_int(p.get("sourceWidth")), source_height=_int(p.get("sourceHeight")),
            skipped=p.get("skipped") is True, from_cache=p.get("fromCache") is True, revalidated=p.get("revalidated") is True,
            metrics=Metrics.from_wire(p.get("metrics")), raw=dict(p))


@dataclass(frozen=True)
class Event:
    """Base of the events of one download."""

    token: Token
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    METHOD: ClassVar[str] = ""
    WIRE: ClassVar[Dict[str, str]] = {}


@dataclass(frozen=True)
class Started(Event):
    """The download's fetch started (or it joined one under way)."""

    url: str = ""

    METHOD: ClassVar[str] = "download/started"
    WIRE: ClassVar[Dict[str, str]] = {"token": "token", "url": "url"}


@dataclass(frozen=True)
class Response(Event):
    """A 2xx response head arrived."""

    status: int = 0
    expected_bytes: Optional[int] = None
    mime_type: Optional[str] = None
    url: str = ""
    #: where redirects led, as fetched (``url`` is the URL exactly as given)
    final_url: str = ""
    http_version: Optional[str] = None

    METHOD: ClassVar[str] = "download/response"
    WIRE: ClassVar[Dict[str, str]] = {
        "token": "token", "status": "status", "expectedBytes": "expected_bytes", "mimeType": "mime_type",
        "url": "url", "finalUrl": "final_url", "httpVersion": "http_version"}


@dataclass(frozen=True)
class Progress(Event):
    """Bytes received so far (``expected_bytes`` is None without a Content-Length)."""

    received_bytes: int = 0
    expected_bytes: Optional[int] = None

    METHOD: ClassVar[str] = "download/progress"
    WIRE: ClassVar[Dict[str, str]] = {
        "token": "token", "receivedBytes": "received_bytes", "expectedBytes": "expected_bytes"}

    @property
    def fraction(self) -> Optional[float]:
        if not self.expected_bytes:
            return None
        return min(1.0, self.received_bytes / self.expected_bytes)


@dataclass(frozen=True)
class PartialImage(Event, _Pixels):
    """The image so far, while bytes arrive (``progressive=True``): in the download's format and
    size, delivered like the final image (the same file, replaced atomically, or inline data)."""

    sequence: int = 0
    width: Optional[int] = None
    height: Optional[int] = None
    filled_rows: int = 0
    passes: int = 0
    source_format: Optional[str] = None
    orientation: Optional[int] = None
    mime_type: Optional[str] = None
    byte_length: int = 0
    pixel_format: Optional[str] = None
    stride: Optional[int] = None
    path: Optional[str] = None
    uri: Optional[str] = None
    data: Optional[bytes] = field(default=None, repr=False)

    METHOD: ClassVar[str] = "download/partialImage"
    WIRE: ClassVar[Dict[str, str]] = {
        "token": "token", "sequence": "sequence", "width": "width", "height": "height",
        "filledRows": "filled_rows", "passes": "passes", "sourceFormat": "source_format",
        "orientation": "orientation", "mimeType": "mime_type", "byteLength": "byte_length",
        "pixelFormat": "pixel_format", "stride": "stride", "path": "path", "uri": "uri", "data": "data"}


@dataclass(frozen=True)
class Completed(Event):
    """The last event of a download: ``image`` on success, ``error`` otherwise (a
    :class:`Cancelled` error when it was cancelled)."""

    outcome: str = ""
    image: Optional[Image] = None
    error: Optional[DownloadError] = None
    #: the download's URL as given (user information removed)
    url: str = ""

    #: where the time went (on errors and cancellations too)
    metrics: Optional[Metrics] = None

    METHOD: ClassVar[str] = "download/completed"
    WIRE: ClassVar[Dict[str, str]] = {"token": "token", "url": "url", "outcome": "outcome", "error": "error", "metrics": "metrics"}

    @property
    def ok(self) -> bool:
        return self.outcome == "success"


EVENT_TYPES = (Started, Response, Progress, PartialImage, Completed)


def parse_event(method: str, p: Mapping[str, Any], url: Optional[str] = None) -> Optional[Event]:
    """The typed event for a ``download/*`` notification's params (None for an unknown method)."""
    token = p.get("token")
    if not isinstance(token, (str, int)):
        return None
    raw = dict(p)
    if method == Started.METHOD:
        return Started(token, raw, url=str(p.get("url", "")))
    if method == Response.METHOD:
        return Response(token, raw, status=_int(p.get("status")) or 0, expected_bytes=_int(p.get("expectedBytes")),
                        mime_type=_str(p.get("mimeType")), url=str(p.get("url", "")),
                        final_url=str(p.get("finalUrl", "")), http_version=_str(p.get("httpVersion")))
    if method == Progress.METHOD:
        return Progress(token, raw, received_bytes=_int(p.get("receivedBytes")) or 0,
                        expected_bytes=_int(p.get("expectedBytes")))
    if method == PartialImage.METHOD:
        data = _str(p.get("data"))
        return PartialImage(
            token, raw, sequence=_int(p.get("sequence")) or 0, width=_int(p.get("width")),
            height=_int(p.get("height")), filled_rows=_int(p.get("filledRows")) or 0,
            passes=_int(p.get("passes")) or 0, source_format=_str(p.get("sourceFormat")),
            orientation=_int(p.get("orientation")), mime_type=_str(p.get("mimeType")),
            byte_length=_int(p.get("byteLength")) or 0, pixel_format=_str(p.get("pixelFormat")),
            stride=_int(p.get("stride")), path=_str(p.get("path")), uri=_str(p.get("uri")),
            data=base64.b64decode(data) if data is not None else None)
    if method == Completed.METHOD:
        outcome = str(p.get("outcome", ""))
        if outcome == "success":
            try:
                image = Image.from_params(p)
            except OSError as e:  # a shared-memory file that cannot be taken: this download fails alone
                failure = download_error({"code": 1010, "message": f"the result in shared memory could not be read: {e}",
                                          "data": {"name": "OutputFailed", "path": p.get("path")}},
                                         token=token, url=url or _str(p.get("url")))
                failure.metrics = Metrics.from_wire(p.get("metrics"))
                return Completed(token, raw, outcome="error", url=str(p.get("url", url or "")), error=failure,
                                 metrics=failure.metrics)
            return Completed(token, raw, outcome=outcome, image=image, url=str(p.get("url", "")), metrics=image.metrics)
        error = p.get("error")
        metrics = Metrics.from_wire(p.get("metrics"))
        failure = download_error(error if isinstance(error, dict) else {}, token=token, url=url or _str(p.get("url")))
        failure.metrics = metrics
        return Completed(token, raw, outcome=outcome, url=str(p.get("url", url or "")), error=failure, metrics=metrics)
    return None
