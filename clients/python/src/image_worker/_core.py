"""The protocol side shared by Worker and AsyncWorker: request building, ids, routing of
responses and events to their waiters. No I/O here."""

from __future__ import annotations

import functools
import json
import logging
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol

from . import _shared
from ._errors import ImageWorkerError, ImageWorkerWarning, RequestError
from ._events import Completed, Event, parse_event
from ._options import Token


#: Put on a handle's event queue after its last item (the sync and async handles share it).
END = object()


def queued_event(item: object) -> Optional[Event]:
    """A handle's queued item as the event to yield: None at the end; an error is raised."""
    if item is END:
        return None
    if isinstance(item, BaseException):
        raise item
    assert isinstance(item, Event)
    return item


class Sink(Protocol):
    """Where a download's events go (a handle)."""

    url: str

    def _deliver(self, event: Event) -> None: ...

    def _fail(self, error: BaseException) -> None: ...


Reply = Callable[[Optional[Any], Optional[BaseException]], None]
Action = Callable[[], None]


def run_actions(actions: List[Action]) -> None:
    """Runs what the router asked for, in order (outside the worker's lock)."""
    for action in actions:
        action()


def show_warning(warning: ImageWorkerWarning) -> None:
    """The worker's warning, where a person sees it: :func:`warnings.warn` (shown on stderr
    unless filtered) and the ``image_worker`` logger."""
    logging.getLogger("image_worker").warning("%s", warning.args[0])
    warnings.warn(warning, stacklevel=2)


#: Before the caller's own arguments (the last of a repeated option wins). The worker runs in a
#: session of its own (``start_new_session``): a terminal's Ctrl-C reaches this process only,
#: which then cancels what is under way and records it as cancelled, instead of the worker dying
#: first and every download in flight failing. Should this process die, stdin's end cancels
#: what is left at once (the client never stops the worker by closing stdin).
WORKER_ARGS = ("--on-eof", "cancel")


def check_grace(grace: float) -> None:
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not grace >= 0:
        raise ValueError(f"grace must be a number of seconds >= 0, not {grace!r}")


def shutdown_ms(grace: float, timeout: float) -> int:
    """``shutdown``'s ``timeoutMs``: the grace, and a second short of the kill at ``timeout``."""
    return max(0, min(int(grace * 1000), int(timeout * 1000) - 1000))


def encode(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"



class WorkerState:
    """What :class:`Worker` and :class:`AsyncWorker` both tell of their process."""

    _router: "Router"

    @property
    def warnings(self) -> List[ImageWorkerWarning]:
        """The worker's warnings so far (shared memory full, a proxy setting skipped), each code
        once; each was also given to :func:`warnings.warn` and the ``image_worker`` logger."""
        return list(self._router.warnings)

class Router:
    """Request ids and their reply callbacks; tokens and their handles. The owner serialises calls."""

    def __init__(self, token_prefix: str) -> None:
        self._next_id = 0
        self._next_token = 0
        self._token_prefix = token_prefix
        self._replies: Dict[int, Reply] = {}
        self._handles: Dict[Token, Sink] = {}
        self.failure: Optional[BaseException] = None
        #: The worker's warnings so far, each code once.
        self.warnings: List[ImageWorkerWarning] = []

    def new_token(self) -> str:
        self._next_token += 1
        return f"{self._token_prefix}{self._next_token}"

    def request(self, method: str, params: Optional[Mapping[str, Any]], reply: Reply) -> bytes:
        self._next_id += 1
        self._replies[self._next_id] = reply
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        return encode(message)

    @staticmethod
    def notification(method: str, params: Optional[Mapping[str, Any]] = None) -> bytes:
        message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        return encode(message)

    def add_handle(self, token: Token, sink: Sink) -> None:
        if token in self._handles:
            raise ValueError(f"token {token!r} is already in use by a live download")
        self._handles[token] = sink

    def drop_handle(self, token: Token) -> None:
        self._handles.pop(token, None)

    @property
    def live_handles(self) -> int:
        return len(self._handles)

    def route(self, line: bytes) -> List[Action]:
        """Takes one line of the worker's output; returns what to call, in order, once the
        caller's lock is released (a callback may call back into the worker)."""
        try:
            message = json.loads(line)
        except ValueError:
            return []  # not a protocol message; the worker never writes one, so nothing is lost
        actions: List[Action] = []
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict):
                action = self._route_one(item)
                if action is not None:
                    actions.append(action)
        return actions

    def _route_one(self, message: Mapping[str, Any]) -> Optional[Action]:
        method = message.get("method")
        if isinstance(method, str):
            params = message.get("params")
            if not isinstance(params, dict):
                return None
            if method == "worker/warning":
                code = params.get("code")
                if not isinstance(code, str) or any(w.code == code for w in self.warnings):
                    return None  # each once: a repeat would only be noise
                details = params.get("details")
                warning = ImageWorkerWarning(code, str(params.get("message", "")), details if isinstance(details, dict) else None)
                self.warnings.append(warning)
                return functools.partial(show_warning, warning)
            token = params.get("token")
            sink = self._handles.get(token) if isinstance(token, (str, int)) else None
            if sink is None:
                _shared.discard(params)  # nobody will take this result's shared-memory file
                return None
            try:
                event = parse_event(method, params, url=sink.url)
            except Exception as e:  # noqa: BLE001 - a message this client cannot read fails its download, not the reader
                if method != "download/completed":
                    return None
                if isinstance(token, (str, int)):
                    self._handles.pop(token, None)
                return functools.partial(sink._fail, ImageWorkerError(f"the worker's {method} cannot be read by this client: {e!r}"))
            if event is None:
                return None
            if isinstance(event, Completed):
                self._handles.pop(event.token, None)
            return functools.partial(sink._deliver, event)
        request_id = message.get("id")
        if not isinstance(request_id, int):
            return None
        reply = self._replies.pop(request_id, None)
        if reply is None:
            return None
        error = message.get("error")
        if isinstance(error, dict):
            failure = RequestError(int(error.get("code", 0)), str(error.get("message", "")), error.get("data"))
            return functools.partial(reply, None, failure)
        return functools.partial(reply, message.get("result"), None)

    def fail_all(self, error: BaseException) -> List[Action]:
        """The worker is gone: every waiting request and live download fails with ``error``
        (run the returned actions once the lock is released)."""
        if self.failure is None:
            self.failure = error
        replies, self._replies = self._replies, {}
        handles, self._handles = self._handles, {}
        actions: List[Action] = [functools.partial(reply, None, error) for reply in replies.values()]
        actions += [functools.partial(sink._fail, error) for sink in handles.values()]
        return actions

