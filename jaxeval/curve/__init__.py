"""`jaxeval curve`: how a model reads one long text, position by position.

text.py reads the text and its tokens; positions.py reads them with the model (and a reference)
and reduces per position bucket; command.py is the command (flags, JSON, PNG). docs/curve.md is
the user's guide.
"""
