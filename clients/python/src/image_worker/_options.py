"""The options of ``download`` and ``configure``: typed for the type checker (``TypedDict``s of
``Literal``s, used as ``**options: Unpack[DownloadOptions]``) and checked at run time before
anything is sent, each bad one a :class:`RequestError` naming it. The ranges are the worker's
(protocol/schema/; a test keeps the two equal)."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Literal, Mapping, Optional, Sequence, Tuple, TypedDict, Union, cast

from ._errors import RequestError

Token = Union[str, int]
Priority = Literal["veryLow", "low", "normal", "high", "veryHigh"]
Format = Literal["original", "png", "jpeg", "webp", "rgba", "rgb", "gray"]
ChromaSubsampling = Literal["4:2:0", "4:2:2", "4:4:4"]
ExecutionOrder = Literal["fifo", "lifo"]
CachePolicy = Literal["default", "reload", "preferCache", "cacheOnly"]
PathLike = Union[str, "os.PathLike[str]"]

PRIORITIES: Tuple[str, ...] = ("veryLow", "low", "normal", "high", "veryHigh")
FORMATS: Tuple[str, ...] = ("original", "png", "jpeg", "webp", "rgba", "rgb", "gray")
CHROMA_SUBSAMPLINGS: Tuple[str, ...] = ("4:2:0", "4:2:2", "4:4:4")
EXECUTION_ORDERS: Tuple[str, ...] = ("fifo", "lifo")
CACHE_POLICIES: Tuple[str, ...] = ("default", "reload", "preferCache", "cacheOnly")

#: JSON-RPC's "invalid params", the code the worker would answer with.
INVALID_PARAMS = -32602
#: An HTTP token (RFC 9110 5.1): what a header name may be.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


class ManyOptions(TypedDict, total=False):
    """What :func:`download_many` passes on to each download (``dir`` is its own argument)."""

    #: deliver a file at this path
    path: PathLike
    #: deliver the bytes in the completed event (``Image.data``)
    inline: bool
    #: ``original`` (default; ``png`` with ``progressive``), decoded to ``png``, ``jpeg`` or
    #: ``webp``, or raw ``rgba``/``rgb``/``gray`` (JPEG, PNG, WebP, GIF and AVIF are decoded)
    format: Format
    #: ``jpeg`` or ``webp``: 1-100 (defaults 90 and 80; with ``lossless``, WebP's effort)
    quality: int
    #: ``webp``: lossless instead of lossy
    lossless: bool
    #: ``jpeg``: how colour is stored (default ``"4:2:0"``)
    chroma_subsampling: ChromaSubsampling
    #: partial images while bytes arrive
    progressive: bool
    #: only the terminal event: no started, response or progress events (not with ``progressive``;
    #: the bulk helpers set it when they show no progress bar)
    quiet: bool
    priority: Priority
    headers: Mapping[str, str]
    #: idle timeout per attempt
    timeout_ms: int
    #: wall-clock limit from the download's start to its body, over every attempt (``NetworkError``
    #: with ``reason == "deadline"`` past it)
    deadline_ms: int
    #: retries after a transient failure, for this download (default: the worker's ``max_retries``)
    max_retries: int
    #: the first retry's delay for this download, doubling each time
    retry_delay_ms: int
    #: ``(user, password)`` for basic authentication
    credentials: Tuple[str, str]
    allow_invalid_certificates: bool
    handle_cookies: bool
    retry_failed: bool
    #: how the worker's HTTP cache (``--cache-dir``) answers: ``"default"`` (RFC 9111), ``"reload"``
    #: (ignore stored responses), ``"preferCache"`` (any stored copy, else load), ``"cacheOnly"``
    #: (a stored copy or :class:`NetworkError` with reason ``notCached``)
    cache_policy: CachePolicy
    max_pixel_size: int
    max_pixel_count: int
    apply_orientation: bool
    overwrite: bool
    #: with ``dir``: name files by ``{token}``, ``{name}``, ``{ext}``, ``{host}``, ``{sha256:8}``…
    #: (the bulk helpers add ``{index}``, the URL's position, ``{index:5}`` zero-padded)
    name_template: str
    #: keep a target file that exists already: nothing fetched, ``Image.skipped`` is True
    skip_existing: bool
    #: ``original``: refuse bytes that are not an image (``UnsupportedFormat``), report the
    #: header's width and height (default True in the bulk helpers)
    verify: bool
    #: report the delivered bytes' SHA-256 (``Image.sha256``; default True with a manifest)
    sha256: bool
    partial_interval_ms: int
    #: partial images no larger than this on their longest side (the final image keeps its size)
    partial_max_pixel_size: int


class DownloadOptions(ManyOptions, total=False):
    """What :meth:`Worker.download` takes besides the URL (protocol/SPEC.md, ``download``)."""

    #: deliver a file into this directory, named after the URL (or ``name``, ``name_template``)
    dir: PathLike
    #: with ``dir``: the file's name, as given (a relative path)
    name: str


class Settings(TypedDict, total=False):
    """What :meth:`Worker.configure` takes (protocol/SPEC.md, ``configure``)."""

    max_concurrent_downloads: int
    #: fetches running at once for one host (scheme, host, port); default 6
    max_concurrent_per_host: int
    #: fetch starts per second for one host, evenly spaced; 0: no limit (the default)
    max_requests_per_second_per_host: float
    execution_order: ExecutionOrder
    suspended: bool
    timeout_ms: int
    headers: Mapping[str, str]
    minimum_progress_interval: float
    progress_interval_ms: int
    max_retries: int
    retry_base_delay_ms: int
    retry_max_delay_ms: int
    max_body_bytes: int
    max_redirects: int
    failed_url_expiry_ms: int
    user_agent: str
    max_pixels: int
    max_progressive_scans: int
    #: animated GIF, WebP and AVIF files with more frames fail (``LimitExceeded``, limit ``frames``)
    max_frames: int
    #: tokens decoding, scaling, encoding or writing at once (default: the CPU count)
    decode_concurrency: int
    #: bytes of bitmaps of the decodes in flight, by their headers' sizes in RGBA (default 256 MiB)
    decode_memory_bytes: int
    #: shared-memory results written and not yet taken, at most (files; default 64)
    shared_max_images: int
    #: … and in bytes (default 256 MiB)
    shared_max_bytes: int
    #: downloads live at once (default 10,000): past it the worker reads no more requests until one
    #: ends (writes to it wait); while suspended it refuses downloads (-32001)
    max_live_downloads: int
    #: the HTTP cache's size on disk (``--cache-dir``); least recently used entries go past it (1 GiB)
    cache_max_bytes: int
    #: a proxy for http and https URLs alike: ``http://[user:pass@]host[:port]`` (CONNECT tunnels
    #: for https too) or ``socks5://host[:port]``; ``""`` for none. Default: the worker's
    #: environment (``http_proxy``, ``https_proxy``, ``all_proxy``, ``no_proxy``, either case)
    proxy: str
    #: the proxy for http URLs only (``""`` for none); reported without its password
    http_proxy: str
    #: the proxy for https URLs only (``""`` for none); reported without its password
    https_proxy: str
    #: hosts reached directly: comma-separated names (with subdomains), IPs, CIDR ranges, ``:port``, ``*``
    no_proxy: str
    #: ``True`` empties the failed-URL list (not a setting)
    clear_failed_urls: bool


@dataclass(frozen=True)
class Rule:
    """One option: where it goes on the wire and what it may be."""

    wire: str
    #: 'bool', 'int', 'number', 'string', 'text' (a string that may be empty), 'enum', 'headers', 'credentials', 'path'
    kind: str
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    choices: Tuple[str, ...] = ()
    #: in ``output`` rather than at the top of the params
    output: bool = False


DOWNLOAD_RULES: Dict[str, Rule] = {
    "dir": Rule("dir", "path", output=True),
    "path": Rule("path", "path", output=True),
    "inline": Rule("delivery", "bool", output=True),
    "format": Rule("format", "enum", choices=FORMATS, output=True),
    "progressive": Rule("progressive", "bool"),
    "quiet": Rule("quiet", "bool"),
    "priority": Rule("priority", "enum", choices=PRIORITIES),
    "headers": Rule("headers", "headers"),
    "timeout_ms": Rule("timeoutMs", "int", 1, 86_400_000),
    "deadline_ms": Rule("deadlineMs", "int", 1, 86_400_000),
    "max_retries": Rule("maxRetries", "int", 0, 20),
    "retry_delay_ms": Rule("retryDelayMs", "int", 0, 600_000),
    "credentials": Rule("credentials", "credentials"),
    "allow_invalid_certificates": Rule("allowInvalidCertificates", "bool"),
    "handle_cookies": Rule("handleCookies", "bool"),
    "retry_failed": Rule("retryFailed", "bool"),
    "cache_policy": Rule("cachePolicy", "enum", choices=CACHE_POLICIES),
    "max_pixel_size": Rule("maxPixelSize", "int", 1, 1_000_000, output=True),
    "max_pixel_count": Rule("maxPixelCount", "int", 1, 1_000_000_000_000, output=True),
    "apply_orientation": Rule("applyOrientation", "bool", output=True),
    "overwrite": Rule("overwrite", "bool", output=True),
    "name": Rule("name", "string", output=True),
    "name_template": Rule("nameTemplate", "string", output=True),
    "skip_existing": Rule("skipExisting", "bool", output=True),
    "verify": Rule("verify", "bool", output=True),
    "sha256": Rule("sha256", "bool", output=True),
    "partial_interval_ms": Rule("partialIntervalMs", "int", 0, 3_600_000, output=True),
    "partial_max_pixel_size": Rule("partialMaxPixelSize", "int", 1, 1_000_000, output=True),
    "quality": Rule("quality", "int", 1, 100, output=True),
    "lossless": Rule("lossless", "bool", output=True),
    "chroma_subsampling": Rule("chromaSubsampling", "enum", choices=CHROMA_SUBSAMPLINGS, output=True),
}

SETTING_RULES: Dict[str, Rule] = {
    "max_concurrent_downloads": Rule("maxConcurrentDownloads", "int", 1, 1024),
    "max_concurrent_per_host": Rule("maxConcurrentPerHost", "int", 1, 1024),
    "max_requests_per_second_per_host": Rule("maxRequestsPerSecondPerHost", "number", 0, 1_000_000),
    "execution_order": Rule("executionOrder", "enum", choices=EXECUTION_ORDERS),
    "suspended": Rule("suspended", "bool"),
    "timeout_ms": Rule("timeoutMs", "int", 1, 86_400_000),
    "headers": Rule("headers", "headers"),
    "minimum_progress_interval": Rule("minimumProgressInterval", "number", 0, 1),
    "progress_interval_ms": Rule("progressIntervalMs", "int", 0, 3_600_000),
    "max_retries": Rule("maxRetries", "int", 0, 20),
    "retry_base_delay_ms": Rule("retryBaseDelayMs", "int", 0, 600_000),
    "retry_max_delay_ms": Rule("retryMaxDelayMs", "int", 0, 3_600_000),
    "max_body_bytes": Rule("maxBodyBytes", "int", 1, 1 << 40),
    "max_redirects": Rule("maxRedirects", "int", 0, 100),
    "failed_url_expiry_ms": Rule("failedURLExpiryMs", "int", 0, 1 << 40),
    "user_agent": Rule("userAgent", "string"),
    "max_pixels": Rule("maxPixels", "int", 1, 1 << 40),
    "max_progressive_scans": Rule("maxProgressiveScans", "int", 1, 100_000),
    "max_frames": Rule("maxFrames", "int", 1, 10_000_000),
    "decode_concurrency": Rule("decodeConcurrency", "int", 1, 1024),
    "decode_memory_bytes": Rule("decodeMemoryBytes", "int", 1 << 20, 1 << 40),
    "shared_max_images": Rule("sharedMaxImages", "int", 1, 1_000_000),
    "shared_max_bytes": Rule("sharedMaxBytes", "int", 1 << 20, 1 << 40),
    "max_live_downloads": Rule("maxLiveDownloads", "int", 1, 10_000_000),
    "cache_max_bytes": Rule("cacheMaxBytes", "int", 0, 1 << 50),
    "proxy": Rule("proxy", "text"),
    "http_proxy": Rule("httpProxy", "text"),
    "https_proxy": Rule("httpsProxy", "text"),
    "no_proxy": Rule("noProxy", "text"),
    "clear_failed_urls": Rule("clearFailedURLs", "bool"),
}


def invalid(option: str, message: str) -> RequestError:
    """The error for a bad option, as the worker would answer it, raised before anything is sent."""
    return RequestError(INVALID_PARAMS, f"{option}: {message}", {"option": option})


def _bounds(rule: Rule) -> str:
    low = "" if rule.minimum is None else f"{rule.minimum:,.0f}" if rule.kind == "int" else f"{rule.minimum:g}"
    high = "" if rule.maximum is None else f"{rule.maximum:,.0f}" if rule.kind == "int" else f"{rule.maximum:g}"
    return f" in {low}…{high}"


def check(option: str, value: Any, rule: Rule) -> Any:
    """``value`` as sent on the wire, or :class:`RequestError` naming ``option``."""
    if rule.kind == "bool":
        if not isinstance(value, bool):
            raise invalid(option, f"must be True or False, not {value!r}")
        return value
    if rule.kind in ("int", "number"):
        wanted = int if rule.kind == "int" else (int, float)
        if isinstance(value, bool) or not isinstance(value, wanted):
            raise invalid(option, f"must be {'an integer' if rule.kind == 'int' else 'a number'}{_bounds(rule)}, not {value!r}")
        if (rule.minimum is not None and value < rule.minimum) or (rule.maximum is not None and value > rule.maximum):
            raise invalid(option, f"must be{_bounds(rule)}, not {value!r}")
        return value
    if rule.kind == "enum":
        if value not in rule.choices:
            raise invalid(option, f"must be one of {', '.join(rule.choices)}, not {value!r}")
        return value
    if rule.kind == "string":
        if not isinstance(value, str) or not value or any(c in value for c in "\r\n\0"):
            raise invalid(option, f"must be a non-empty string without CR, LF or NUL, not {value!r}")
        return value
    if rule.kind == "text":
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            raise invalid(option, f"must be a string without CR, LF or NUL, not {value!r}")
        return value
    if rule.kind == "path":
        if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
            raise invalid(option, f"must be a non-empty path, not {value!r}")
        return str(os.fspath(value))
    if rule.kind == "headers":
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise invalid(option, f"must be a mapping of header names to strings, not {value!r}")
        for name, text in value.items():
            if not _HEADER_NAME.fullmatch(name):
                raise invalid(option, f"{name!r} is not a valid header name")
            if any(c in text for c in "\r\n\0"):
                raise invalid(option, f"the value of header {name!r} contains CR, LF or NUL")
        return dict(value)
    if rule.kind == "credentials":
        if not (isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, str) for v in value)):
            raise invalid(option, "must be a (user, password) pair of strings")
        return {"user": value[0], "password": value[1]}
    raise AssertionError(rule.kind)


def _unknown(kind: str, option: str, known: Sequence[str]) -> RequestError:
    close = difflib.get_close_matches(option, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else f"; known: {', '.join(sorted(known))}"
    return invalid(option, f"unknown {kind} option{hint}")


def download_params(url: str, token: Token, options: Mapping[str, Any]) -> Dict[str, Any]:
    """The ``download`` params for ``options`` (see :class:`DownloadOptions`), checked as the
    worker would check them; :class:`RequestError` names the first bad option. ``dir`` or
    ``path`` delivers a file, ``inline=True`` the bytes in the event (base64); with neither, a
    decoded format comes through shared memory (``Image.buffer``, ``to_numpy()`` without a copy)
    and ``original`` bytes only as metadata.
    ``progressive`` without a ``format`` means PNG (partial images need a decoded format)."""
    if not isinstance(url, str):
        raise invalid("url", f"must be a string, not {url!r}")
    if isinstance(token, bool) or not isinstance(token, (str, int)) or token == "":
        raise invalid("token", f"must be a non-empty string or an integer, not {token!r}")
    params: Dict[str, Any] = {"url": url, "token": token}
    output: Dict[str, Any] = {}
    for option, value in options.items():
        rule = DOWNLOAD_RULES.get(option)
        if rule is None:
            raise _unknown("download", option, list(DOWNLOAD_RULES))
        if value is None:  # None means "not given", as the defaults of a spelled-out signature would
            continue
        (output if rule.output else params)[rule.wire] = check(option, value, rule)
    given = {k for k, v in options.items() if v is not None}
    if "dir" in given and "path" in given:
        raise invalid("path", "give dir or path, not both")
    if output.pop("delivery", False):
        if "dir" in given or "path" in given:
            raise invalid("inline", "inline=True delivers the bytes in the event: no dir or path with it")
        output["delivery"] = "inline"
    elif "dir" in given or "path" in given:
        output["delivery"] = "file"
    elif output.get("format", "original") != "original" or params.get("progressive"):
        # A decoded image with no file asked for: its bytes through shared memory (to_numpy() maps
        # them), or inline when small; never base64 of megabytes of pixels.
        output["delivery"] = "shared"
    if ("name" in given or "name_template" in given) and "dir" not in given:
        raise invalid("name" if "name" in given else "name_template", "goes with dir")
    if "name" in given and "name_template" in given:
        raise invalid("name_template", "give name or name_template, not both")
    if options.get("skip_existing") and not ("dir" in given or "path" in given):
        raise invalid("skip_existing", "goes with dir or path")
    if options.get("skip_existing") and options.get("overwrite"):
        raise invalid("skip_existing", "skip_existing and overwrite exclude each other")
    if not params.get("progressive", True):
        del params["progressive"]
    if not params.get("quiet", True):
        del params["quiet"]
    if params.get("quiet") and params.get("progressive"):
        raise invalid("quiet", "quiet sends only the terminal event: no partial images (progressive)")
    if params.get("progressive") and "format" not in output:
        output["format"] = "png"
    decoded = output.get("format", "original") != "original"
    if params.get("progressive") and not decoded:
        raise invalid("format", "progressive needs a decoded format (png, jpeg, webp, rgba, rgb or gray), for its partial images")
    if not decoded:
        for option in ("max_pixel_size", "max_pixel_count", "partial_max_pixel_size"):
            if option in given:
                raise invalid(option, "needs a decoded format (png, jpeg, webp, rgba, rgb or gray)")
        if options.get("apply_orientation"):
            raise invalid("apply_orientation", "needs a decoded format (png, jpeg, webp, rgba, rgb or gray)")
    encoded_as = output.get("format")
    if "quality" in given and encoded_as not in ("jpeg", "webp"):
        raise invalid("quality", "goes with format jpeg or webp")
    if options.get("lossless") and encoded_as != "webp":
        raise invalid("lossless", "goes with format webp")
    if "chroma_subsampling" in given and encoded_as != "jpeg":
        raise invalid("chroma_subsampling", "goes with format jpeg")
    if output:
        params["output"] = output
    return params


def configure_params(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """``configure`` params for ``settings`` (see :class:`Settings`: snake_case, or the wire's
    own names), checked as the worker would check them."""
    by_wire = {rule.wire: name for name, rule in SETTING_RULES.items()}
    params: Dict[str, Any] = {}
    for option, value in settings.items():
        name = option if option in SETTING_RULES else by_wire.get(option)
        if name is None:
            raise _unknown("configure", option, list(SETTING_RULES))
        rule = SETTING_RULES[name]
        params[rule.wire] = check(option, value, rule)
    return params


def check_priority(priority: Any) -> Priority:
    """``priority`` if it is one, or :class:`RequestError` naming it."""
    return cast(Priority, check("priority", priority, DOWNLOAD_RULES["priority"]))
