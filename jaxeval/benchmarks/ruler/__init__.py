"""RULER (NVIDIA/RULER at c3f5e3b, Apache-2.0): its 13 synthetic tasks generated locally with the
evaluated model's tokenizer at any length, draw for draw as the official generators draw, cached
on disk, generated and scored with the official metrics (docs/ruler.md, docs/provenance.md#ruler)."""
