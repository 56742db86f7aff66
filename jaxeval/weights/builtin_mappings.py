"""Built-in mappings (jaxeval.weights.mapping), by name: other trainers' checkpoints that load with
`--mapping NAME` and nothing else."""

BUILTIN: dict[str, dict] = {}
