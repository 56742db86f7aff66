"""`jaxeval plan`: what a run will cost, before it runs (issue 17, part 2).

The counting pass (counting.py) runs each task's own Benchmark.run on a stand-in model that has
the real config and tokenizer but no weights: every read and generation request the benchmark
builds is recorded, not computed, so the item and token counts are the real run's. cost.py turns
the requests into FLOPs (jaxeval.plan.flops.read_flops, attention causal), memory (weights as
stored, KV caches at the longest length, per chip under the mesh) and time (hardware.py: a named
accelerator's peak at a stated MFU, the detected device's, or a short measured calibration).
"""
