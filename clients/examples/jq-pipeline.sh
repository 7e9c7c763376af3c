#!/usr/bin/env bash
# Download URLs (arguments after the directory) with the protocol worker, then list with jq what
# arrived: "path  WIDTHxHEIGHT" for each success, "FAILED url: message" for each failure.
#   clients/examples/jq-pipeline.sh /tmp/images https://example.org/a.jpg https://example.org/b.png
set -euo pipefail
dir=$1; shift
worker=${IMAGE_WORKER_BIN:-image-worker}
n=0
for url in "$@"; do
    n=$((n + 1))
    # One download per line; a notification needs no answer; stdin's end means "finish, then exit".
    jq -cn --arg url "$url" --arg dir "$dir" --arg token "$n" \
        '{jsonrpc: "2.0", method: "download",
          params: {token: $token, url: $url, output: {delivery: "file", dir: $dir, format: "png"}}}'
done | "$worker" | jq -r '
    select(.method == "download/completed") | .params
    | if .outcome == "success" then "\(.path)  \(.width)x\(.height)"
      else "FAILED \(.token): \(.error.message)" end'
