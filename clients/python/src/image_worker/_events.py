"""Typed events of a download, parsed from the worker's ``download/*`` notifications.

The classes and their attributes are generated from the schema (``_event_types.py``); this module
reads the wire's params into them."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

from . import _shared
from ._errors import download_error
from ._event_base import Event, Token
from ._event_types import EVENT_TYPES, Completed, Image, Metrics, PartialImage, Progress, Response, Started

__all__ = ["EVENT_TYPES", "Completed", "Event", "Image", "Metrics", "PartialImage", "Progress", "Response", "Started",
           "Token", "parse_event"]


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _metrics(m: Any) -> Optional[Metrics]:
    if not isinstance(m, dict):
        return None
    return Metrics(**_attributes(Metrics, m, Metrics.WIRE))


#: How a wire value becomes an attribute of each type (the dataclasses' annotations): a value of
#: the wrong type is taken as absent.
_READERS: Dict[str, Any] = {
    "int": _int, "Optional[int]": _int, "str": _str, "Optional[str]": _str, "float": _number, "Optional[float]": _number,
    "bool": lambda v: v is True, "Optional[bool]": lambda v: v if isinstance(v, bool) else None,
    "Optional[bytes]": lambda v: base64.b64decode(v) if isinstance(v, str) else None,
    "Optional[Metrics]": _metrics,
    "Optional[List[int]]": lambda v: [x for x in v if isinstance(x, int) and not isinstance(x, bool)] if isinstance(v, list) else None,
}


def _attributes(cls: Any, p: Mapping[str, Any], wire: Mapping[str, str], skip: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """``cls``'s attributes from the params ``p`` by ``wire`` (wire name -> attribute): each read as
    its annotation says, its default where the value is absent or of another type."""
    types = {f.name: f for f in dataclasses.fields(cls)}
    out: Dict[str, Any] = {}
    for wire_name, name in wire.items():
        if not name or name in skip:
            continue
        f = types[name]
        value = _READERS[str(f.type)](p.get(wire_name))
        out[name] = f.default if value is None else value
    return out


def _image(p: Mapping[str, Any]) -> Image:
    values = _attributes(Image, p, Image.WIRE, skip=("token", "buffer"))
    if p.get("shared") is True and values["path"] is not None:
        # The file is the client's: mapped, then held until dropped.
        values["buffer"] = _shared.take(values["path"])
        values["path"] = None
    return Image(token=p["token"], raw=dict(p), **values)


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
                image = _image(p)
            except OSError as e:  # a shared-memory file that cannot be taken: this download fails alone
                failure = download_error({"code": 1010, "message": f"the result in shared memory could not be read: {e}",
                                          "data": {"name": "OutputFailed", "path": p.get("path")}},
                                         token=token, url=url or _str(p.get("url")))
                failure.metrics = _metrics(p.get("metrics"))
                return Completed(token, raw, outcome="error", url=str(p.get("url", url or "")), error=failure,
                                 metrics=failure.metrics)
            return Completed(token, raw, outcome=outcome, image=image, url=str(p.get("url", "")), metrics=image.metrics)
        error = p.get("error")
        metrics = _metrics(p.get("metrics"))
        failure = download_error(error if isinstance(error, dict) else {}, token=token, url=url or _str(p.get("url")))
        failure.metrics = metrics
        return Completed(token, raw, outcome=outcome, url=str(p.get("url", url or "")), error=failure, metrics=metrics)
    return None
