"""Model-based judges: an OpenAI-compatible HTTP client and a local jaxeval model."""

from jaxeval.judges.base import FailureCounter, Judge, JudgeReply, judge_record, with_reply_limit
from jaxeval.judges.make import make_judge

__all__ = ["FailureCounter", "Judge", "JudgeReply", "judge_record", "make_judge", "with_reply_limit"]
