"""LongBench v2 (THUDM/LongBench, MIT; Bai et al. 2024): 503 four-choice questions over long
contexts, run as the official pred.py runs them (prompts.py: its templates, its middle cut, its
answer extraction; runner.py: the chain-of-thought variant's two calls) and tabulated as its
result.py does (scoring.py: overall, easy, hard, short, medium, long). The task
`longbench_v2_loglik` scores the four letters by log-likelihood instead: a fast diagnostic, not
the official score. docs/longbench_v2.md is the user's guide; docs/provenance.md#longbench-v2
maps each part to the original.
"""
