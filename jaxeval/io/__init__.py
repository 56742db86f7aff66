"""The one input/output boundary: reading users' files (inputs, rows), local and fsspec paths
(fs), atomic JSON writes (json_files) and output-destination checks (outputs).

Ground floor: nothing here imports from jaxeval beyond errors and secrets, so every layer above
(models, benchmarks, results, the CLI) can use it."""
