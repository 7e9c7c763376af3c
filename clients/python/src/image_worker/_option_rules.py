"""What the generated option table (``_option_table.py``) is made of: a :class:`Rule` per option
and a :class:`Relation` per rule between options, with how a relation is checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union


@dataclass(frozen=True)
class Rule:
    """One option: where it goes on the wire and what it may be."""

    wire: str
    #: 'bool', 'int', 'number', 'string', 'text' (a string that may be empty), 'enum', 'headers', 'credentials', 'path'
    kind: str
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    choices: Tuple[Union[bool, str], ...] = ()
    #: in ``output`` rather than at the top of the params
    output: bool = False


@dataclass(frozen=True)
class Relation:
    """A rule between options, on their wire paths (``output.`` for the output object's):
    ``exclusive`` (``option`` and ``other`` not both set), ``formats`` (``option`` only with one
    of these output formats; with ``equals``, only when ``option`` has that value), ``decoded`` (``option`` only with a decoded output format),
    ``with`` (``option`` only when one of ``others`` is set; with ``equals``, only when ``option``
    has that value), ``when`` (``option`` only when ``other``'s value is one of ``formats``);
    ``names``: the option an error names, when not the rule's own. An option is set when
    present, and a boolean when true."""

    kind: str
    option: str
    other: Optional[str] = None
    why: Optional[str] = None
    formats: Tuple[str, ...] = ()
    names: Optional[str] = None
    others: Tuple[str, ...] = ()
    equals: Optional[str] = None

    def problem(self, params: Mapping[str, Any], name: Callable[[str], str],
                decoded: Tuple[str, ...], absent: Mapping[str, str]) -> Optional[Tuple[str, str]]:
        """``(option, message)`` naming the option by ``name(wire path)`` when ``params`` (the
        wire's) break this rule, else None. ``absent``: each choice's value when not given."""
        if not _is_set(params, self.option):
            return None
        if self.kind == "exclusive":
            assert self.other is not None
            if not _is_set(params, self.other):
                return None
            why = f": {self.why}" if self.why else ""
            return name(self.other), f"{name(self.option)} and {name(self.other)} exclude each other{why}"
        if self.kind == "with":
            if any(_is_set(params, other) for other in self.others):
                return None
            if self.equals is not None:
                if _value(params, self.option) != self.equals:
                    return None
                return name(self.option), f"{name(self.option)} {self.equals!r} needs {' or '.join(map(name, self.others))}"
            return name(self.option), f"{name(self.option)} goes with {' or '.join(map(name, self.others))}"
        if self.kind == "when":
            assert self.other is not None
            if _choice(params, self.other, absent) in self.formats:
                return None
            return name(self.option), f"{name(self.option)} goes with {name(self.other)} {' or '.join(map(repr, self.formats))}"
        format = _choice(params, "output.format", absent)
        named = name(self.names or self.option)
        subject = f"{name(self.option)} " if self.names else ""  # the error names the option already
        if self.kind == "formats" and format not in self.formats:
            if self.equals is not None:
                if _value(params, self.option) != self.equals:
                    return None
                return named, f"{name(self.option)} {self.equals!r} goes with format {' or '.join(self.formats)}"
            return named, f"{subject}goes with format {' or '.join(self.formats)}"
        if self.kind == "decoded" and format not in decoded:
            return named, f"{subject}needs a decoded format ({', '.join(decoded)})"
        return None


def apply_defaults(params: Dict[str, Any], defaults: Tuple[Tuple[str, str, Optional[str], Tuple[str, ...], bool], ...],
                   decoded: Tuple[str, ...], absent: Mapping[str, str]) -> None:
    """Fills in ``params`` (the wire's) what the schema's ``x-client-defaults`` give, in order,
    each only when not given: ``(path, value, when this is set, when any of these is set, when
    the format is decoded)``. ``absent``: each choice's value when not given."""
    for path, value, when, when_any, when_decoded in defaults:
        if _value(params, path) is not None:
            continue
        if (when is not None and _is_set(params, when)) or any(_is_set(params, p) for p in when_any) \
                or (when_decoded and _choice(params, "output.format", absent) in decoded):
            if path.startswith("output."):
                params.setdefault("output", {})[path[len("output."):]] = value
            else:
                params[path] = value


def _choice(params: Mapping[str, Any], path: str, absent: Mapping[str, str]) -> Any:
    """A choice's value, or what it is when absent (the schema's default)."""
    value = _value(params, path)
    return absent.get(path) if value is None else value


def _value(params: Mapping[str, Any], path: str) -> Any:
    if path.startswith("output."):
        output = params.get("output")
        # (A dict first: the ABC check is slow, and params are dicts.)
        return output.get(path[len("output."):]) if isinstance(output, dict) or isinstance(output, Mapping) else None
    return params.get(path)


def is_set(value: Any) -> bool:
    """Whether an option's value sets it: present, and true when a boolean."""
    return value is not None and value is not False


def _is_set(params: Mapping[str, Any], path: str) -> bool:
    return is_set(_value(params, path))
