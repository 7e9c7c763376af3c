"""The options of ``download`` and ``configure``, checked at run time before anything is sent,
each bad one a :class:`RequestError` naming it. Their types (``TypedDict``s of ``Literal``s, used as
``**options: Unpack[DownloadOptions]``), ranges, choices and the rules between them come from
``_option_table.py``, which scripts/generate-options.py writes from protocol/schema: the worker
checks the same."""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Mapping, Sequence, Union, cast

from ._errors import RequestError
from ._option_rules import Rule, apply_defaults, is_set
from ._option_table import (
    CACHE_POLICIES,
    CHOICE_DEFAULTS,
    CHROMA_SUBSAMPLINGS,
    CLIENT_DEFAULTS,
    DOWNLOAD_RULES,
    EXECUTION_ORDERS,
    FORMATS,
    PRIORITIES,
    RELATIONS,
    SETTING_RULES,
    CachePolicy,
    ChromaSubsampling,
    DownloadOptions,
    ExecutionOrder,
    Format,
    ManyOptions,
    PathLike,
    Priority,
    Settings,
)

__all__ = [
    "CACHE_POLICIES", "CHROMA_SUBSAMPLINGS", "DOWNLOAD_RULES", "EXECUTION_ORDERS", "FORMATS", "PRIORITIES", "SETTING_RULES",
    "CachePolicy", "ChromaSubsampling", "DownloadOptions", "ExecutionOrder", "Format", "ManyOptions", "PathLike",
    "Priority", "Rule", "Settings", "Token", "check", "check_priority", "configure_params", "download_params", "invalid",
]

Token = Union[str, int]

#: JSON-RPC's "invalid params", the code the worker would answer with.
INVALID_PARAMS = -32602
#: An HTTP token (RFC 9110 5.1): what a header name may be.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def invalid(option: str, message: str) -> RequestError:
    """The error for a bad option, as the worker would answer it, raised before anything is sent."""
    return RequestError(INVALID_PARAMS, f"{option}: {message}", {"option": option})


def _bounds(rule: Rule) -> str:
    low = "" if rule.minimum is None else f"{rule.minimum:,.0f}" if rule.kind == "int" else f"{rule.minimum:g}"
    high = "" if rule.maximum is None else f"{rule.maximum:,.0f}" if rule.kind == "int" else f"{rule.maximum:g}"
    return f" in {low}…{high}"


def check(option: str, value: Any, rule: Rule) -> Any:
    """``value`` as sent on the wire, or :class:`RequestError` naming ``option``."""
    if rule.kind == "bool":
        if not isinstance(value, bool):
            raise invalid(option, f"must be True or False, not {value!r}")
        return value
    if rule.kind in ("int", "number"):
        wanted = int if rule.kind == "int" else (int, float)
        if isinstance(value, bool) or not isinstance(value, wanted):
            raise invalid(option, f"must be {'an integer' if rule.kind == 'int' else 'a number'}{_bounds(rule)}, not {value!r}")
        if (rule.minimum is not None and value < rule.minimum) or (rule.maximum is not None and value > rule.maximum):
            raise invalid(option, f"must be{_bounds(rule)}, not {value!r}")
        return value
    if rule.kind == "enum":
        # (By type too: 1 == True, but 1 is not the choice True.)
        if not any(type(value) is type(c) and value == c for c in rule.choices):
            raise invalid(option, f"must be one of {', '.join(map(str, rule.choices))}, not {value!r}")
        return value
    if rule.kind == "string":
        if not isinstance(value, str) or not value or any(c in value for c in "\r\n\0"):
            raise invalid(option, f"must be a non-empty string without CR, LF or NUL, not {value!r}")
        return value
    if rule.kind == "text":
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            raise invalid(option, f"must be a string without CR, LF or NUL, not {value!r}")
        return value
    if rule.kind == "path":
        if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
            raise invalid(option, f"must be a non-empty path, not {value!r}")
        return str(os.fspath(value))
    if rule.kind == "headers":
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise invalid(option, f"must be a mapping of header names to strings, not {value!r}")
        for name, text in value.items():
            if not _HEADER_NAME.fullmatch(name):
                raise invalid(option, f"{name!r} is not a valid header name")
            if any(c in text for c in "\r\n\0"):
                raise invalid(option, f"the value of header {name!r} contains CR, LF or NUL")
        return dict(value)
    if rule.kind == "strings":
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not all(
                isinstance(v, str) and v and not any(c in v for c in "\r\n\0") for v in value):
            raise invalid(option, f"must be a list of non-empty strings without CR, LF or NUL, not {value!r}")
        return list(value)
    if rule.kind == "credentials":
        if not (isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, str) for v in value)):
            raise invalid(option, "must be a (user, password) pair of strings")
        return {"user": value[0], "password": value[1]}
    raise AssertionError(rule.kind)


def _unknown(kind: str, option: str, known: Sequence[str]) -> RequestError:
    import difflib  # only for a mistyped option

    close = difflib.get_close_matches(option, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else f"; known: {', '.join(sorted(known))}"
    return invalid(option, f"unknown {kind} option{hint}")


def download_params(url: str, token: Token, options: Mapping[str, Any]) -> Dict[str, Any]:
    """The ``download`` params for ``options`` (see :class:`DownloadOptions`), checked as the
    worker would check them; :class:`RequestError` names the first bad option. ``dir`` or
    ``path`` delivers a file, ``inline=True`` the bytes in the event (base64); with neither, a
    decoded format comes through shared memory (``Image.buffer``, ``to_numpy()`` without a copy)
    and ``original`` bytes only as metadata.
    ``progressive`` without a ``format`` means PNG (partial images need a decoded format)."""
    if not isinstance(url, str):
        raise invalid("url", f"must be a string, not {url!r}")
    if isinstance(token, bool) or not isinstance(token, (str, int)) or token == "":
        raise invalid("token", f"must be a non-empty string or an integer, not {token!r}")
    params: Dict[str, Any] = {"url": url, "token": token}
    output: Dict[str, Any] = {}
    for option, value in options.items():
        rule = DOWNLOAD_RULES.get(option)
        if rule is None:
            raise _unknown("download", option, list(DOWNLOAD_RULES))
        if value is None:  # None means "not given", as the defaults of a spelled-out signature would
            continue
        (output if rule.output else params)[rule.wire] = check(option, value, rule)
    given = {k for k, v in options.items() if v is not None}
    if output.pop("delivery", False):
        if "dir" in given or "path" in given:
            raise invalid("inline", "inline=True delivers the bytes in the event: no dir or path with it")
        output["delivery"] = "inline"
    for flag in ("progressive", "quiet"):
        if not params.get(flag, True):
            del params[flag]
    params["output"] = output
    # What is not given: progressive means PNG; dir or path a file; a decoded image with no file
    # asked for comes through shared memory (to_numpy() maps it), or inline when small.
    apply_defaults(params, CLIENT_DEFAULTS, _DECODED, CHOICE_DEFAULTS)
    # The schema's rules between options, as the worker checks them: those of the options set
    # (a bulk job checks every URL's params), in the table's order.
    set_paths = [key for key, value in params.items() if is_set(value)]
    set_paths += ["output." + key for key, value in output.items() if is_set(value)]
    for index in sorted(i for path in set_paths for i in _RELATIONS_OF.get(path, ())):
        problem = RELATIONS[index].problem(params, _python_name, _DECODED, CHOICE_DEFAULTS)
        if problem is not None:
            raise invalid(*problem)
    if not output:
        del params["output"]
    return params


#: Python's name of each wire path (``output.`` for the output object's).
_PYTHON_NAMES: Dict[str, str] = {("output." if rule.output else "") + rule.wire: name for name, rule in DOWNLOAD_RULES.items()}
_DECODED = tuple(f for f in FORMATS if f != "original")
#: Each wire path's rules between options (by their place in ``RELATIONS``): a rule applies only
#: when its option is set.
_RELATIONS_OF: Dict[str, List[int]] = {}
for _index, _relation in enumerate(RELATIONS):
    _RELATIONS_OF.setdefault(_relation.option, []).append(_index)


def _python_name(wire: str) -> str:
    return _PYTHON_NAMES.get(wire, wire)


def configure_params(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """``configure`` params for ``settings`` (see :class:`Settings`: snake_case, or the wire's
    own names), checked as the worker would check them."""
    by_wire = {rule.wire: name for name, rule in SETTING_RULES.items()}
    params: Dict[str, Any] = {}
    for option, value in settings.items():
        name = option if option in SETTING_RULES else by_wire.get(option)
        if name is None:
            raise _unknown("configure", option, list(SETTING_RULES))
        rule = SETTING_RULES[name]
        params[rule.wire] = check(option, value, rule)
    return params


def check_priority(priority: Any) -> Priority:
    """``priority`` if it is one, or :class:`RequestError` naming it."""
    return cast(Priority, check("priority", priority, DOWNLOAD_RULES["priority"]))
