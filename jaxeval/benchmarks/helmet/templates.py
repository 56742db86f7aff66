"""HELMET's prompt templates (verbatim, from jaxeval/assets/helmet_data/task_templates.json) per dataset.

Each dataset has a user template, a system template (the answer prefix) and the separator
that joins them for completion mode: one newline, two for InfBench, Multi-LexSum and ALCE.
"""

from __future__ import annotations

import dataclasses
import json

from jaxeval.benchmarks.helmet.tasks import ASSETS, DOUBLE_NEWLINE_JOIN, family

TEMPLATES: dict = json.loads((ASSETS / "task_templates.json").read_text())

_FAMILY_KEY = {"rag": "rag_kilt", "rerank": "msmarco_rerank_psg", "alce": "alce"}


@dataclasses.dataclass(frozen=True)
class Template:
    user: str
    system: str
    join: str

    def user_text(self, sample: dict) -> str:
        return self.user.format(**sample)

    def system_text(self, sample: dict) -> str:
        return self.system.format(**sample)

    def completion_text(self, sample: dict) -> str:
        return (self.user + self.join + self.system).format(**sample)


def _ruler(dataset: str) -> dict:
    r = TEMPLATES["ruler"]
    if "niah_mv" in dataset or "niah_mq" in dataset:
        return r["niah_mv_or_mq"]
    if "niah" in dataset:
        return r["niah_single_or_multikey"]
    for name in ("vt", "cwe", "fwe", "qa"):
        if name in dataset:
            return r[name]
    return {"user_template": r["default_user_template"], "system_template": r["default_system_template"]}


def template_for(dataset: str) -> Template:
    fam = family(dataset)
    if fam == "ruler":
        entry = _ruler(dataset)
    elif fam == "rag" and "nq_bad" in dataset:
        entry = dict(TEMPLATES["rag_kilt"], user_template=TEMPLATES["rag_kilt"]["user_template_nq_bad_variant"])
    else:
        entry = TEMPLATES[_FAMILY_KEY.get(fam, fam)]
    return Template(user=entry["user_template"], system=entry["system_template"],
                    join="\n\n" if fam in DOUBLE_NEWLINE_JOIN else "\n")
