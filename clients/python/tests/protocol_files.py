"""The repository's protocol/ folder, read by the tests: JSON Schemas (validated with the
jsonschema package) and the example transcripts."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from loopback import REPO

PROTOCOL = REPO / "protocol"
SCHEMA_DIR = PROTOCOL / "schema"
SCHEMA_BASE = "https://image-worker.invalid/schema/"


def load_schemas() -> Dict[str, Any]:
    return {str(p.relative_to(SCHEMA_DIR)): json.loads(p.read_text()) for p in sorted(SCHEMA_DIR.rglob("*.schema.json"))}


class Schemas:
    def __init__(self) -> None:
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource

        self.documents = load_schemas()
        registry: Any = Registry().with_resources(
            (SCHEMA_BASE + name, Resource.from_contents(doc)) for name, doc in self.documents.items())
        self.validators = {name: Draft202012Validator(doc, registry=registry) for name, doc in self.documents.items()}

    def problems(self, message: Any, name: str) -> List[str]:
        validator = self.validators.get(name)
        if validator is None:
            return [f"no schema {name}"]
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(message)]


def outgoing_schema(message: Dict[str, Any], request_method: Optional[str]) -> Optional[str]:
    if isinstance(message.get("method"), str):
        return "events/" + message["method"].replace("/", "-") + ".schema.json"
    if "error" in message:
        return "error-response.schema.json"
    if "result" in message and request_method:
        return f"results/{request_method}.schema.json"
    return None


def incoming_schema(message: Dict[str, Any]) -> Optional[str]:
    method = message.get("method")
    if not isinstance(method, str):
        return None
    return "requests/" + ("cancelRequest" if method == "$/cancelRequest" else method) + ".schema.json"


@dataclass
class Step:
    send: Optional[str] = None  # None: close stdin
    invalid: bool = False
    expected: List[Any] = field(default_factory=list)


@dataclass
class Transcript:
    name: str
    arguments: List[str] = field(default_factory=list)
    steps: List[Step] = field(default_factory=list)
    optional: List[Any] = field(default_factory=list)
    exit_status: Optional[int] = None
    #: ``!framing content-length``: messages go as LSP frames, Content-Type header first
    content_length: bool = False

    def framed(self, text: str) -> bytes:
        body = text.encode()
        if not self.content_length:
            return body + b"\n"
        return (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


def transcript_names() -> List[str]:
    return sorted(p.name for p in (PROTOCOL / "transcripts").glob("*.txt"))


def load_transcript(name: str, substitutions: Dict[str, str]) -> Transcript:
    text = (PROTOCOL / "transcripts" / name).read_text()
    text = re.sub(r"\{\{(\w+)\}\}", lambda m: substitutions[m.group(1)], text)
    transcript = Transcript(name)
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("!args "):
            transcript.arguments = line[len("!args "):].split()
        elif line.startswith("-->! "):
            transcript.steps.append(Step(line[5:], invalid=True))
        elif line.startswith("--> "):
            transcript.steps.append(Step(line[4:]))
        elif line.startswith("<-- "):
            transcript.steps[-1].expected.append(json.loads(line[4:]))
        elif line.startswith("<~~ "):
            transcript.optional.append(json.loads(line[4:]))
        elif line.strip() == "!framing content-length":
            transcript.content_length = True
        elif line.strip() == "!eof":
            transcript.steps.append(Step(None))
        elif line.startswith("!exit "):
            transcript.exit_status = int(line[len("!exit "):])
        else:
            raise ValueError(f"{name}: cannot read the line {line!r}")
    return transcript


def matches(pattern: Any, value: Any) -> bool:
    if pattern == "*":
        return True
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and matches(v, value[k]) for k, v in pattern.items())
    if isinstance(pattern, list):
        if not isinstance(value, list) or len(value) != len(pattern):
            return False
        unused = list(range(len(value)))
        for sub in pattern:
            found = next((i for i in unused if matches(sub, value[i])), None)
            if found is None:
                return False
            unused.remove(found)
        return True
    if isinstance(pattern, bool) or isinstance(value, bool):
        return pattern is value
    return bool(pattern == value)


def order_key(message: Any) -> Tuple[str, str]:
    if isinstance(message, dict):
        params = message.get("params")
        if isinstance(params, dict) and "token" in params:
            return ("token", json.dumps(params["token"]))
        if "id" in message:
            return ("id", json.dumps(message["id"]))
    return ("global", "")
