"""OpenAI-MRCR (multi-round co-reference resolution, openai/mrcr, MIT): 2, 4 and 8 needles in a
long synthetic conversation; the model must repeat the k-th of several look-alike answers after
a random prefix. Graded as the dataset card's `grade` (grading.py), binned by the card's token
bins, every item that does not fit the window counted as skipped (runner.py, summary.py).
docs/mrcr.md is the user's guide; docs/provenance.md#openai-mrcr maps each part to the original.
"""
