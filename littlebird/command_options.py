"""Options as dataclasses: one declaration gives the command line, the recipe's keys and the help text.

A tool's options are a ``@dataclass(kw_only=True)`` whose fields each carry a default (or none, for a
required option) and a one-line help, written with :func:`option`. :func:`parse_options` turns the class
into an ``argparse`` command line (``max_length`` becomes ``--max-length``, a bool ``--flag`` /
``--no-flag``), :func:`options_from_mapping` builds it from a recipe's mapping of the same names, and a
``__post_init__`` that raises ``ValueError`` checks both the same way.

A field may also say what values it takes (``minimum``, ``above``, ``maximum``, ``below``, ``choices``), which
:func:`check_options` enforces with a message that names the field; which word stands for None on the command
line (``none``); and how a page shows it (``slider``). :func:`add_options` puts some or all of a class's
fields on an existing command line, so several commands offer one declaration's flags and defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any


@dataclasses.dataclass(frozen=True)
class Slider:
    """How a page shows a numeric option: a slider from ``low`` to ``high`` in steps of ``step``, under ``label``."""

    low: float
    high: float
    step: float
    label: str


def option(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    choices: Sequence[str] | None = None,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    below: float | None = None,
    none: str | None = None,
    aliases: Sequence[str] = (),
    slider: Slider | None = None,
) -> Any:
    """A dataclass field with its help text; no default makes it required.

    ``choices``: the values allowed; ``minimum``/``maximum``: inclusive bounds, ``above``/``below``: exclusive
    ones (:func:`check_options` enforces them). ``none``: the command-line word for None, for an option that may
    be None. ``aliases``: more flags for it (``--flag`` spellings). ``slider``: how a page shows it."""
    bounds = {"minimum": minimum, "above": above, "maximum": maximum, "below": below}
    return dataclasses.field(
        default=default,
        metadata={
            "help": help,
            "choices": tuple(choices) if choices else None,
            "none": none,
            "aliases": tuple(aliases),
            "slider": slider,
            **{name: value for name, value in bounds.items() if value is not None},
        },
    )


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
    parser = argparse.ArgumentParser(
        description=description or cls.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, **parser_options
    )
    add_options(parser, cls)
    return parser


def flag_of(name: str) -> str:
    """The command-line flag of the field ``name``: ``max_length`` -> ``--max-length``."""
    return "--" + name.replace("_", "-")


def _value_or_none(kind: type, word: str):
    """An argparse type that reads ``word`` as None and anything else as ``kind``."""

    def convert(text: str):
        return None if text == word else kind(text)

    convert.__name__ = kind.__name__  # argparse names the type in its "invalid value" message
    return convert


def add_options(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls,
    only: Sequence[str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> None:
    """Add a flag to ``parser`` for each field of ``cls`` (those named in ``only``, where given, in its order), with
    the field's default, or the one ``defaults`` gives it (a tool whose context sets it: the environment)."""
    fields = {field.name: (field, kind, optional) for field, kind, optional in option_fields(cls)}
    defaults = defaults or {}
    for name in fields if only is None else only:
        field, kind, optional = fields[name]
        default = defaults.get(name, field.default)
        flags = [flag_of(field.name), *field.metadata.get("aliases", ())]
        help_text = field.metadata.get("help", "")
        if kind is bool:
            shown = flags[0] if default else "--no-" + flags[0][2:]
            parser.add_argument(
                *flags,
                action=argparse.BooleanOptionalAction,
                default=default,
                help=f"{help_text} (default: {shown})".lstrip(),
                dest=field.name,
            )
            continue
        word = field.metadata.get("none") if optional else None
        kwargs: dict[str, Any] = {
            "type": kind if word is None else _value_or_none(kind, word),
            "help": help_text,
            "dest": field.name,
        }
        if field.metadata.get("choices"):
            kwargs["choices"] = field.metadata["choices"] + ((None,) if word else ())
            kwargs["metavar"] = "{" + ",".join([*field.metadata["choices"], *([word] if word else [])]) + "}"
        if default is dataclasses.MISSING:
            kwargs["required"] = True
        else:
            kwargs["default"] = default
            if default is not None:  # what None means, the help says
                kwargs["help"] = f"{help_text} (default: {default})".lstrip()
        parser.add_argument(*flags, **kwargs)


def _rule(meta: Mapping[str, Any]) -> str | None:
    """The bounds of a field's metadata in words: "at least 8", "in (0, 1]"; None without bounds."""
    low = ("[", meta["minimum"]) if "minimum" in meta else ("(", meta["above"]) if "above" in meta else None
    high = ("]", meta["maximum"]) if "maximum" in meta else (")", meta["below"]) if "below" in meta else None
    if low and high:
        return f"in {low[0]}{low[1]:g}, {high[1]:g}{high[0]}"
    if low:
        return f"at least {low[1]:g}" if low[0] == "[" else f"above {low[1]:g}"
    if high:
        return f"at most {high[1]:g}" if high[0] == "]" else f"below {high[1]:g}"
    return None


def _within(value: float, meta: Mapping[str, Any]) -> bool:
    return not (
        ("minimum" in meta and value < meta["minimum"])
        or ("above" in meta and value <= meta["above"])
        or ("maximum" in meta and value > meta["maximum"])
        or ("below" in meta and value >= meta["below"])
    )


def check_options(options) -> None:
    """Raise a ``ValueError`` that names the first field of ``options`` whose value its declaration does not allow:
    of another type, None where it may not be, not among its ``choices`` or outside its bounds."""
    for field, kind, optional in option_fields(type(options)):
        value, meta = getattr(options, field.name), field.metadata
        or_none = " or None" if optional else ""
        if value is None:
            if optional:
                continue
            raise ValueError(f"{field.name} may not be None, got {value!r}")
        if kind is bool:
            if not isinstance(value, bool):
                raise ValueError(f"{field.name} is True or False{or_none}, not {value!r}")
        elif kind in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{field.name} is a number{or_none}, not {value!r}")
            rule = _rule(meta)
            if rule and not _within(value, meta):
                raise ValueError(f"{field.name} must be {rule}{' (or None)' if optional else ''}, got {value!r}")
        if meta.get("choices") and value not in meta["choices"]:
            raise ValueError(f"{field.name} is one of {', '.join(meta['choices'])}{or_none}, not {value!r}")


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


def sliders(cls) -> dict[str, Slider]:
    """``{field name: its Slider}`` for the fields of ``cls`` that a page shows, in declaration order."""
    return {field.name: field.metadata["slider"] for field, _, _ in option_fields(cls) if field.metadata.get("slider")}


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
