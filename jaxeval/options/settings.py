"""Options as frozen dataclasses whose fields are flags and the same keys in a run config YAML:
a benchmark's own settings (its `--<benchmark>_<field>` flags) and the shared ModelOptions and
RunOptions (jaxeval.options.model, jaxeval.options.run; flags without a prefix). One declaration
gives the flag, its type, choices and help, the YAML key, and whether the value is hashed into
the run's config hash.

    @dataclasses.dataclass(frozen=True)
    class Settings:
        data: str | None = setting(None, "folder of the JSONL files (default: the embedded sample)")
        seed: int = setting(42, "sampling seed")

The type annotation gives the flag's type (bool: a switch), `parse` a flag's own reader where a
scalar type does not say it (--limit: an integer or a fraction), `choices` its allowed values,
`hashed=False` a setting that cannot change a number (an extra output file): it is left out of
the run's config hash; `compare=False` one `jaxeval report --reference` ignores when it checks that
two runs can be compared sample by sample (a reference's own files). Old flag spellings users may have in YAML files are `aliases`: they still
work, with a one-line deprecation warning.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from collections.abc import Mapping

_SCALARS = (bool, int, float, str)


def setting(default, help: str = "", *, choices: tuple | None = None, hashed: bool = True, compare: bool = True,
            parse=None, flag: str | None = None, metavar: str | None = None, required: bool = False):
    """A Settings field: its default, the help of its flag, allowed values, whether it is hashed,
    whether two runs compared sample by sample must agree on it; parse: the flag's reader (text ->
    value) when the annotation is no single scalar; flag: the flag's name when it is not the field's
    (--journal sets journal_mode); metavar: the flag's placeholder in --help; required: a flag the command
    cannot go without (its default then only types the field)."""
    return dataclasses.field(default=default, metadata={"help": help, "choices": choices, "hashed": hashed,
                                                        "compare": compare, "parse": parse, "flag": flag,
                                                        "metavar": metavar, "required": required})


def _scalar_type(annotation) -> type:
    """int for `int`, `int | None` or Optional[int]; the same for bool, float, str."""
    if annotation in _SCALARS:
        return annotation
    members = [a for a in typing.get_args(annotation) if a is not type(None)]
    if len(members) == 1 and members[0] in _SCALARS:
        return members[0]
    raise TypeError(f"a setting is a bool, int, float or str (or one of them | None), not {annotation!r}")


def fields(settings_class) -> list[tuple[dataclasses.Field, type]]:
    """(field, scalar type or the field's own parse) of every setting, in declaration order."""
    hints = typing.get_type_hints(settings_class)
    return [(field, field.metadata.get("parse") or (dict if field.metadata.get("flag") is False
                                                    else _scalar_type(hints[field.name])))
            for field in dataclasses.fields(settings_class)]


def _default(field: dataclasses.Field):
    return field.default_factory() if field.default is dataclasses.MISSING else field.default


def flag_dest(prefix: str, name: str) -> str:
    return f"{prefix}_{name}"


class DeprecatedAlias(argparse.Action):
    """An old spelling of a setting's flag: sets the setting and warns once, in one line."""

    def __init__(self, option_strings, dest, new_flag: str, **kwargs):
        self.new_flag = new_flag
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        warn_alias(option_string, self.new_flag)
        setattr(namespace, self.dest, values)

    def warn_key(self, where: str) -> None:
        """The warning for this spelling used as a run config YAML key."""
        warn_alias(where, f"'{self.new_flag.lstrip('-')}'")


def warn_alias(old: str, new: str) -> None:
    print(f"jaxeval: warning: {old} is deprecated; use {new} (same meaning)", file=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser, prefix: str, settings_class, aliases: dict[str, str],
                  title: str) -> None:
    """The flags of every setting (and of their deprecated aliases) in a group titled `title`."""
    group = parser.add_argument_group(title)
    for field, kind in fields(settings_class):
        dest = flag_dest(prefix, field.name)
        help_text = field.metadata.get("help") or None
        if kind is bool:
            group.add_argument(f"--{dest}", dest=dest, action="store_true", default=field.default, help=help_text)
            continue
        group.add_argument(f"--{dest}", dest=dest, type=kind, default=field.default,
                           choices=field.metadata.get("choices"), help=help_text)
    for old, name in aliases.items():
        kind = dict((f.name, k) for f, k in fields(settings_class))[name]
        group.add_argument(f"--{old}", dest=flag_dest(prefix, name), type=kind, action=DeprecatedAlias,
                           new_flag=f"--{flag_dest(prefix, name)}", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def add_flags(parser: argparse.ArgumentParser, options_class, *, names=None, defaults: dict | None = None,
              helps: dict | None = None, choices: dict | None = None, positional: tuple = ()) -> None:
    """The flags of shared options (no prefix: --dtype), into parser or a group: every field, or
    those in names; defaults / helps / choices: a command's own default, help or allowed values for a
    field (jaxeval bench's --model names a shape; jaxeval compile lays out fewer dtypes and KV caches);
    positional: fields taken as positional arguments (jaxeval serve MODEL)."""
    defaults, helps, choices = defaults or {}, helps or {}, choices or {}
    for field, kind in fields(options_class):
        if (names is not None and field.name not in names) or field.metadata.get("flag") is False:
            continue
        default = defaults.get(field.name, field.default)
        help_text = helps.get(field.name, field.metadata.get("help")) or None
        allowed = choices.get(field.name, field.metadata.get("choices"))
        metavar = None if field.name in choices else field.metadata.get("metavar")
        if field.name in positional:
            parser.add_argument(field.name, type=kind if kind is not str else None, help=help_text)
        elif kind is bool and field.metadata.get("parse") is None:
            parser.add_argument(f"--{field.metadata.get('flag') or field.name}", dest=field.name, action="store_true",
                                default=default, help=help_text)
        else:
            parser.add_argument(f"--{field.metadata.get('flag') or field.name}", dest=field.name,
                                type=kind if kind is not str else None, default=default,
                                choices=allowed, help=help_text,
                                required=bool(field.metadata.get("required")),
                                **({"metavar": metavar} if metavar else {}))


def values_of(options_class, values) -> object:
    """The options held by a parsed namespace or a mapping of flag values (a missing one: the default)."""
    get = values.get if isinstance(values, Mapping) else lambda name, default: getattr(values, name, default)
    return options_class(**{field.name: get(field.name, _default(field)) for field, _ in fields(options_class)})


def parse_value(options_class, name: str, value, where: str):
    """value (text as a flag gives it, or a value already typed) read as options_class's flag `name`
    reads it: text options keep it as given; a bad value or a value outside the choices is one
    ConfigError naming where, the key and the value."""
    from jaxeval.errors import ConfigError

    known = {field.name: (field, kind) for field, kind in fields(options_class) if field.metadata.get("flag") is not False}
    if name not in known:
        raise ConfigError(f"{where}: unknown key '{name}'; known: {', '.join(sorted(known))}")
    field, kind = known[name]
    try:
        converted = value if kind is str or value is None else kind(value)
    except (argparse.ArgumentTypeError, TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {name}={value} is not valid ({e})") from None
    choices = field.metadata.get("choices")
    if choices is not None and converted is not None and converted not in choices:
        raise ConfigError(f"{where}: {name}={value} is not one of {', '.join(map(str, choices))}")
    return converted


def names_of(options_class, *, hashed: bool | None = None) -> set[str]:
    """The field names (= flag dests) of shared options whose `hashed` metadata is as asked (None: either)."""
    return {field.name for field, _ in fields(options_class)
            if hashed in (None, field.metadata.get("hashed", True))}


def record_of(options) -> dict:
    """{field: value} of shared options, in declaration order: the keys a run records."""
    return {field.name: getattr(options, field.name) for field, _ in fields(type(options))}


def from_args(prefix: str, settings_class, args) -> object:
    """The Settings held by a mapping of flag values (jaxeval.options.flags.RunFlags.extra) or a
    parsed namespace (a score command's own flags); a missing flag: the field's default."""
    get = args.get if isinstance(args, Mapping) else lambda name, default: getattr(args, name, default)
    return settings_class(**{field.name: get(flag_dest(prefix, field.name), field.default)
                             for field, _ in fields(settings_class)})


def flag_keys(prefix: str, settings_class, *, hashed: bool | None = None, compare: bool | None = None) -> set[str]:
    """The flag dests of the settings whose `hashed` / `compare` metadata is as asked (None: either)."""
    return {flag_dest(prefix, field.name) for field, _ in fields(settings_class)
            if hashed in (None, field.metadata.get("hashed", True))
            and compare in (None, field.metadata.get("compare", True))}


def flag_values(prefix: str, settings, hashed_only: bool = False) -> dict:
    """{flag dest: value} of a Settings, in declaration order; hashed_only: the hashed ones."""
    return {flag_dest(prefix, field.name): getattr(settings, field.name) for field, _ in fields(type(settings))
            if field.metadata.get("hashed", True) or not hashed_only}
