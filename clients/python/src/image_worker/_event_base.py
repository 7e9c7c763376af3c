"""What the typed events of a download do, beside the attributes ``_event_types.py`` gives them
(generated from the schema): the base event, the pixel views of a delivered image, and two
conveniences."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Mapping, Optional, Union

Token = Union[str, int]


@dataclass(frozen=True)
class Event:
    """Base of the events of one download."""

    token: Token
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    METHOD: ClassVar[str] = ""
    WIRE: ClassVar[Dict[str, str]] = {}


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

    def _frame_count(self) -> Optional[int]:
        """With ``frames="all"``: the frames delivered; None otherwise."""
        frames: Optional[int] = getattr(self, "frames", None)
        return frames

    def to_pil_frames(self) -> Any:
        """Every frame delivered as a list of ``PIL.Image.Image`` (``frames="all"``; otherwise a
        list of one): raw formats sliced frame by frame, an animated WebP or GIF read frame by
        frame (needs Pillow)."""
        try:
            from PIL import Image as PILImage, ImageSequence  # type: ignore[import-not-found, unused-ignore]
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_pil_frames() needs Pillow: pip install Pillow") from e
        if self.pixel_format is None:
            image = PILImage.open(io.BytesIO(self.read_bytes()))
            return [frame.copy() for frame in ImageSequence.Iterator(image)]
        mode = {"rgba": "RGBA", "rgb": "RGB", "gray": "L"}[self.pixel_format]
        assert self.width is not None and self.height is not None
        raw = self.read_bytes()
        stride = self.stride or self.width * len(mode)
        size = stride * self.height
        return [PILImage.frombuffer(mode, (self.width, self.height), raw[i * size:(i + 1) * size], "raw", mode, stride, 1)
                for i in range(self._frame_count() or 1)]

    def to_pil(self) -> Any:
        """A ``PIL.Image.Image`` (needs Pillow): with ``frames="all"`` and a raw format, the first
        frame (``to_pil_frames`` gives each); an animated WebP or GIF opens on its first frame."""
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
        With ``frames="all"``: (frames, height, width, channels), every frame delivered (a still
        image: one), ``delays_ms`` saying how long each is shown; an animated WebP or GIF's frames
        in RGBA when any has transparency, else RGB.

        Raw formats (``rgba``, ``rgb``, ``gray``) need only numpy; PNG and original bytes need
        Pillow too, to decode them. Pixels delivered in shared memory are not copied: the array
        maps them (copy-on-write); inline ones (small images, or shared memory without room) are
        copied into it. Writable either way."""
        try:
            import numpy  # type: ignore[import-not-found, unused-ignore]
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_numpy() needs numpy: pip install numpy") from e
        frames = self._frame_count()
        if self.pixel_format is None:
            if frames is not None:
                # (A GIF's or WebP's frames may open in different modes: all in RGBA when any has
                # transparency, else RGB.)
                images = self.to_pil_frames()
                see_through = any(f.mode in ("RGBA", "LA", "PA") or "transparency" in f.info for f in images)
                return numpy.stack([numpy.asarray(f.convert("RGBA" if see_through else "RGB")) for f in images])
            array = numpy.asarray(self.to_pil())
            return array[:, :, None] if array.ndim == 2 else array
        assert self.width is not None and self.height is not None
        channels = {"rgba": 4, "rgb": 3, "gray": 1}[self.pixel_format]
        stride = self.stride or self.width * channels
        buffer: Optional[memoryview] = getattr(self, "buffer", None)
        # Shared memory: the array is a view of the mapped pixels (copy-on-write), no copy made;
        # inline bytes are immutable, so they are copied (the array is writable either way).
        source = buffer if buffer is not None else bytearray(self.read_bytes())
        rows = numpy.frombuffer(source, dtype=numpy.uint8).reshape(frames or 1, self.height, stride)
        pixels = rows[:, :, : self.width * channels].reshape(frames or 1, self.height, self.width, channels)
        return pixels if frames is not None else pixels[0]



class _Fraction(Event):
    """``download/progress``'s fraction."""

    received_bytes: int
    expected_bytes: Optional[int]

    @property
    def fraction(self) -> Optional[float]:
        if not self.expected_bytes:
            return None
        return min(1.0, self.received_bytes / self.expected_bytes)


class _Outcome(Event):
    """``download/completed``'s outcome as a flag."""

    outcome: str

    @property
    def ok(self) -> bool:
        return self.outcome == "success"
