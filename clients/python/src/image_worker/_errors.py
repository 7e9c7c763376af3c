"""Exceptions: one class per download error code of the protocol, and the worker's own."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Type


class ImageWorkerError(Exception):
    """Base of everything this package raises."""


class ImageWorkerWarning(UserWarning):
    """What the worker wants its user to know that fails nothing (``worker/warning`` in
    protocol/SPEC.md: shared memory full, a proxy setting skipped), given to
    :func:`warnings.warn` once per ``code`` and logged on the ``image_worker`` logger."""

    def __init__(self, code: str, message: str, details: Optional[Mapping[str, str]] = None) -> None:
        super().__init__(f"image-worker: {message}")
        self.code = code
        self.message = message
        self.details: Dict[str, str] = dict(details or {})


class BinaryNotFound(ImageWorkerError):
    """No image-worker executable was found; the message lists every place looked."""


class WorkerExited(ImageWorkerError):
    """The worker process ended (crashed, was killed, or exited) while work was pending.

    ``stderr`` holds its last lines of standard error, also shown in the message."""

    def __init__(self, returncode: Optional[int], stderr: Sequence[str], what: str = "the worker exited") -> None:
        self.returncode = returncode
        self.stderr = list(stderr)
        status = "still running" if returncode is None else (
            f"killed by signal {-returncode}" if returncode < 0 else f"exit status {returncode}")
        tail = "\n".join("  " + line for line in self.stderr) if self.stderr else "  (nothing on stderr)"
        super().__init__(f"{what} ({status}); its last stderr lines:\n{tail}")


class WorkerClosed(ImageWorkerError):
    """The worker was closed by this program; nothing more can be sent."""


class RequestError(ImageWorkerError):
    """The worker answered a request with a JSON-RPC error (e.g. -32602, invalid params)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(f"{message} (JSON-RPC error {code})")


class DownloadError(ImageWorkerError):
    """A download ended with an error. Subclasses name the protocol's error codes."""

    code: int = 0
    name: str = "DownloadError"
    #: where the time went before the error (an ``image_worker.Metrics``), when the event said
    metrics: Any = None

    def __init__(self, message: str, *, token: Any = None, url: Optional[str] = None,
                 code: Optional[int] = None, data: Optional[Mapping[str, Any]] = None) -> None:
        self.message = message
        self.token = token
        self.url = url
        self.data: Dict[str, Any] = dict(data or {})
        if code is not None:
            self.code = code
        self.name = str(self.data.get("name", type(self).name))
        where = f" ({url})" if url else ""
        # Without the name, which a traceback and f"{type(e).__name__}: {e}" add once.
        said = f"the download was {self.name.lower()}" if message == self.name else message
        super().__init__(f"{said}{where}")

    @property
    def attempts(self) -> Optional[int]:
        """Attempts made, when there were several (retries) or the download ended at its
        ``deadline_ms``; None otherwise."""
        value = self.data.get("attempts")
        return value if isinstance(value, int) else None

    @property
    def earlier_attempts(self) -> List[Dict[str, Any]]:
        """Why each attempt before the last ended: its error object (``code``, ``message``,
        ``data``), in order."""
        value = self.data.get("earlierAttempts")
        return [dict(e) for e in value if isinstance(e, dict)] if isinstance(value, list) else []


class InvalidURL(DownloadError):
    """The URL is empty or unparsable, its scheme unsupported, its host missing or its port outside
    1–65535 (a redirect's ``Location`` too)."""

    code, name = 1001, "InvalidURL"


class BadImageData(DownloadError):
    """The body is empty, cut short, or not an image its format's decoder accepts (the message says
    which)."""

    code, name = 1002, "BadImageData"


class CacheNotModified(DownloadError):
    """The server answered 304 and there is no stored copy to fall back on."""

    code, name = 1003, "CacheNotModified"


class InvalidDownloadOperation(DownloadError):
    """Refused before sending: a ``file://`` URL without ``--file-root`` or outside it, or not a
    regular file."""

    code, name = 1004, "InvalidDownloadOperation"


class InvalidDownloadStatusCode(DownloadError):
    """The server answered a status outside 2xx (after redirects): :attr:`status_code`, and the
    ``Retry-After`` it sent."""

    code, name = 1005, "InvalidDownloadStatusCode"

    @property
    def status_code(self) -> Optional[int]:
        value = self.data.get("statusCode")
        return value if isinstance(value, int) else None

    @property
    def retry_after_seconds(self) -> Optional[float]:
        value = self.data.get("retryAfterSeconds")
        return float(value) if isinstance(value, (int, float)) else None


class NetworkError(DownloadError):
    """The transport failed; :attr:`reason` says how (``timeout``, ``deadline``, ``dns``, ``tls``,
    ``connection``, ``reset``, ``truncated``, ``redirect``, ``protocol``, ``io``, ``notCached``,
    ``hostDown``, ``proxy``)."""

    code, name = 1006, "NetworkError"

    @property
    def reason(self) -> Optional[str]:
        value = self.data.get("reason")
        return value if isinstance(value, str) else None


class LimitExceeded(DownloadError):
    """A limit was reached, most before any pixel buffer: :attr:`limit` is ``bodyBytes``, ``pixels``,
    ``scans`` or ``frames``."""

    code, name = 1007, "LimitExceeded"

    @property
    def limit(self) -> Optional[str]:
        value = self.data.get("limit")
        return value if isinstance(value, str) else None


class UnsupportedFormat(DownloadError):
    """A decoded format was asked and the bytes are in none the worker decodes (BMP, TIFF, HEIC…),
    or a variant its libraries do not (12-bit JPEG)."""

    code, name = 1008, "UnsupportedFormat"


class BlockedURL(DownloadError):
    """The URL failed recently and is on the failed-URL list; ``retry_failed=True`` tries it again."""

    code, name = 1009, "BlockedURL"


class OutputFailed(DownloadError):
    """The result could not be written where ``output`` asked (``data["path"]``)."""

    code, name = 1010, "OutputFailed"


class Filtered(DownloadError):
    """The image's size, read from its header before any decode, fails one of the download's
    filters (``min_image_size``, ``max_image_area``, ``max_aspect_ratio``): :attr:`filter` names it."""

    code, name = 1011, "Filtered"

    @property
    def filter(self) -> Optional[str]:
        value = self.data.get("filter")
        return value if isinstance(value, str) else None


class OptedOut(DownloadError):
    """The response's ``X-Robots-Tag`` says a directive on the worker's
    ``disallowed_header_directives`` (``noai``, ``noimageai``…): the site opts out, and the body was
    not read. :attr:`directives` lists the ones it said."""

    code, name = 1012, "OptedOut"

    @property
    def directives(self) -> List[str]:
        value = self.data.get("directives")
        return [str(v) for v in value] if isinstance(value, list) else []


class Cancelled(DownloadError):
    """Cancelled: by ``cancel``, ``cancel_all``, ``close(cancel_pending=True)``, or a signal."""

    code, name = -32800, "Cancelled"


ERRORS_BY_CODE: Dict[int, Type[DownloadError]] = {
    cls.code: cls
    for cls in (InvalidURL, BadImageData, CacheNotModified, InvalidDownloadOperation, InvalidDownloadStatusCode,
                NetworkError, LimitExceeded, UnsupportedFormat, BlockedURL, OutputFailed, Filtered, OptedOut, Cancelled)
}


def download_error(error: Mapping[str, Any], *, token: Any = None, url: Optional[str] = None) -> DownloadError:
    """The exception for a ``download/completed`` event's ``error`` object."""
    code = error.get("code")
    data = error.get("data")
    cls = ERRORS_BY_CODE.get(code, DownloadError) if isinstance(code, int) else DownloadError
    return cls(str(error.get("message", "download failed")), token=token, url=url,
               code=code if isinstance(code, int) else None,
               data=data if isinstance(data, dict) else None)
