"""A benchmark's own settings (a frozen dataclass of `setting` fields): the machinery lives in
jaxeval.options.settings, shared with the run's ModelOptions and RunOptions."""

from jaxeval.options.settings import (DeprecatedAlias, add_arguments, add_flags, fields, flag_dest,  # noqa: F401
                                      flag_keys, flag_values, from_args, setting, values_of, warn_alias)
