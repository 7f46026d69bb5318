"""Options as dataclasses: one declaration gives the command line, the recipe's keys and the help text.

A tool's options are a ``@dataclass(kw_only=True)`` whose fields each carry a default (or none, for a
required option) and a one-line help, written with :func:`option`. :func:`parse_options` turns the class
into an ``argparse`` command line (``max_length`` becomes ``--max-length``, a bool ``--flag`` /
``--no-flag``), :func:`options_from_mapping` builds it from a recipe's mapping of the same names, and a
``__post_init__`` that raises ``ValueError`` checks both the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any


def option(default: Any = dataclasses.MISSING, help: str = "", *, choices: Sequence[str] | None = None) -> Any:
    """A dataclass field with its help text (and allowed values); no default makes it required."""
    return dataclasses.field(default=default, metadata={"help": help, "choices": tuple(choices) if choices else None})


def _base_type(annotation) -> tuple[type, bool]:
    """``int | None`` -> (int, True); ``float`` -> (float, False)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) != 1:
            raise TypeError(f"an option is of one type or None, not {annotation}")
        return members[0], True
    return annotation, False


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING


def option_fields(cls) -> list[tuple[dataclasses.Field, type, bool]]:
    """(field, its type, whether it may be None) for each option of ``cls``."""
    hints = typing.get_type_hints(cls)
    return [(field, *_base_type(hints[field.name])) for field in dataclasses.fields(cls) if field.init]


def build_parser(cls, description: str | None = None, **parser_options) -> argparse.ArgumentParser:
    """The command line of ``cls``: ``--name-with-dashes`` per field, its help and default shown."""
    parser = argparse.ArgumentParser(description=description or cls.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter, **parser_options)
    for field, kind, _ in option_fields(cls):
        flag = "--" + field.name.replace("_", "-")
        help_text = field.metadata.get("help", "")
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=field.default, help=help_text)
            continue
        kwargs: dict[str, Any] = {"type": kind, "help": help_text, "dest": field.name}
        if field.metadata.get("choices"):
            kwargs["choices"] = field.metadata["choices"]
        if _required(field):
            kwargs["required"] = True
        else:
            kwargs["default"] = field.default
            if field.default is not None:
                kwargs["help"] = f"{help_text} (default: {field.default})".lstrip()
        parser.add_argument(flag, **kwargs)
    return parser


def parse_options(cls, argv: Sequence[str] | None = None, *, description: str | None = None):
    """``cls`` from the command line ``argv``; a ``ValueError`` of its checks becomes a usage error."""
    parser = build_parser(cls, description)
    namespace = parser.parse_args(argv)
    try:
        return cls(**vars(namespace))
    except ValueError as error:
        parser.error(str(error))


def _coerce(value: Any, kind: type, name: str) -> Any:
    """A recipe's value as the field's type: YAML reads ``1e-4`` as text and ``5`` as an int."""
    if value is None or kind is Any:
        return value
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ValueError(f"{name} is true or false, not {value!r}")
    if kind is float and isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            pass
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind is str and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"{name} is {kind.__name__}, not {value!r}")


def options_from_mapping(cls, mapping: Mapping[str, Any], *, where: str = "options"):
    """``cls`` from a recipe's mapping of field names to values, each checked against the field's type."""
    known = {field.name: (field, kind, optional) for field, kind, optional in option_fields(cls)}
    unknown = sorted(set(mapping) - set(known))
    if unknown:
        raise ValueError(f"{where}: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    missing = sorted(name for name, (field, _, _) in known.items() if _required(field) and name not in mapping)
    if missing:
        raise ValueError(f"{where}: missing required option(s) {', '.join(missing)}")
    values = {}
    for name, value in mapping.items():
        field, kind, optional = known[name]
        if value is None and not optional:
            raise ValueError(f"{where}: {name} may not be empty")
        choices = field.metadata.get("choices")
        value = _coerce(value, kind, f"{where}: {name}")
        if choices and value not in choices:
            raise ValueError(f"{where}: {name} is one of {', '.join(choices)}, not {value!r}")
        values[name] = value
    return cls(**values)


def describe_options(cls) -> list[tuple[str, str, str]]:
    """(name, default, help) of each option of ``cls``, for ``littlebird train --list-stages``."""
    rows = []
    for field, _, _ in option_fields(cls):
        default = "(required)" if _required(field) else repr(field.default)
        rows.append((field.name, default, field.metadata.get("help", "")))
    return rows


@dataclasses.dataclass(kw_only=True)
class Options:
    """Base of every options class. Groups of options are combined by inheritance; each group's
    ``__post_init__`` checks its own fields and calls ``super().__post_init__()``, so all checks run."""

    def __post_init__(self) -> None:
        pass
