"""Drive the image-worker subprocess from Python.

    from image_worker import Worker

    with Worker() as worker:
        handle = worker.download("https://example.org/a.jpg", dir="images", format="png")
        for event in handle:
            print(event)
        image = handle.result()          # or raises a DownloadError subclass
        print(image.path, image.width, image.height)

See README.md for AsyncWorker, partial images and download_many.
"""

from typing import TYPE_CHECKING, Any

from ._binary import find_binary
from ._bulk import Failed, Outcome, Succeeded
from ._dataset import DatasetResult, download_dataset
from ._errors import (
    ERRORS_BY_CODE,
    BadImageData,
    BinaryNotFound,
    BlockedURL,
    CacheNotModified,
    Cancelled,
    DownloadError,
    Filtered,
    ImageWorkerError,
    ImageWorkerWarning,
    InvalidDownloadOperation,
    InvalidDownloadStatusCode,
    InvalidURL,
    LimitExceeded,
    NetworkError,
    OptedOut,
    OutputFailed,
    RequestError,
    UnsupportedFormat,
    WorkerClosed,
    WorkerExited,
)
from ._events import EVENT_TYPES, Completed, Event, Image, Metrics, PartialImage, Progress, Response, Started
from ._options import CachePolicy, ChromaSubsampling, DownloadOptions, ExecutionOrder, Format, ManyOptions, Priority, Settings, Token
from ._worker import DownloadHandle, Worker, download_many, iter_downloads

if TYPE_CHECKING:
    from ._async import AsyncDownloadHandle, AsyncWorker


def __getattr__(name: str) -> Any:
    # The asyncio API is imported when first used: asyncio costs a script that never uses it
    # about 90 ms at start, a tenth of a thousand-file job.
    if name in ("AsyncWorker", "AsyncDownloadHandle"):
        from . import _async
        return getattr(_async, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"
PROTOCOL_VERSION = "1"

__all__ = [
    "AsyncDownloadHandle", "AsyncWorker", "BadImageData", "BinaryNotFound", "BlockedURL", "CacheNotModified",
    "CachePolicy", "Cancelled", "ChromaSubsampling", "Completed", "DatasetResult", "DownloadError", "DownloadHandle", "DownloadOptions",
    "ERRORS_BY_CODE", "EVENT_TYPES", "Event", "ExecutionOrder", "Failed", "Filtered", "Format", "Image", "ImageWorkerError",
    "ImageWorkerWarning", "InvalidDownloadOperation", "InvalidDownloadStatusCode", "InvalidURL", "LimitExceeded", "ManyOptions", "Metrics",
    "NetworkError", "OptedOut", "Outcome", "OutputFailed", "PROTOCOL_VERSION", "PartialImage", "Priority", "Progress",
    "RequestError", "Response", "Settings", "Started", "Succeeded", "Token", "UnsupportedFormat", "Worker",
    "WorkerClosed", "WorkerExited", "download_dataset", "download_many", "find_binary", "iter_downloads",
]
