"""Write the synthetic prediction folders of this fixture (pred/ and pred_e/).

    python make_predictions.py OUT_DIR

Random predictions in the official pred.py layout, meant to exercise every metric path
(leading newlines, first-line cuts, partial credit, Unicode digits, autojunk, empty buckets,
and the ROUGE recursion limit at its boundary). The official eval.py then scored them; its
result.json files sit beside them (see README.md). Text is from made-up word lists.
"""

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIG = HERE.parents[4] / "jaxeval" / "assets" / "longbench_config"
META = json.loads((CONFIG / "longbench_meta.json").read_text(encoding="utf-8"))
CLASSES = json.loads((CONFIG / "all_classes.json").read_text(encoding="utf-8"))
EN = ("The the a an of river town Bridge bridge built in 1887 . , ; U.S.A. don't café “quoted” "
      "north harbour ship mill 3.5 12 8 08 yes no unanswerable Paris London — old new").split()
ZH = list("会议讨论了产品的设计方案我们需要进一步研究市场情况。，厦门大学答案是《》“”") + ["3.5%", "GPT", " ", "\n"]
CODE = ["x", "y", "=", " ", "self", ".", "(", ")", "_", "a", "b", "'", "\n", "\t", "return", ",", "+", "#",
        "//", "`"]


def main(out: Path) -> None:
    rng = random.Random(20230829)

    def words(vocab, k, sep=" "):
        return sep.join(rng.choice(vocab) for _ in range(k))

    def noisy(gold, make):
        r = rng.random()
        if r < 0.25:
            return gold
        if r < 0.5:
            return rng.choice(["", "\n", "\n\n", " "]) + gold + rng.choice(["", "\n" + make(), " " + make()])
        if r < 0.7:
            return make()
        return make()[:20] + gold[: len(gold) // 2]

    for folder, names in (("pred", META["dataset_order_official"]), ("pred_e", META["longbench_e_datasets"])):
        (out / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            info = META["datasets"][name]
            rows = []
            for _ in range(rng.randint(4, 14)):
                classes, metric = None, info["metric"]
                if name in ("trec", "lsht"):
                    classes = CLASSES[name]
                    golds = [rng.choice(classes)]
                    pred = (rng.choice(["", "\n"]) + " ".join(rng.choice(classes) for _ in range(rng.randint(0, 3)))
                            + rng.choice(["", "\nQuestion: x", "\n" + rng.choice(classes)]))
                elif metric in ("retrieval_score", "retrieval_zh_score"):
                    form = "Paragraph {}" if metric == "retrieval_score" else "段落{}"
                    golds = [form.format(rng.randint(1, 30))]
                    pred = rng.choice([golds[0], form.format(rng.randint(1, 30)), "none", "段落２７",
                                       golds[0] + " and " + form.format(rng.randint(1, 30))])
                elif metric == "count_score":
                    golds = [str(rng.randint(1, 20))]
                    pred = rng.choice([golds[0], str(rng.randint(1, 20)), f"{golds[0]} of {rng.randint(1, 30)}",
                                       "0" + golds[0]])
                elif info["language_group"] == "zh":
                    golds = [words(ZH, rng.randint(2, 60), "") for _ in range(rng.randint(1, 3))]
                    pred = noisy(golds[0], lambda: words(ZH, rng.randint(1, 80), ""))
                elif info["language_group"] == "code":
                    golds = [words(CODE[:-3], rng.randint(5, 250), "").replace("\n", "")]
                    pred = noisy(golds[0], lambda: words(CODE, rng.randint(1, 80), ""))
                else:
                    size = 60 if "rouge" in metric else 5
                    golds = [words(EN, rng.randint(1, size)) for _ in range(rng.randint(1, 4))]
                    pred = noisy(golds[0], lambda: words(EN, rng.randint(1, 80)))
                length = rng.choice([rng.randint(100, 3999), rng.randint(4000, 7999), rng.randint(8000, 23000),
                                     3999, 4000, 7999, 8000])
                rows.append({"pred": pred, "answers": golds, "all_classes": classes, "length": length})
            if folder == "pred" and name in ("gov_report", "vcsum"):
                rows.extend(recursion_rows(name))
            if folder == "pred_e" and name == "passage_count":
                rows = [dict(row, length=100) for row in rows]  # two empty buckets: NaN
            with open(out / folder / f"{name}.jsonl", "w", encoding="utf-8") as lines:
                for row in rows:
                    lines.write(json.dumps(row, ensure_ascii=False) + "\n")


def recursion_rows(name: str) -> list[dict]:
    """Single-sentence pairs whose LCS walk nests just under and just over the limit."""
    rows = []
    for calls in (989, 990, 991, 992, 993):
        if name == "gov_report":  # ref "z x x ...", hyp "z y y ...": calls = len(ref) + len(hyp)
            ref, hyp = " ".join(["z"] + ["x"] * 499), " ".join(["z"] + ["y"] * (calls - 501))
        else:  # spaced characters: jieba cannot merge them, and the spaces collapse away
            ref, hyp = " ".join(["我"] + ["好"] * 499), " ".join(["我"] + ["的"] * (calls - 501))
        rows.append({"pred": hyp, "answers": [ref], "all_classes": None, "length": 5000})
    return rows


if __name__ == "__main__":
    main(Path(sys.argv[1]))
