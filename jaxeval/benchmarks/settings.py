"""A benchmark's own settings (a frozen dataclass of `setting` fields): the machinery lives in
jaxeval.options.settings, shared with the run's ModelOptions and RunOptions."""

from jaxeval.options.settings import (DeprecatedAlias, add_arguments, fields, flag_dest, flag_keys,  # noqa: F401
                                      flag_values, from_args, setting, warn_alias)
