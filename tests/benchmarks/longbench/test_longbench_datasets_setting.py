"""--longbench_datasets: a run (and `jaxeval validate`) over chosen LongBench datasets only, names checked."""

from __future__ import annotations

import pytest

from jaxeval.benchmarks.longbench.benchmark import LongBench, LongBenchSettings
from jaxeval.errors import ConfigError


def test_chosen_datasets_are_validated_alone_and_unknown_names_refused():
    lines = LongBench().validate("longbench", LongBenchSettings(datasets="trec, hotpotqa"))
    assert [line.split(":")[0] for line in lines] == ["longbench trec", "longbench hotpotqa"]
    assert len(LongBench().validate("longbench", LongBenchSettings())) == 21
    with pytest.raises(ConfigError, match="unknown LongBench dataset 'hotpot'; available: narrativeqa"):
        LongBench().validate("longbench", LongBenchSettings(datasets="trec,hotpot"))
    with pytest.raises(ConfigError, match="unknown LongBench-E dataset 'narrativeqa' \\(LongBench-E has no such set"):
        LongBench().validate("longbench_e", LongBenchSettings(datasets="narrativeqa"))
