#!/usr/bin/env bash
# Fuzzes the code that reads untrusted bytes with libFuzzer, AddressSanitizer and LeakSanitizer
# (the Swift toolchain's own runtimes): the protocol's framing and JSON, the JPEG, PNG, WebP, GIF, AVIF and JPEG XL decoders
# (whole and incremental, random chunks, random scaling), URL and header validation. Fails on any
# crash, failed check, leak, timeout (10 s for one input) or runaway memory (2 GiB).
#
#   scripts/fuzz.sh                   every target for 60 s
#   scripts/fuzz.sh 3600              every target for an hour (the longer run)
#   scripts/fuzz.sh 300 FuzzDecoders  one target
#
# Corpora grow in .build-fuzz/corpus/TARGET (kept between runs); seeds come from samples/,
# ../shared/corpora, protocol/transcripts and Fuzz/seeds (decoders/, protocol/: inputs that once
# failed, run first as every seed is). A failing input is saved under .build-fuzz/artifacts/TARGET/ and the
# line to replay it is printed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(FuzzProtocol FuzzDecoders FuzzInputValidation)
scratch="$root/.build-fuzz"

echo "fuzz: building ${targets[*]} with libFuzzer and AddressSanitizer" >&2
# swift-driver drops -sanitize=fuzzer from the frontend when another sanitizer is given, which
# leaves the Swift code without coverage: it is passed to the frontend again.
(cd "$root/Fuzz" && swift build --scratch-path "$scratch" --sanitize fuzzer --sanitize address \
    -Xswiftc -Xfrontend -Xswiftc -sanitize=fuzzer 2>&1 | grep -v "Cannot export local symbol" >&2)
bin=$(cd "$root/Fuzz" && swift build --scratch-path "$scratch" --show-bin-path)

seeds="$scratch/seeds"
rm -rf "$seeds"
mkdir -p "$seeds/FuzzProtocol" "$seeds/FuzzDecoders" "$seeds/FuzzInputValidation"
# The requests of every transcript, and the JSON-RPC specification's examples.
for f in "$root"/protocol/transcripts/*.txt "$root"/Tests/ImageWorkerProtocolTests/Vectors/*.txt; do
    sed -n 's/^--> //p' "$f" > "$seeds/FuzzProtocol/$(basename "$f").ndjson"
done
printf 'Content-Length: 40\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"status"}' > "$seeds/FuzzProtocol/content-length"
cp "$root"/Fuzz/seeds/protocol/* "$seeds/FuzzProtocol/"
n=0
while IFS= read -r -d '' f; do
    n=$((n + 1))
    cp "$f" "$seeds/FuzzDecoders/$n-$(basename "$f")"
done < <(find "$root/samples" "$root/../shared/corpora" "$root/Tests/Corpora" "$root/Fuzz/seeds/decoders" -type f \( -name '*.jpg' -o -name '*.jpeg' \
    -o -name '*.png' -o -name '*.webp' -o -name '*.gif' -o -name '*.avif' -o -name '*.jxl' \) -size -256k -print0 2>/dev/null)
n=0
while IFS= read -r line; do
    n=$((n + 1))
    printf '%s' "$line" > "$seeds/FuzzInputValidation/$n"
done < "$root/Fuzz/seeds/input-validation.txt"

status=0
for target in "${targets[@]}"; do
    corpus="$scratch/corpus/$target"
    artifacts="$scratch/artifacts/$target/"
    mkdir -p "$corpus" "$artifacts"
    log="$scratch/$target.log"
    echo "fuzz: $target for ${seconds} s (log: $log)" >&2
    set +e
    SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1 "$bin/$target" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 \
        -artifact_prefix="$artifacts" "$corpus" "$seeds/$target" > "$log" 2>&1
    code=$?
    set -e
    # (A crashed run prints no summary: the grep finds nothing, which must not end the script.)
    summary=$(grep -E "^(#[0-9]+ +DONE|Done [0-9]+ runs)" "$log" | tail -n 2 | tr '\n' ' ' || true)
    if [ "$code" -ne 0 ]; then
        status=1
        echo "fuzz: $target FAILED (exit $code):" >&2
        grep -E "ERROR|SUMMARY|Fatal error|Precondition|precondition|#[0-9]+ +0x.* in \\$|in \\$s" "$log" | head -n 25 >&2 || true
        for a in "$artifacts"*; do
            [ -e "$a" ] && echo "fuzz: replay with: SWIFT_BACKTRACE=enable=no $bin/$target $a" >&2
        done
    else
        echo "fuzz: $target ok: $summary" >&2
    fi
done
exit "$status"
