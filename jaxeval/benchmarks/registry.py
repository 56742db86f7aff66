"""Which benchmarks jaxeval knows: one line per benchmark package, naming the module that holds
its Benchmark instance as BENCHMARK (jaxeval/benchmarks/base.py says what one provides).

Adding a benchmark is its package plus one line here.
"""

from __future__ import annotations

import importlib

from jaxeval.benchmarks.base import Benchmark

BENCHMARK_MODULES = (
    "jaxeval.benchmarks.agent_bench.benchmark",
    "jaxeval.benchmarks.longbench.benchmark",
    "jaxeval.benchmarks.longbench_pro.benchmark",
    "jaxeval.benchmarks.helmet.benchmark",
    "jaxeval.benchmarks.mrcr.benchmark",
    "jaxeval.benchmarks.longbench_v2.benchmark",
    "jaxeval.benchmarks.ruler.benchmark",
)


def benchmarks() -> list[Benchmark]:
    return [importlib.import_module(name).BENCHMARK for name in BENCHMARK_MODULES]


def run_tasks() -> dict[str, Benchmark]:
    """Task name -> the benchmark that runs it, over every benchmark."""
    return {task: benchmark for benchmark in benchmarks() for task in benchmark.tasks}


def benchmark_of(task: str) -> Benchmark:
    return run_tasks()[task]


def scorers() -> dict[str, Benchmark]:
    """`jaxeval score --benchmark` name -> the benchmark."""
    return {benchmark.name: benchmark for benchmark in benchmarks() if benchmark.can_rescore()}


def descriptions() -> dict[str, dict]:
    """Task -> describe() entry, every task of every benchmark."""
    described = {}
    for benchmark in benchmarks():
        described.update({task: {} for task in benchmark.tasks})
        described.update(benchmark.describe())
    return described
