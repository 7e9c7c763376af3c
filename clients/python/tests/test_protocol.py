"""The same contract everywhere: this client replays protocol/transcripts against the real
binary, checks every message against protocol/schema, and its typed model must name every
field the schemas define (so a protocol change fails here until the client follows)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Set

import pytest

import image_worker
from image_worker import ERRORS_BY_CODE, EVENT_TYPES, Image, RequestError
from image_worker._options import DOWNLOAD_RULES, SETTING_RULES, Rule, configure_params, download_params
from image_worker._events import parse_event
from loopback import SAMPLES, LoopbackServer
from protocol_files import (
    Schemas, incoming_schema, load_transcript, matches, order_key, outgoing_schema, transcript_names,
)

SCHEMAS = Schemas()


class RawWorker:
    """The binary on pipes, lines collected by a thread (the transcripts send invalid JSON on
    purpose, which the typed client never does)."""

    def __init__(self, binary: str, arguments: List[str]) -> None:
        self.process = subprocess.Popen([binary, *arguments], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.messages: List[Any] = []
        self.lock = threading.Lock()
        self.stderr = b""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.err_reader = threading.Thread(target=self._read_err, daemon=True)
        self.err_reader.start()

    def _read(self) -> None:
        """Lines, or Content-Length frames (the worker answers that framing in kind)."""
        stream = self.process.stdout
        assert stream is not None
        while True:
            line = stream.readline()
            if not line:
                return
            if line.startswith(b"Content-Length: "):
                length = int(line[len(b"Content-Length: "):].strip())
                assert stream.readline() == b"\r\n", "one header, then a blank line"
                line = stream.read(length)
            with self.lock:
                self.messages.append(json.loads(line))

    def _read_err(self) -> None:
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def snapshot(self) -> List[Any]:
        with self.lock:
            return list(self.messages)


def test_there_are_transcripts() -> None:
    assert len(transcript_names()) >= 8


@pytest.mark.parametrize("name", transcript_names())
def test_replay(name: str, binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    transcript = load_transcript(name, {"BASE": server.base, "OUT": str(tmp_path), "SAMPLES": str(SAMPLES)})
    worker = RawWorker(binary, transcript.arguments)
    matched: Set[int] = set()
    last_index: Dict[Any, int] = {}
    methods_by_id: Dict[str, str] = {}
    try:
        for step in transcript.steps:
            if step.send is None:
                worker.close_stdin()
            else:
                try:
                    sent = json.loads(step.send)
                except ValueError:
                    assert step.invalid, f"{name}: {step.send} is not JSON but not marked -->!"
                    sent = None
                for element in (sent if isinstance(sent, list) else [sent] if sent is not None else []):
                    if isinstance(element, dict) and "id" in element and isinstance(element.get("method"), str):
                        methods_by_id[json.dumps(element["id"])] = element["method"]
                    if not step.invalid and isinstance(element, dict):
                        schema = incoming_schema(element) or "none"
                        assert not SCHEMAS.problems(element, schema), f"{name}: request {step.send}"
                worker.send(transcript.framed(step.send))
            for pattern in step.expected:
                key = order_key(pattern)
                after = last_index.get(key, -1)
                deadline = time.monotonic() + 30
                while True:
                    messages = worker.snapshot()
                    index = next((i for i, m in enumerate(messages)
                                  if i > after and i not in matched and matches(pattern, m)), None)
                    if index is not None:
                        break
                    assert time.monotonic() < deadline, (
                        f"{name}: never received {json.dumps(pattern)}\nreceived:\n"
                        + "\n".join(json.dumps(m) for m in messages) + f"\nstderr:\n{worker.stderr.decode()}")
                    time.sleep(0.005)
                matched.add(index)
                last_index[key] = index
        if transcript.exit_status is None:
            worker.close_stdin()
        status = worker.process.wait(timeout=30)
        worker.reader.join(10)
        if transcript.exit_status is not None:
            assert status == transcript.exit_status, f"{name}: exit status"
    finally:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.wait()

    messages = worker.snapshot()
    for i, message in enumerate(messages):
        if i in matched:
            continue
        allowed = message.get("method") == "download/progress" or any(matches(p, message) for p in transcript.optional)
        assert allowed, f"{name}: unexpected message {json.dumps(message)}"
    for message in messages:
        for element in message if isinstance(message, list) else [message]:
            method = methods_by_id.get(json.dumps(element.get("id"))) if "id" in element else None
            schema = outgoing_schema(element, method)
            assert schema is not None, f"{name}: no schema for {json.dumps(element)}"
            assert not SCHEMAS.problems(element, schema), f"{name}: {json.dumps(element)} against {schema}"
            # The typed client reads every event the worker sent, and knows every field in it.
            if isinstance(element.get("method"), str) and element["method"].startswith("download/"):
                event = parse_event(element["method"], element["params"])
                assert event is not None, f"{name}: the client cannot read {json.dumps(element)}"
                wire = dict(type(event).WIRE)
                if element["method"] == "download/completed" and element["params"].get("outcome") == "success":
                    wire.update(Image.WIRE)
                unknown = set(element["params"]) - set(wire)
                assert not unknown, f"{name}: the client has no field for {unknown} of {element['method']}"


def _params_schema(name: str) -> Any:
    return SCHEMAS.documents[name]["properties"]["params"]


def test_every_event_field_in_the_schema_is_in_the_typed_events() -> None:
    by_method = {cls.METHOD: cls for cls in EVENT_TYPES}
    event_schemas = [n for n in SCHEMAS.documents if n.startswith("events/download-")]
    assert sorted(n[len("events/"):-len(".schema.json")].replace("-", "/") for n in event_schemas) == sorted(by_method)
    # The worker's own notification: the fields the router reads into an ImageWorkerWarning.
    warning = inspect.signature(image_worker.ImageWorkerWarning.__init__).parameters
    assert set(_params_schema("events/worker-warning.schema.json")["properties"]) == set(warning) - {"self"}
    assert [n for n in SCHEMAS.documents if n.startswith("events/") and n not in event_schemas] == ["events/worker-warning.schema.json"]
    for name in event_schemas:
        method = SCHEMAS.documents[name]["properties"]["method"]["const"]
        params = _params_schema(name)
        variants = params.get("oneOf", [params])
        cls = by_method[method]
        success_fields: set = set()
        for variant in variants:
            fields = set(variant.get("properties", {}))
            wire = dict(cls.WIRE)
            if variant.get("properties", {}).get("outcome", {}).get("const") == "success":
                # A fetched image and a kept file (skipped) are both an Image: together, its fields.
                success_fields |= fields
                assert fields <= set(Image.WIRE), f"{method}: schema {sorted(fields)} vs client {sorted(Image.WIRE)}"
                continue
            assert fields == set(wire), f"{method}: schema {sorted(fields)} vs client {sorted(wire)}"
            attributes = {f.name for f in dataclasses.fields(cls)}
            assert {a for a in wire.values() if a} <= attributes
        if success_fields:
            assert success_fields == set(Image.WIRE), f"{method}: schema {sorted(success_fields)} vs client {sorted(Image.WIRE)}"
            assert {a for a in Image.WIRE.values() if a} <= {f.name for f in dataclasses.fields(Image)}


def test_the_typed_events_are_as_optional_as_the_schema_says() -> None:
    # A field every worker sends (required, not nullable) is its plain type in Python; one it may
    # leave out is Optional, unless the schema says what its absence means (a default) or it is a
    # `true`-only flag (False when absent). Objects (metrics, an error) are Optional: a success has
    # no error, and an older worker's kept file had no metrics.
    from image_worker import Image, Metrics
    variants = {cls: [_params_schema(n)] for n in SCHEMAS.documents for cls in EVENT_TYPES
                if n.startswith("events/download-") and SCHEMAS.documents[n]["properties"]["method"]["const"] == cls.METHOD}
    completed = variants.pop(image_worker.Completed)[0]["oneOf"]
    variants[image_worker.Completed] = [v for v in completed if v["properties"]["outcome"]["const"] != "success"]
    variants[Image] = [v for v in completed if v["properties"]["outcome"]["const"] == "success"]
    variants[Metrics] = [SCHEMAS.documents["common.schema.json"]["$defs"]["metrics"]]
    checked = 0
    for cls, params in variants.items():
        attributes = {f.name: f for f in dataclasses.fields(cls)}
        for wire_name, attribute in cls.WIRE.items():
            if not attribute or attribute == "token" or wire_name in ("data", "shared"):
                continue
            schemas = [(v["properties"][wire_name], wire_name in v.get("required", [])) for v in params if wire_name in v["properties"]]
            if any("$ref" in s or "allOf" in s for s, _ in schemas):
                assert str(attributes[attribute].type).startswith("Optional["), f"{cls.__name__}.{attribute}"
                continue
            nullable = any("null" in (s.get("type") if isinstance(s.get("type"), list) else [s.get("type")]) for s, _ in schemas)
            always = all(required for _, required in schemas) and not nullable
            flag = all(s.get("const") is True for s, _ in schemas)
            defaulted = all("default" in s for s, _ in schemas)
            optional = str(attributes[attribute].type).startswith("Optional[")
            assert optional == (not always and not flag and not defaulted), f"{cls.__name__}.{attribute}: {attributes[attribute].type}"
            if defaulted:
                assert attributes[attribute].default == schemas[0][0]["default"], f"{cls.__name__}.{attribute}"
            checked += 1
    assert checked > 60


def test_every_error_code_has_its_exception() -> None:
    error = SCHEMAS.documents["common.schema.json"]["$defs"]["downloadError"]
    codes = error["properties"]["code"]["enum"]
    names = error["properties"]["data"]["properties"]["name"]["enum"]
    assert sorted(ERRORS_BY_CODE) == sorted(codes)
    assert sorted(cls.name for cls in ERRORS_BY_CODE.values()) == sorted(names)
    for name in names:
        assert getattr(image_worker, name).name == name


def test_requests_the_client_builds_are_valid() -> None:
    params = download_params(
        "https://example.org/a.jpg", "t1", dict(dir="/tmp/x", format="rgba", progressive=True, priority="high",
        headers={"X-A": "b"}, timeout_ms=5000, deadline_ms=9000, max_retries=0, retry_delay_ms=10,
        credentials=("u", "p"), allow_invalid_certificates=True,
        handle_cookies=True, retry_failed=True, cache_policy="preferCache", max_pixel_size=100, max_pixel_count=10000, apply_orientation=True,
        color_profile="keep", frames="all", min_image_size=10, max_image_area=1_000_000, max_aspect_ratio=2.5,
        overwrite=True, partial_interval_ms=0, partial_max_pixel_size=64, name_template="{token}-{index:3}.{ext}", index=7, verify=True,
        sha256=True))
    request = {"jsonrpc": "2.0", "id": 1, "method": "download", "params": params}
    assert not SCHEMAS.problems(request, "requests/download.schema.json")
    named = download_params("u", 2, dict(dir="/tmp/x", name="a/b.png", skip_existing=True))
    assert not SCHEMAS.problems({"jsonrpc": "2.0", "method": "download", "params": named}, "requests/download.schema.json")
    # Every download option of the schema can be set from Python.
    schema_params = _params_schema("requests/download.schema.json")["properties"]
    quiet = download_params("u", 5, {"quiet": True, "dir": "/tmp/x"})
    assert not SCHEMAS.problems({"jsonrpc": "2.0", "method": "download", "params": quiet}, "requests/download.schema.json")
    # (_meta is the caller's, not an option: accepted and ignored on every method.)
    assert set(params) | set(quiet) == set(schema_params) - {"_meta"}, "quiet excludes progressive: set apart"
    jpeg = download_params("u", 3, dict(format="jpeg", quality=75, chroma_subsampling="4:4:4"))
    webp = download_params("u", 4, dict(format="webp", quality=60, lossless=True, inline=True))
    boxed = download_params("u", 8, dict(format="png", width=64, height=64, fit="contain", position="left", background="#ffffff",
                                         without_enlargement=True))
    for encoded in (jpeg, webp, boxed):
        assert not SCHEMAS.problems({"jsonrpc": "2.0", "method": "download", "params": encoded}, "requests/download.schema.json")
    assert (set(params["output"]) | set(named["output"]) | set(jpeg["output"]) | set(webp["output"]) | set(boxed["output"])
            | {"path", "delivery"} >= set(schema_params["output"]["properties"]))
    inline = download_params("u", 1, {"inline": True})
    assert not SCHEMAS.problems({"jsonrpc": "2.0", "method": "download", "params": inline}, "requests/download.schema.json")

    configuration = SCHEMAS.documents["common.schema.json"]["$defs"]["configuration"]["properties"]
    assert set(configuration) <= {rule.wire for rule in SETTING_RULES.values()}
    methods = {n[len("requests/"):-len(".schema.json")] for n in SCHEMAS.documents if n.startswith("requests/")}
    assert {"initialize", "download", "cancel", "setPriority", "configure", "status", "cancelAll", "shutdown",
            "exit"} <= methods


def _rule_matches(rule: Rule, schema: Dict[str, Any]) -> List[str]:
    """How ``rule`` differs from the schema of its wire field (empty when they agree)."""
    if "$ref" in schema:
        document, _, pointer = schema["$ref"].rpartition("#")
        schema = SCHEMAS.documents[document.rsplit("/", 1)[-1]]
        for part in pointer.strip("/").split("/"):
            schema = schema[part]
    problems = []
    if rule.kind in ("int", "number"):
        if schema.get("type") != ("integer" if rule.kind == "int" else "number"):
            problems.append(f"type {schema.get('type')}")
        for bound in ("minimum", "maximum"):
            if schema.get(bound) != getattr(rule, bound):
                problems.append(f"{bound}: schema {schema.get(bound)}, client {getattr(rule, bound)}")
    elif rule.kind == "enum":
        if tuple(schema.get("enum", ())) != rule.choices:
            problems.append(f"enum: schema {schema.get('enum')}, client {rule.choices}")
    elif rule.kind in ("bool", "string", "text", "path", "headers", "credentials"):
        wanted = {"bool": "boolean", "string": "string", "text": "string", "path": "string", "headers": "object",
                  "credentials": "object"}
        if schema.get("type") != wanted[rule.kind]:
            problems.append(f"type: schema {schema.get('type')}, client {rule.kind}")
    return problems


def test_the_clients_option_checks_are_the_schemas() -> None:
    """The client checks options before sending them: with the worker's own ranges and choices."""
    params = _params_schema("requests/download.schema.json")["properties"]
    for option, rule in DOWNLOAD_RULES.items():
        if option == "inline":
            continue  # output.delivery "inline"
        schema = params["output"]["properties"][rule.wire] if rule.output else params[rule.wire]
        assert not _rule_matches(rule, schema), f"{option}: {_rule_matches(rule, schema)}"
    settings = _params_schema("requests/configure.schema.json")["properties"]
    assert set(settings) - {"_meta"} == {rule.wire for rule in SETTING_RULES.values()}
    for option, rule in SETTING_RULES.items():
        assert not _rule_matches(rule, settings[rule.wire]), f"{option}: {_rule_matches(rule, settings[rule.wire])}"


@pytest.mark.parametrize("options, option", [
    ({"max_pixel_sise": 256}, "max_pixel_sise"),
    ({"format": "jpg"}, "format"),
    ({"format": "png", "quality": 80}, "quality"),
    ({"format": "jpeg", "quality": 0}, "quality"),
    ({"format": "jpeg", "lossless": True}, "lossless"),
    ({"format": "webp", "chroma_subsampling": "4:4:4"}, "chroma_subsampling"),
    ({"format": "jpeg", "chroma_subsampling": "420"}, "chroma_subsampling"),
    ({"format": "png", "max_pixel_size": 0}, "max_pixel_size"),
    ({"format": "png", "max_pixel_size": 2.5}, "max_pixel_size"),
    ({"format": "png", "max_pixel_size": True}, "max_pixel_size"),
    ({"priority": "urgent"}, "priority"),
    ({"timeout_ms": 0}, "timeout_ms"),
    ({"headers": {"X-A": 1}}, "headers"),
    ({"headers": {"Bad Name": "x"}}, "headers"),
    ({"headers": {"X-A": "a\r\nX-Smuggled: b"}}, "headers"),
    ({"credentials": ("only-user",)}, "credentials"),
    ({"dir": "a", "path": "b"}, "path"),
    ({"inline": True, "dir": "a"}, "inline"),
    ({"progressive": True, "format": "original"}, "format"),
    ({"max_pixel_size": 256}, "max_pixel_size"),
    ({"inline": "yes"}, "inline"),
    ({"partial_interval_ms": -1}, "partial_interval_ms"),
    ({"name": "a.png"}, "name"),
    ({"path": "a.png", "name_template": "{name}"}, "name_template"),
    ({"dir": "a", "index": 3}, "index"),
    ({"skip_existing": True}, "skip_existing"),
    ({"overwrite": True}, "overwrite"),
])
def test_bad_download_options_name_themselves(options: Dict[str, Any], option: str) -> None:
    with pytest.raises(RequestError) as caught:
        download_params("https://example.org/a.jpg", "t", options)
    assert caught.value.code == -32602
    assert caught.value.data == {"option": option}
    assert str(caught.value).startswith(option + ":")


def test_unknown_options_suggest_the_known_one() -> None:
    with pytest.raises(RequestError, match=r"did you mean max_pixel_size\?"):
        download_params("u", "t", {"max_pixel_sise": 1})
    with pytest.raises(RequestError, match=r"did you mean max_concurrent_downloads\?"):
        configure_params({"max_concurent_downloads": 1})
    with pytest.raises(RequestError) as caught:
        configure_params({"execution_order": "random"})
    assert caught.value.data == {"option": "execution_order"}
    # snake_case or the wire's own names, including the ones with capitals inside
    assert configure_params({"failed_url_expiry_ms": 5, "clearFailedURLs": True}) == {
        "failedURLExpiryMs": 5, "clearFailedURLs": True}


def test_metrics_fields_are_the_schemas() -> None:
    from image_worker import Metrics
    schema = SCHEMAS.documents["common.schema.json"]["$defs"]["metrics"]["properties"]
    assert set(Metrics.WIRE) == set(schema)
    assert set(Metrics.WIRE.values()) == {f.name for f in dataclasses.fields(Metrics)}
