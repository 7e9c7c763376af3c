"""Typed events of a download, parsed from the worker's ``download/*`` notifications."""

from __future__ import annotations

import base64
import dataclasses
import io
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Mapping, Optional, Tuple, Union

from . import _shared
from ._errors import DownloadError, download_error
from ._event_table import EVENT_WIRE, IMAGE_WIRE, METRICS_WIRE

Token = Union[str, int]


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


#: How a wire value becomes an attribute of each type (the dataclasses' annotations): a value of
#: the wrong type is taken as absent.
_READERS: Dict[str, Any] = {
    "int": _int, "Optional[int]": _int, "str": _str, "Optional[str]": _str, "Optional[float]": _number,
    "bool": lambda v: v is True, "Optional[bool]": lambda v: v if isinstance(v, bool) else None,
    "Optional[bytes]": lambda v: base64.b64decode(v) if isinstance(v, str) else None,
    "Optional[Metrics]": lambda v: Metrics.from_wire(v),
}


#: What an attribute without a default is when its wire value is absent.
_ABSENT: Dict[str, Any] = {"int": 0, "str": "", "bool": False}


def _attributes(cls: Any, p: Mapping[str, Any], wire: Mapping[str, str], skip: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """``cls``'s attributes from the params ``p`` by ``wire`` (wire name -> attribute): each read as
    its annotation says, its default where the value is absent or of another type."""
    types = {f.name: f for f in dataclasses.fields(cls)}
    out: Dict[str, Any] = {}
    for wire_name, name in wire.items():
        if not name or name in skip:
            continue
        f = types[name]
        kind = str(f.type)
        value = _READERS[kind](p.get(wire_name))
        if value is None:
            value = f.default if f.default is not dataclasses.MISSING else _ABSENT.get(kind)
        out[name] = value
    return out


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

    WIRE: ClassVar[Dict[str, str]] = METRICS_WIRE

    @staticmethod
    def from_wire(m: Any) -> Optional["Metrics"]:
        if not isinstance(m, dict):
            return None
        return Metrics(**_attributes(Metrics, m, Metrics.WIRE))


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

    # Wire name -> attribute, for every field the protocol defines (generated from the schema).
    WIRE: ClassVar[Dict[str, str]] = IMAGE_WIRE

    @staticmethod
    def from_params(p: Mapping[str, Any]) -> "Image":
        values = _attributes(Image, p, Image.WIRE, skip=("token", "buffer"))
        if p.get("shared") is True and values["path"] is not None:
            # The file is the client's: mapped, then held until dropped.
            values["buffer"] = _shared.take(values["path"])
            values["path"] = None
        return Image(token=p["token"], url=str(p.get("url", "")), raw=dict(p), **{k: v for k, v in values.items() if k != "url"})


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
    WIRE: ClassVar[Dict[str, str]] = EVENT_WIRE["download/started"]


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
    WIRE: ClassVar[Dict[str, str]] = EVENT_WIRE["download/response"]


@dataclass(frozen=True)
class Progress(Event):
    """Bytes received so far (``expected_bytes`` is None without a Content-Length)."""

    received_bytes: int = 0
    expected_bytes: Optional[int] = None

    METHOD: ClassVar[str] = "download/progress"
    WIRE: ClassVar[Dict[str, str]] = EVENT_WIRE["download/progress"]

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
    WIRE: ClassVar[Dict[str, str]] = EVENT_WIRE["download/partialImage"]


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
    WIRE: ClassVar[Dict[str, str]] = EVENT_WIRE["download/completed"]

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
    for cls in (Started, Response, Progress, PartialImage):
        if method == cls.METHOD:
            return cls(token, raw, **_attributes(cls, p, cls.WIRE, skip=("token",)))
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
