"""The decoder's layer stacks: runs of consecutive layers with one parameter layout, each scanned on its own.

Most models are one stack, "layers". A MoE model whose first layers keep the dense MLP (DeepSeek-V3's
first_k_dense_replace, a Qwen3-MoE whose mlp_only_layers are its first layers) is two, run in
sequence: "dense_layers" (layers 0 .. k-1, the dense MLP) then "layers" (k .. L-1, the experts).
Compile time grows with the number of stacks, never with depth. Each stack runs with its own view of
the config (the dense stack's has no MoE), so a layer never asks which stack it is in. Per-layer
tables (rope, windows) and the KV cache stay indexed by the model's layer number; a stack takes
rows first .. first + count - 1 of them.
"""

from __future__ import annotations

import dataclasses
import functools

from jaxeval.models.config import ModelConfig


@dataclasses.dataclass(frozen=True)
class LayerStack:
    name: str  # its key in the parameter dict
    first: int  # the model's layer number of its first layer
    count: int
    config: ModelConfig  # the config its layers run with

    @property
    def rows(self) -> slice:
        return slice(self.first, self.first + self.count)


@functools.lru_cache(maxsize=64)
def layer_stacks(c: ModelConfig) -> tuple[LayerStack, ...]:
    if not c.dense_layers:
        return (LayerStack("layers", 0, c.num_layers, c),)
    dense = dataclasses.replace(c, moe=None, moe_intermediate_size=0, shared_expert_intermediate_size=0,
                                dense_layers=0)
    return (LayerStack("dense_layers", 0, c.dense_layers, dense),
            LayerStack("layers", c.dense_layers, c.num_layers - c.dense_layers, c))
