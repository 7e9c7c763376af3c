"""``python -m image_worker ARGS`` and the ``image-worker`` command a wheel installs: run the worker
that :func:`image_worker.find_binary` finds (the bundled one, unless ``$IMAGE_WORKER_BIN`` or
``PATH`` names another) with ARGS, as if it had been started itself: ``python -m image_worker
--version``, ``python -m image_worker get -i urls.txt -o images/``, ``python -m image_worker serve``."""

from __future__ import annotations

import os
import sys
from typing import List, NoReturn, Optional

from ._binary import SHIM_ENV_VAR, find_binary
from ._errors import BinaryNotFound


def main(argv: Optional[List[str]] = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else argv
    if os.environ.get(SHIM_ENV_VAR):
        # Started by another client's entry point (or this one's): going on could only start yet
        # another, never the worker.
        print(
            f"image-worker: this is a client's entry point, started by another one ({os.environ[SHIM_ENV_VAR]}) "
            "instead of the worker; set $IMAGE_WORKER_BIN to the worker's executable",
            file=sys.stderr)
        sys.exit(127)
    try:
        path, _ = find_binary()
    except BinaryNotFound as error:
        print(f"image-worker: {error}", file=sys.stderr)
        sys.exit(127)
    sys.stdout.flush()
    sys.stderr.flush()
    os.environ[SHIM_ENV_VAR] = "python"
    # exec, not a child: the worker gets this process's stdin, stdout, signals and exit status.
    os.execv(path, [path, *args])


if __name__ == "__main__":
    main()
