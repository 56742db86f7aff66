"""The flags of a plan (`jaxeval plan`, and the plan `jaxeval run` records) and their checks."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from jaxeval.errors import ConfigError
from jaxeval.plan.hardware import ACCELERATORS, DEFAULT_MBU, DEFAULT_MFU


PLAN_FLAGS = ("accelerator", "mfu", "mbu", "calibrate", "judge_price", "chip_price", "plan_json")


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of the estimate (also accepted by `jaxeval run`, which records its plan)."""
    group = p.add_argument_group("plan (jaxeval plan, and plan.estimated in a run's results)")
    group.add_argument("--accelerator", choices=tuple(ACCELERATORS), default=None,
                       help="estimate the time on this accelerator (its peak at --mfu) instead of the detected device")
    group.add_argument("--mfu", type=float, default=DEFAULT_MFU, help="share of the peak FLOP/s reads and prefill reach")
    group.add_argument("--mbu", type=float, default=DEFAULT_MBU, help="share of the HBM bandwidth decode steps reach")
    group.add_argument("--calibrate", choices=("auto", "matmul", "model", "none"), default="auto",
                       help="auto: a named or recognised accelerator's peak, else a measured matmul peak; model: time "
                            "a few jitted reads and a short generation of the model itself (loads its weights)")
    group.add_argument("--judge_price", default=None, metavar="IN,OUT",
                       help="judge price in $ per 1M input and output tokens, e.g. 2.5,10")
    group.add_argument("--chip_price", type=float, default=None, metavar="USD",
                       help="$ per chip-hour: the plan's time as a cost (chip_hours x price)")
    group.add_argument("--plan_json", default=None, help="jaxeval plan: also write the plan's JSON here")


def judge_price(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        price_in, price_out = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--judge_price {text!r}: give $ per 1M input and output tokens as IN,OUT (e.g. 2.5,10)") from None
    if price_in < 0 or price_out < 0:
        raise ConfigError(f"--judge_price {text!r}: prices cannot be negative")
    return price_in, price_out


def check_plan_arguments(values: Mapping) -> None:
    """The plan's flags, by dest (jaxeval.options.flags.RunFlags.extra)."""
    for flag in ("mfu", "mbu"):
        value = values.get(flag)
        if value is not None and not 0 < value <= 1:
            raise ConfigError(f"--{flag} must be in (0, 1], got {value}")
    judge_price(values.get("judge_price"))
    price = values.get("chip_price")
    if price is not None and not (price >= 0 and price != float("inf")):
        raise ConfigError(f"--chip_price must be a non-negative number of $ per chip-hour, got {price}")
