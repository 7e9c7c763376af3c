"""What the generated option table (``_option_table.py``) is made of: a :class:`Rule` per option
and a :class:`Relation` per rule between options, with how a relation is checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Tuple, Union


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
    of these output formats), ``decoded`` (``option`` only with a decoded output format);
    ``names``: the option an error names, when not the rule's own. An option is set when
    present, and a boolean when true."""

    kind: str
    option: str
    other: Optional[str] = None
    why: Optional[str] = None
    formats: Tuple[str, ...] = ()
    names: Optional[str] = None

    def problem(self, params: Mapping[str, Any], name: Callable[[str], str],
                decoded: Tuple[str, ...]) -> Optional[Tuple[str, str]]:
        """``(option, message)`` naming the option by ``name(wire path)`` when ``params`` (the
        wire's) break this rule, else None."""
        if not _is_set(params, self.option):
            return None
        if self.kind == "exclusive":
            assert self.other is not None
            if not _is_set(params, self.other):
                return None
            why = f": {self.why}" if self.why else ""
            return name(self.other), f"{name(self.option)} and {name(self.other)} exclude each other{why}"
        format = _value(params, "output.format") or "original"
        named = name(self.names or self.option)
        subject = f"{name(self.option)} " if self.names else ""  # the error names the option already
        if self.kind == "formats" and format not in self.formats:
            return named, f"{subject}goes with format {' or '.join(self.formats)}"
        if self.kind == "decoded" and format not in decoded:
            return named, f"{subject}needs a decoded format ({', '.join(decoded)})"
        return None


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
