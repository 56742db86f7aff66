"""A benchmark's own settings: a frozen dataclass whose fields are its `--<benchmark>_<field>`
flags and the same keys in a run config YAML.

    @dataclasses.dataclass(frozen=True)
    class Settings:
        data: str | None = setting(None, "folder of the JSONL files (default: the embedded sample)")
        seed: int = setting(42, "sampling seed")

The type annotation gives the flag's type (bool: a switch), `choices` its allowed values,
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

_SCALARS = (bool, int, float, str)


def setting(default, help: str = "", *, choices: tuple | None = None, hashed: bool = True, compare: bool = True):
    """A Settings field: its default, the help of its flag, allowed values, whether it is hashed,
    whether two runs compared sample by sample must agree on it."""
    return dataclasses.field(default=default, metadata={"help": help, "choices": choices, "hashed": hashed,
                                                        "compare": compare})


def _scalar_type(annotation) -> type:
    """int for `int`, `int | None` or Optional[int]; the same for bool, float, str."""
    if annotation in _SCALARS:
        return annotation
    members = [a for a in typing.get_args(annotation) if a is not type(None)]
    if len(members) == 1 and members[0] in _SCALARS:
        return members[0]
    raise TypeError(f"a setting is a bool, int, float or str (or one of them | None), not {annotation!r}")


def fields(settings_class) -> list[tuple[dataclasses.Field, type]]:
    """(field, scalar type) of every setting, in declaration order."""
    hints = typing.get_type_hints(settings_class)
    return [(field, _scalar_type(hints[field.name])) for field in dataclasses.fields(settings_class)]


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


def from_args(prefix: str, settings_class, args) -> object:
    """The Settings held by a parsed namespace (a missing flag: the field's default)."""
    return settings_class(**{field.name: getattr(args, flag_dest(prefix, field.name), field.default)
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
