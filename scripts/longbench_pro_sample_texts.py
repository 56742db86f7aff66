"""Hand-written material of the embedded LongBench Pro sample: the Chinese records, the question
layout of both modes (as observed in the dataset) and the sample's SOURCE.md. Places, people and numbers are invented.
"""

from __future__ import annotations


def question(language: str, text: str, elements: str, supplement: str, example: str, thinking: bool,
             single: bool) -> str:
    """A question field: task, output instruction, supplement, output example (both languages).

    single: the answer is one option letter or one summary (not "line by line")."""
    if language == "Chinese":
        how = f"再输出{elements}" if single else f"再按行输出{elements}"
        if thinking:
            head = f"{text}进行逐步思考，在你的思考过程后，输出“[答案]”标识符，{how}。"
            tail = f"输出示例：\n<你的思考过程>\n[答案]\n{example}"
        else:
            head = f"{text}先输出“[答案]”标识符，{how}，不要输出任何其他内容。"
            tail = f"输出示例：\n[答案]\n{example}"
    else:
        how = f"and then output {elements}" if single else f"and then output {elements} line by line"
        if thinking:
            head = f"{text} Think step by step. After your thinking process, output the \"[Answer]\" identifier, {how}."
            tail = f"Output example: \n<Your thinking process>\n[Answer]\n{example}"
        else:
            head = f"{text} Output the \"[Answer]\" identifier first, {how}, without any additional content."
            tail = f"Output example:\n[Answer]\n{example}"
    return "\n\n".join(part for part in (head, supplement, tail) if part)


_DOCS_T1 = [
    "青禾镇的集市每逢周六开放，商贩多来自附近的村庄。",
    "测绘员林远在青禾镇住了三年，林远绘制了镇上的水渠图，林远还记录了每一座石桥。",
    "河岸的柳树在春天发芽，孩子们喜欢在树下放风筝。",
    "镇志提到测绘员林远曾在旧粮仓借宿一夜。",
]
_EVENTS_T2 = ["新码头建成", "旧灯塔停用", "渡轮航线开通", "渔业合作社成立"]
_STORY_T2 = ("一九五二年，旧灯塔停用。两年后，新码头建成，镇上的渔船从此有了避风的地方。"
             "一九六一年，渔业合作社成立，渔民开始统一收购鱼获。到了一九七零年，渡轮航线开通，"
             "岛上的居民第一次可以每天往返县城。")
_MEETING_T4 = ("会议纪要：本周三上午，社区委员会讨论了老街改造方案。委员会同意先修复排水系统，"
               "再更换路面石板。施工期间，老街东段将在晚上八点后封闭。居民代表提出，希望保留街口的两棵老槐树，"
               "委员会表示会请园林部门评估。预算方面，排水工程约需四十万元，路面工程约需六十万元，"
               "资金由区财政和社区基金共同承担。下一次会议定于下月初，届时将公布施工时间表。")
_SENTENCES_T5 = ["[S1] 石湾村位于山谷的南侧。", "[S2] 村里的茶园始建于清朝末年。",
                 "[S3] 每年四月，村民采摘第一批春茶。", "[S4] 石湾村的茶叶主要销往省城。",
                 "[S5] 村口有一座供行人休息的凉亭。"]
_REPORTS_T6 = ["[R1] 今日小麦收购价上涨两角。", "[R2] 县篮球队在决赛中获胜。", "[R3] 玉米收购量比去年增加一成。",
               "[R4] 游泳馆将在下周重新开放。", "[R5] 稻谷烘干设备完成检修。", "[R6] 乒乓球联赛报名截止到月底。"]
_LEDGER_T7 = ["[L1] 三月二日，仓库收到面粉二十袋。", "[L2] 三月二日，仓库发出面粉八袋，结余十二袋。",
              "[L3] 三月三日，仓库收到食用油十桶。", "[L4] 三月三日，仓库发出食用油四桶，结余七桶。",
              "[L5] 三月四日，仓库收到大米十五袋。", "[L6] 三月四日，仓库发出大米五袋，结余十一袋。"]
_TABLES_T8 = ("表一（登记处）：东村户数一百二十户，西村户数九十五户。\n"
              "表二（卫生站）：东村户数一百二十户，西村户数九十八户。\n"
              "表三（学校）：东村户数一百二十户，西村户数九十五户。")
_CODE_T9 = ("[v1]\ndef 计算运费(重量):\n    return 重量 * 2\n\ndef 打印清单(清单):\n    return 清单\n\n"
            "[v2]\ndef 计算运费(重量, 距离):\n    return 重量 * 距离\n\ndef 打印清单(清单):\n    return 清单\n")
_EXAMPLES_T10 = "例子：\n红 -> 1\n橙 -> 2\n黄 -> 3\n绿 -> 4\n青 -> 5"
_DIALOGUE_T11 = ("小王：明天的展览几点开始？\n小李：上午九点，不过我们要八点半到。\n小王：那我负责带门票吧。\n"
                 "小李：好，我带相机。\n小王：对了，展厅在三楼还是四楼？\n小李：在四楼，电梯旁边。\n"
                 "小王：我刚才说要带的东西，你提醒我一下。")

# (secondary task, context, task text, elements, supplement, example, answer)
CHINESE_ITEMS = [
    ("T1.2 Key-Snippet Retrieval", "\n".join(f"[文档{i + 1}] {d}" for i, d in enumerate(_DOCS_T1)),
     "请按提及“测绘员林远”的次数从多到少，对提到他的文档进行排序。", "文档编号", "", "文档3\n文档1", ["文档2", "文档4"]),
    ("T2.2 Local Causal Chain Sorting", _STORY_T2, "请按时间先后对下列事件排序。", "事件编号",
     "\n".join(f"E{i + 1}：{e}" for i, e in enumerate(_EVENTS_T2)), "E2\nE4", ["E2", "E1", "E4", "E3"]),
    ("T3.2 Single-Hop Fact QA", "海棠书院建于一八八零年，院内藏书约三千册，第一任山长姓周。后来书院改为小学，至今仍在使用。",
     "海棠书院的第一任山长姓什么？", "答案选项字母（'A'或'B'或'C'或'D'）", "A. 王\nB. 李\nC. 周\nD. 陈", "A", ["C"]),
    ("T4.2 Query-Focused Summary", _MEETING_T4, "请总结会议关于老街改造的决定。", "总结", "", "<总结>",
     ["委员会同意先修复老街排水系统再更换路面石板，施工期间东段晚上八点后封闭。",
      "老街改造先做排水再换石板，预算共约一百万元，由区财政和社区基金承担。",
      "会议决定改造老街：先修排水、后换路面，夜间封闭东段，并评估保留老槐树。"]),
    ("T5.2 Key-Statement Citation Alignment", "\n".join(_SENTENCES_T5), "下面的陈述出自哪一句？", "句子编号",
     "陈述：每年四月采摘第一批春茶", "S2", ["S3"]),
    ("T6.1 Large-Scale Document Clustering", "\n".join(_REPORTS_T6),
     "请把下列报道分成“农业”和“体育”两类，每行输出一类报道的编号，编号按从小到大用逗号分隔，农业在前。", "分类结果", "",
     "R1,R2\nR3,R4", ["R1,R3,R5", "R2,R4,R6"]),
    ("T7.3 Comprehensive Error & Anomaly Sweep", "\n".join(_LEDGER_T7), "请找出结余数字计算有误的记录。", "记录编号", "",
     "L2", ["L4", "L6"]),
    ("T8.1 Structured Multi-Source Consistency Verification", _TABLES_T8,
     "三张表中，哪一张表的西村户数与其他两张不一致？", "表名", "", "表一", ["表二"]),
    ("T9.2 Localized Interface Change Detection", _CODE_T9, "从v1到v2，哪些函数的参数列表发生了变化？", "函数名", "",
     "打印清单", ["计算运费"]),
    ("T10.2 Targeted Example-Based Rule Induction", _EXAMPLES_T10, "根据例子推断规则，并给出查询的输出。", "输出",
     "查询：\n蓝", "9", ["6"]),
    ("T11.2 Short-Range Reference Resolution & State Query", _DIALOGUE_T11, "小王说要带的东西是什么？",
     "答案选项字母（'A'或'B'或'C'或'D'）", "A. 相机\nB. 门票\nC. 地图\nD. 雨伞", "A", ["B"]),
]

SOURCE_MD = """# LongBench Pro embedded sample: sources, licence, changes

`longbench_pro_sample.json`: one JSON array in the schema of the dataset's `longbench_pro.json`
(id, context, language, token_length, primary_task, secondary_task, contextual_requirement,
question_nonthinking, question_thinking, answer, difficulty): three records per primary task
(two English, one Chinese), 33 in all. Built by `scripts/build_longbench_pro_sample.py` (fixed
seeds; rerunning it gives the same file). These are **not** LongBench Pro records: they are
small stand-ins in its format, so that `jaxeval run --tasks longbench_pro` runs offline, on CPU,
with the embedded model. Their scores mean nothing about a model's long-context ability.

- `token_length` and `difficulty` labels are nominal (cycled so every breakdown key occurs):
  every context is a few thousand characters at most.
- `id` is the sha256 of the record's other fields.
- Questions follow the instruction layout observed in real records (as logs of the
  official harness show them); the wording is ours.

## Source and attribution
- English Wikipedia text, written by Wikipedia contributors, from WikiText-2 (Stephen Merity,
  Caiming Xiong, James Bradbury, Richard Socher, 2016, "Pointer Sentinel Mixture Models",
  arXiv:1609.07843; Salesforce), validation split, in its tokenized form. Copy used: GitHub
  reichenbch/Word-Level-Language-Model, data/wikitext-2/wiki.valid.tokens, commit
  95f4549b9e94447e21da9d1de23c222614030964. Licensed under the Creative Commons
  Attribution-ShareAlike 3.0 licence (https://creativecommons.org/licenses/by-sa/3.0/); the
  English records of this file are a derived work under the same licence.
- Tiny Shakespeare (works of William Shakespeare, public domain), as collected by Andrej
  Karpathy, GitHub karpathy/char-rnn, data/tinyshakespeare/input.txt, commit
  6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e: the dialogue of the English T11 records.
- Hand-written for jaxeval (scripts/longbench_pro_sample_texts.py): the Chinese records, and
  the planted sentences, events, numbers, rules and code of the English ones.

## Changes
WikiText paragraphs are clipped and interleaved with planted sentences; Shakespeare speeches
are cut to 200 characters.
"""
