"""jaxeval inside lm-evaluation-harness: the `jaxeval` model (pip install 'jaxeval[lm-eval]').

    python -m jaxeval.lm_eval --model jaxeval --model_args pretrained=PATH,dtype=bfloat16 --tasks ...
    import jaxeval.lm_eval; lm_eval.simple_evaluate(model="jaxeval", model_args="pretrained=PATH", ...)

Importing this package registers JaxevalLM with lm-eval's model registry; `import jaxeval`
alone never imports lm-eval. Multi-host: see jaxeval/lm_eval/hosts.py.
"""

import importlib.util

if importlib.util.find_spec("lm_eval") is None:
    raise ImportError("jaxeval.lm_eval needs lm-evaluation-harness: pip install 'jaxeval[lm-eval]'")

from jaxeval.lm_eval.hosts import close_followers, follow
from jaxeval.lm_eval.model import JaxevalLM

__all__ = ["JaxevalLM", "close_followers", "follow"]
