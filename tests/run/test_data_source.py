"""results["data_source"]: the items a task scored, counted once, and unknown where a leaf does not know."""

from jaxeval.suite import _record_data_source


class _Bench:
    def __init__(self, shipped=False):
        self.shipped = shipped

    def data_source(self, settings):
        return {"data": "x", "shipped_sample": self.shipped}


def test_a_task_total_is_counted_once_and_leaves_without_an_original_do_not_crash():
    # MRCR's layout: a task total with the original count, leaves whose original is None
    results = {"n-samples": {"mrcr": {"original": 12, "effective": 9},
                             "mrcr/2needle": {"original": None, "effective": 5, "skipped": 1},
                             "mrcr/4needle": {"original": None, "effective": 4, "skipped": 2}}}
    _record_data_source(results, "mrcr", _Bench(), None)
    assert results["data_source"]["mrcr"]["items"] == {"original": 12, "effective": 9}


def test_leaves_are_summed_when_the_task_has_no_total(capsys):
    results = {"n-samples": {"longbench/qasper": {"original": 3, "effective": 2},
                             "longbench/hotpotqa": {"original": 4, "effective": 4},
                             "longbench_e/qasper": {"original": 9, "effective": 9}}}
    _record_data_source(results, "longbench", _Bench(shipped=True), None)
    assert results["data_source"]["longbench"]["items"] == {"original": 7, "effective": 6}
    assert "(6 items)" in capsys.readouterr().out


def test_an_unknown_original_stays_unknown():
    results = {"n-samples": {"t/a": {"original": None, "effective": 2}, "t/b": {"original": 3, "effective": 3}}}
    _record_data_source(results, "t", _Bench(), None)
    assert results["data_source"]["t"]["items"] == {"original": None, "effective": 5}
