"""Ray without a toolchain, as the README tells it: the driver has the client but no worker (the
source package, imported from the repository, and nothing on PATH), the wheel goes to the actors
through the job's runtime_env, and every URL ends as a written file. Run by
scripts/package-check.sh --ray with the python of a venv holding Ray and virtualenv only.
    python scripts/package_check_ray.py REPO WHEEL"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(sys.argv[1]).resolve()
WHEEL = Path(sys.argv[2]).resolve()
# On the driver only (sys.path, not $PYTHONPATH, which Ray's workers would inherit): the actors
# import image_worker from the wheel that runtime_env installs into their environment.
sys.path.insert(0, str(REPO / "clients" / "python" / "src"))
sys.path.insert(0, str(REPO / "clients" / "python" / "tests"))

import ray  # noqa: E402
from image_worker import BinaryNotFound, find_binary  # noqa: E402
from image_worker.distributed import iter_distributed  # noqa: E402
from loopback import LoopbackServer  # noqa: E402


def main() -> None:
    try:
        found = find_binary()
        sys.exit(f"package-check (ray): the driver finds a worker ({found}); the check needs one without")
    except BinaryNotFound:
        pass
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"pip": [str(WHEEL)]})
    server = LoopbackServer()
    try:
        with tempfile.TemporaryDirectory() as out:
            urls = [server.url(f"/files/{'testorig.jpg' if i % 2 else 'basn2c08.png'}?n={i}") for i in range(60)]
            records = list(iter_distributed(urls, dir=out, actors=2, shard_size=16, progress=False, format="png"))
            bad = [r for r in records if r["outcome"] != "ok"]
            if len(records) != len(urls) or bad:
                sys.exit(f"package-check (ray): {len(records)} records for {len(urls)} URLs; not ok: {bad[:3]}")
            written = [p for p in Path(out).rglob("*.png") if p.stat().st_size > 0]
            if len(written) != len(urls):
                sys.exit(f"package-check (ray): {len(written)} files written for {len(urls)} URLs")
    finally:
        server.close()
        ray.shutdown()
    print(f"package-check (ray): {len(urls)} URLs by 2 actors whose worker came from the runtime_env's wheel: ok")


if __name__ == "__main__":
    main()
