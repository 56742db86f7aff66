"""RunFlags: everything a run was asked, typed, as the command line hands it down.

`jaxeval run`, validate, plan and `jaxeval.evaluate` build one (cli.py parses the flags into it);
nothing below the CLI sees an argparse namespace. The shared options are typed (ModelOptions,
RunOptions); `extra` holds the flags declared beside what reads them, by their dest: each
benchmark's Settings (read back typed by Benchmark.settings), the judges' (jaxeval.judges.options),
the plan's (jaxeval.plan.options) and --reference's (jaxeval.report.build).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from jaxeval.options.model import ModelOptions
from jaxeval.options.run import RunOptions
from jaxeval.options.settings import names_of, record_of


@dataclasses.dataclass(frozen=True)
class RunFlags:
    model: ModelOptions
    run: RunOptions
    extra: Mapping = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, values) -> "RunFlags":
        """A parsed namespace's or a mapping's flags: the shared ones typed, the rest in extra."""
        flat = dict(values) if isinstance(values, Mapping) else dict(vars(values))
        shared = names_of(ModelOptions) | names_of(RunOptions)
        return cls(ModelOptions.of(flat), RunOptions.of(flat),
                   {key: value for key, value in flat.items() if key not in shared})

    def flag(self, name: str, default=None):
        """An extra flag's value (its default when this command does not declare it)."""
        return self.extra.get(name, default)

    def values(self) -> dict:
        """{flag dest: value} of every flag (config_overrides among them): what a run records."""
        return {**record_of(self.model), **record_of(self.run), **self.extra}

    def with_model(self, **changes) -> "RunFlags":
        return dataclasses.replace(self, model=self.model.replace(**changes))

    def with_run(self, **changes) -> "RunFlags":
        return dataclasses.replace(self, run=self.run.replace(**changes))
