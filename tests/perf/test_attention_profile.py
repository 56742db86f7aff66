"""perf/attention_profile.py's command-line pieces: XLA compiler options for a third side, pinning."""

import pytest
from perf_scripts import load_script as load


def load_script():
    return load("attention_profile")


def test_option_values_keep_their_types():
    profile = load_script()
    assert profile.option_value("xla_cpu_prefer_vector_width=512") == ("xla_cpu_prefer_vector_width", 512)
    assert profile.option_value("xla_cpu_enable_fast_math=False") == ("xla_cpu_enable_fast_math", False)
    assert profile.option_value("xla_cpu_max_isa=AVX2") == ("xla_cpu_max_isa", "AVX2")


@pytest.mark.parametrize("bad", ["xla_cpu_prefer_vector_width", "=512"])
def test_an_option_without_key_and_value_is_one_clear_line(bad):
    with pytest.raises(SystemExit, match="expected KEY=VALUE"):
        load_script().option_value(bad)


def test_pinning_to_no_cpus_is_refused_before_anything_changes():
    import os

    before = os.sched_getaffinity(0)
    with pytest.raises(SystemExit, match="--cores 0"):
        load_script().pin(0)
    assert os.sched_getaffinity(0) == before


@pytest.mark.slow
def test_an_options_side_is_timed_and_compared_with_the_plain_one():
    pytest.importorskip("torch")
    report = load_script().whole_read(2048, 1, {"xla_cpu_prefer_vector_width": 512})
    assert set(report) >= {"jaxeval", "jaxeval+options", "torch", "jaxeval+options_over_torch"}
    # the vector width changes how XLA's own loops are vectorised, not the attention's arithmetic
    assert report["options"]["identical_to_jaxeval"] and report["options"]["max_abs_diff"] == 0.0
