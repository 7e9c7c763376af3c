"""Type-checked (not run) by test_structure.py's mypy test: the README's uses must pass
``mypy --strict``, and each mistake below must be an error there (``--strict`` reports a
``type: ignore`` that ignores nothing, so a mistake mypy stopped catching fails the test)."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

from image_worker import AsyncWorker, Image, Outcome, Worker, download_many


def good(worker: Worker) -> None:
    handle = worker.download("https://example.org/a.jpg", dir="images", format="png", priority="high",
                             max_pixel_size=256, progressive=True, partial_max_pixel_size=64,
                             headers={"Accept": "image/*"}, credentials=("user", "secret"), timeout_ms=5000)
    image: Image = handle.result()
    print(image.url, image.final_url, image.width)
    handle.set_priority("veryLow")
    configuration: Dict[str, Any] = worker.configure(max_concurrent_downloads=8, execution_order="lifo")
    outcomes: List[Outcome] = download_many(["https://example.org/a.jpg"], "images", concurrency=4, format="rgba")
    print(configuration, outcomes)
    for outcome in outcomes:  # `ok` tells Succeeded from Failed: no Optional left to check
        print(outcome.image.path if outcome.ok else outcome.error)
        if not outcome.ok:
            print(outcome.error.args)


def mistakes(worker: Worker) -> None:
    worker.download("https://example.org/a.jpg", max_pixel_sise=256)  # type: ignore[call-arg]
    worker.download("https://example.org/a.jpg", format="jpg")  # type: ignore[arg-type]
    worker.download("https://example.org/a.jpg", priority="urgent")  # type: ignore[arg-type]
    worker.download("https://example.org/a.jpg", max_pixel_size="256")  # type: ignore[arg-type]
    worker.download("https://example.org/a.jpg", credentials="user:secret")  # type: ignore[arg-type]
    worker.set_priority("t", "urgent")  # type: ignore[arg-type]
    worker.configure(max_concurent_downloads=8)  # type: ignore[call-arg]
    worker.configure(execution_order="random")  # type: ignore[arg-type]
    download_many(["https://example.org/a.jpg"], "images", fromat="png")  # type: ignore[call-arg]
    download_many(["https://example.org/a.jpg"], "images", dir="again")  # type: ignore[misc]
    for outcome in download_many(["https://example.org/a.jpg"], "images"):
        print(outcome.image.path)  # type: ignore[union-attr]
        if not outcome.ok:
            print(outcome.image.path)  # type: ignore[attr-defined]


async def async_mistakes() -> None:
    async with AsyncWorker() as worker:
        handle = await worker.download("https://example.org/a.jpg", inline=True, format="gray")
        await handle.set_priority("urgent")  # type: ignore[arg-type]
        await worker.download("https://example.org/a.jpg", inlin=True)  # type: ignore[call-arg]
        await worker.configure(suspended="yes")  # type: ignore[arg-type]
