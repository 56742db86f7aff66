"""Quantized weights on a device mesh: codes and scales sharded along the dense weight's logical axes.

A Quantized leaf (jaxeval.models.quant) takes the logical names of the weight it stands for
(PARAM_AXES): codes of the dense shape (int8, fp8) take them as they are; packed int4 codes
[*lead, In/2, *out] and the per-group scales, zero points and offsets [*lead, G, *out] keep the
names of the lead (layer) and output dims, and the input dim's name where the weight has a single
contraction dim (rows and groups are consecutive runs of input rows, so a split of them is a split
of the input); a flattened multi-dim input (wo's [H, hd]) and fp8 block scales over a flattened
output are replicated ("quant_rows"). The sharding rules' divisibility rule (a mesh axis that does
not divide a dim is dropped for it) applies as for every array. Arrays are placed from host numpy
with jax.make_array_from_callback, so each process builds only its own shards.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxeval.models.param_layout import PARAM_AXES
from jaxeval.models.quant import Quantized
from jaxeval.models.sharding import sharding

REPLICATED = "quant_rows"


def quantized_names(w: Quantized, names: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Logical names of each array field of w, from the dense weight's names."""
    lead = 1 if names and names[0] == "layers" else 0
    n_in = len(w.in_shape)
    lead_names, in_names, out_names = names[:lead], names[lead:lead + n_in], names[lead + n_in:]
    row = in_names if n_in == 1 else (REPLICATED,)
    q_names = names if w.q.ndim == len(names) else lead_names + row + out_names  # int4: packed rows
    per_group = lead_names + row + out_names
    out = {"q": q_names}
    for field in ("scale", "zero", "offset"):
        a = getattr(w, field)
        if a is not None:
            out[field] = per_group if a.ndim == len(per_group) else lead_names + (REPLICATED,) * (a.ndim - lead)
    return out


def _place(array, names, mesh):
    host = np.asarray(array)
    target = sharding(host.shape, names, mesh)
    return jax.make_array_from_callback(host.shape, target, lambda index: host[index])


def place_params(params: dict, mesh) -> dict:
    """A parameter tree of host arrays (dense and Quantized leaves) as global arrays sharded over mesh."""
    def one(name, w):
        if isinstance(w, dict):
            return {key: one(key, value) for key, value in w.items()}
        names = PARAM_AXES[name]
        if not isinstance(w, Quantized):
            return _place(w, names, mesh)
        fields = quantized_names(w, names)
        return dataclasses.replace(w, **{field: _place(getattr(w, field), n, mesh) for field, n in fields.items()})

    return {name: one(name, w) for name, w in params.items()}
