"""agent_bench outcomes through the journal: exact round trip, records of another version refused."""

import dataclasses
import json

import pytest

from jaxeval.benchmarks.agent_bench.facts import ItemOutcome, QueryOutcome
from jaxeval.benchmarks.agent_bench.runner import outcome_from_record
from jaxeval.benchmarks.agent_bench.tool_calls import ToolItemOutcome, ToolTargetOutcome
from jaxeval.errors import DataError

FACTS = ItemOutcome("f-1", "text", None, 8000, (QueryOutcome("f-1", 0, True, True, 2, 2, -0.1 / 3, 4000),))
TOOLS = ToolItemOutcome("t-1", "text", "note", 900, (ToolTargetOutcome("name", True, False, True, True, -1e-9, 2, 5),))


@pytest.mark.parametrize("config, outcome", [("facts", FACTS), ("tool_calls", TOOLS)])
def test_outcomes_round_trip_exactly_through_json(config, outcome):
    assert outcome_from_record(config, json.loads(json.dumps(dataclasses.asdict(outcome)))) == outcome


def test_a_record_of_another_version_is_refused():
    record = json.loads(json.dumps(dataclasses.asdict(TOOLS)))
    del record["targets"][0]["distance_tokens"]
    with pytest.raises(DataError, match="'t-1'.*another jaxeval version .ToolTargetOutcome"):
        outcome_from_record("tool_calls", record)
