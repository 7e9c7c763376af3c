#!/usr/bin/env python3
"""Bulk download with a progress bar (tqdm when installed), then a per-URL report.

    python3 clients/examples/bulk_download.py --out /tmp/images URL [URL ...]
    python3 clients/examples/bulk_download.py --out /tmp/images < urls.txt
"""

import argparse
import sys

from image_worker import download_many


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("urls", nargs="*", help="URLs (default: one per line on stdin)")
    parser.add_argument("--out", required=True, help="directory for the files")
    parser.add_argument("-j", "--jobs", type=int, default=8)
    args = parser.parse_args()
    urls = args.urls or [line.strip() for line in sys.stdin if line.strip()]

    outcomes = download_many(urls, dir=args.out, concurrency=args.jobs, progress=True)

    for outcome in outcomes:
        if outcome.ok and outcome.image is not None:
            print(f"ok      {outcome.url} -> {outcome.image.path}")
        else:
            print(f"failed  {outcome.url}: {type(outcome.error).__name__}: {outcome.error}")
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
