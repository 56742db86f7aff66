"""`jaxeval bench`: jaxeval against transformers on the same weights, in one run, as ratios.

shapes: named shapes and the FLOPs a read needs; worker: one side in its own process;
measure: the interleaved phases; report: the JSON, the targets and the table; cli: the command.
"""
