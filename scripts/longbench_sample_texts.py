"""Hand-written material of the embedded LongBench sample: Chinese texts, trec questions, code.

Written for jaxeval (Apache-2.0); every place, person and number in it is invented. Used by
scripts/build_longbench_sample.py. Each Chinese paragraph carries (text, question, answer):
the answer is a phrase of the text, so a reader of the paragraph can give it.
"""

ZH_PARAGRAPHS = [
    ("青石镇图书馆建于1987年，是镇上最早的公共图书馆。馆内藏书约三万册，其中地方志和农业技术书籍最多。"
     "图书馆每周一闭馆，其余时间上午八点开门，晚上八点关门。现任馆长姓林，她在这里工作了二十多年，"
     "还组织了每月一次的读书会。",
     "青石镇图书馆哪天闭馆？", "每周一"),
    ("南湖茶园位于海拔六百米的山坡上，主要种植绿茶。每年四月是采摘春茶的季节，茶园会临时增加工人。"
     "平时茶园有四十名工人，负责除草、修剪和施肥。茶园出产的茶叶大多销往附近的城市，也有一部分通过网络出售。",
     "南湖茶园平时有多少名工人？", "四十名"),
    ("长桥是一座石拱桥，全长一百二十米，共有九个桥孔。它建于清朝末年，当时是连接两岸集市的唯一通道。"
     "2010年，长桥进行了一次大规模修缮，更换了部分松动的石板，并加装了夜间照明。现在这里已经成为游客拍照的地方。",
     "长桥共有几个桥孔？", "九个"),
    ("山顶气象站每小时记录一次气温、湿度和风速，数据会自动传回市气象台。去年冬天，气象站记录到的最低气温是零下十二度，"
     "最大风速达到每秒二十米。站里常驻两名观测员，他们每隔十天轮换一次。",
     "气象站去年冬天记录到的最低气温是多少？", "零下十二度"),
    ("第三中学秋季运动会共有八个班级参加，比赛项目包括短跑、跳远、拔河和接力赛。经过两天的比赛，"
     "二班获得团体第一名，五班获得第二名。本届运动会还打破了一项学校纪录：跳远纪录被提高到五米六。",
     "哪个班获得了团体第一名？", "二班"),
    ("社区菜市场每天早上六点开门，共有八十个摊位，出售蔬菜、水果、肉类和豆制品。周末来买菜的人最多，"
     "停车位常常不够用。今年春天，市场为所有摊位换上了新的电子秤，方便顾客核对重量。",
     "社区菜市场共有多少个摊位？", "八十个"),
    ("清水河治理工程用了三年时间完成。工程清理了河道里的淤泥，在两岸种植了两千棵柳树，并修建了步行道。"
     "治理完成后，河水的水质达到了三类标准，附近居民傍晚常来河边散步。",
     "清水河两岸种植了多少棵柳树？", "两千棵"),
    ("市博物馆新推出的展览名为“古代陶器”，共展出一百五十件文物，其中最早的一件距今约五千年。"
     "展览为期三个月，观众可以免费参观，但需要提前在网上预约。",
     "“古代陶器”展览为期多久？", "三个月"),
    ("新开通的十八路公交车从火车站出发，终点是大学城，全程约四十分钟。早晚高峰每十分钟一班，"
     "其他时间每二十分钟一班。这条线路经过市医院和体育中心，方便了很多学生和上班族。",
     "十八路公交车的终点是哪里？", "大学城"),
    ("今年当地的苹果产量比去年增加了两成，主要原因是春季没有出现霜冻。苹果主要销往北方城市，"
     "由于产量增加，收购价格比去年略低。果农们正在尝试把一部分苹果加工成果汁和果干。",
     "今年苹果产量比去年增加了多少？", "两成"),
]

# One meeting for vcsum: (speaker, line) turns, and its reference summary.
ZH_MEETING = [
    ("主持人", "今天我们讨论下个月社区文化节的安排，先请各组说一下准备情况。"),
    ("小王", "场地已经确定在中心广场，时间是下个月十五号，上午九点开始。"),
    ("小李", "节目方面，目前报名的有舞蹈、合唱和书法展示，一共十二个节目。"),
    ("主持人", "节目数量可以，但是要控制总时长，最好不要超过三个小时。"),
    ("小李", "好的，我会和每个节目的负责人确认时长，必要的话减少两个节目。"),
    ("小张", "经费方面，街道批了两万元，主要用于舞台搭建和音响租赁。"),
    ("主持人", "两万元够不够？去年我们花了多少？"),
    ("小张", "去年花了一万八千元，今年舞台大一些，应该刚好够用。"),
    ("小王", "还有一个问题，如果下雨怎么办？需要准备备用方案。"),
    ("主持人", "如果下雨，就改到社区活动中心的大厅，小王负责提前联系。"),
    ("小赵", "宣传方面，我们打算做海报和微信推送，下周一之前发出去。"),
    ("主持人", "好，那今天就定下来：十五号在中心广场举办，雨天改到活动中心，节目控制在三小时内，经费两万元。"),
]
ZH_MEETING_SUMMARY = ("会议讨论了下个月社区文化节的安排。文化节定于十五号在中心广场举办，雨天改到社区活动中心；"
                      "节目总时长控制在三个小时以内，经费为两万元，宣传海报和推送在下周一之前发出。")

# lsht: (news text, class); classes are names from the official lsht class list.
ZH_NEWS = [
    ("市足球队在昨晚的比赛中以二比一战胜对手，取得了本赛季的第五场胜利，球队目前排名联赛第三。", "体育"),
    ("今年前三季度，本市居民人均收入同比增长百分之六，消费市场保持稳定，服务消费增长较快。", "经济"),
    ("教育局宣布，从下学期开始，全市小学将增加一节课外阅读课，并为每所学校配备图书管理员。", "教育"),
    ("新建的物流中心正式投入使用，每天可以处理十万件快递，周边城市的包裹最快当天送达。", "交通运输、邮政、物流"),
    ("受冷空气影响，未来三天本地将出现明显降温，最低气温可能降到零度以下，请市民注意保暖。", "环境、气象"),
    ("本地作家的新小说讲述了一个小镇三代人的故事，出版一个月以来已经加印两次。", "文学、艺术"),
    ("市医院新开设了夜间门诊，方便上班族看病，首周接诊患者超过六百人次。", "医药、卫生"),
    ("今年全县推广新的水稻品种，试验田的亩产比普通品种高出一成，农民种植积极性明显提高。", "农业、农村"),
    ("市篮球联赛昨天开幕，共有十六支业余球队参加，比赛将持续两个月。", "体育"),
    ("多家银行下调了个人住房贷款利率，分析人士认为这将对房地产市场产生一定影响。", "财政、金融"),
]

# trec: hand-written questions and their class names from the official trec class list.
TREC_QUESTIONS = [
    ("What city is the largest port on the river ?", "City"),
    ("When did the old stone bridge first open ?", "Date"),
    ("Who wrote the first history of the town ?", "Individual"),
    ("How many islands lie off the northern coast ?", "Number of something"),
    ("What does the abbreviation NGO stand for ?", "Expression abbreviated"),
    ("What is the tallest mountain in the region ?", "Mountain"),
    ("Why do migrating birds fly in a V shape ?", "Reason"),
    ("What country did the explorers sail from ?", "Country"),
    ("How far is the lighthouse from the harbour ?", "Distance, linear measure"),
    ("What animal appears on the city flag ?", "Animal"),
    ("What is the meaning of the word harbour ?", "Definition of something"),
    ("What sport is played at the new stadium ?", "Sport"),
    ("How much does a ticket to the museum cost ?", "Price"),
    ("What language is spoken in the mountain villages ?", "Language"),
    ("What colour are the doors of the old church ?", "Color"),
    ("How long does the ferry crossing last ?", "Lasting time of somethin"),
]

# Code for lcc and repobench-p: whole files; records cut them before a chosen line.
PY_INVENTORY = '''class Inventory:
    """Stock levels of a small shop, by item name."""

    def __init__(self, items=None):
        self.items = dict(items or {})
        self.history = []

    def add(self, name, count):
        if count <= 0:
            raise ValueError("count must be positive")
        self.items[name] = self.items.get(name, 0) + count
        self.history.append(("add", name, count))

    def remove(self, name, count):
        available = self.items.get(name, 0)
        if count > available:
            raise ValueError(f"only {available} of {name} left")
        self.items[name] = available - count
        self.history.append(("remove", name, count))

    def total(self):
        return sum(self.items.values())

    def low_stock(self, threshold=5):
        return sorted(name for name, count in self.items.items() if count < threshold)

    def restock_plan(self, target=20):
        plan = {}
        for name in self.low_stock():
            plan[name] = target - self.items[name]
        return plan

    def undo(self):
        if not self.history:
            return None
        action, name, count = self.history.pop()
        if action == "add":
            self.items[name] -= count
        else:
            self.items[name] += count
        return action, name, count


def load_inventory(lines):
    inventory = Inventory()
    for line in lines:
        name, count = line.split(",")
        inventory.add(name.strip(), int(count))
    return inventory


def report(inventory):
    rows = []
    for name in sorted(inventory.items):
        rows.append(f"{name}: {inventory.items[name]}")
    rows.append(f"total: {inventory.total()}")
    return "\\n".join(rows)
'''

JAVA_QUEUE = '''package shop.util;

import java.util.ArrayList;
import java.util.List;

public class BoundedQueue<T> {
    private final List<T> items = new ArrayList<>();
    private final int capacity;
    private int dropped = 0;

    public BoundedQueue(int capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be positive");
        }
        this.capacity = capacity;
    }

    public boolean offer(T item) {
        if (items.size() >= capacity) {
            dropped++;
            return false;
        }
        items.add(item);
        return true;
    }

    public T poll() {
        if (items.isEmpty()) {
            return null;
        }
        return items.remove(0);
    }

    public T peek() {
        return items.isEmpty() ? null : items.get(0);
    }

    public int size() {
        return items.size();
    }

    public int getDropped() {
        return dropped;
    }

    public boolean isFull() {
        return items.size() == capacity;
    }
}
'''

CSHARP_COUNTER = '''using System;
using System.Collections.Generic;

namespace Shop.Stats
{
    public class VisitCounter
    {
        private readonly Dictionary<string, int> visits = new Dictionary<string, int>();
        private int total;

        public void Record(string page)
        {
            if (string.IsNullOrEmpty(page))
            {
                throw new ArgumentException("page must not be empty");
            }
            visits.TryGetValue(page, out var count);
            visits[page] = count + 1;
            total++;
        }

        public int CountFor(string page)
        {
            return visits.TryGetValue(page, out var count) ? count : 0;
        }

        public string MostVisited()
        {
            string best = null;
            var bestCount = 0;
            foreach (var pair in visits)
            {
                if (pair.Value > bestCount)
                {
                    best = pair.Key;
                    bestCount = pair.Value;
                }
            }
            return best;
        }

        public double Share(string page)
        {
            return total == 0 ? 0.0 : (double)CountFor(page) / total;
        }
    }
}
'''

# repobench-p: cross-file context files (path, code) and an in-file module using them.
PY_REPO_FILES = [
    ("shop/models.py", '''from dataclasses import dataclass


@dataclass
class Product:
    name: str
    price: float
    stock: int = 0

    def in_stock(self):
        return self.stock > 0


@dataclass
class Order:
    product: Product
    quantity: int

    def cost(self):
        return self.product.price * self.quantity
'''),
    ("shop/pricing.py", '''def apply_discount(price, percent):
    if not 0 <= percent <= 100:
        raise ValueError("percent must be between 0 and 100")
    return round(price * (100 - percent) / 100, 2)


def bulk_price(price, quantity, threshold=10, percent=5):
    if quantity >= threshold:
        return apply_discount(price, percent) * quantity
    return price * quantity
'''),
]
PY_REPO_MODULE = '''from shop.models import Order, Product
from shop.pricing import apply_discount, bulk_price


class Checkout:
    def __init__(self):
        self.orders = []

    def add(self, name, price, quantity):
        product = Product(name=name, price=price, stock=quantity)
        order = Order(product=product, quantity=quantity)
        self.orders.append(order)
        return order

    def subtotal(self):
        return sum(order.cost() for order in self.orders)

    def total(self, discount=0):
        amount = sum(bulk_price(o.product.price, o.quantity) for o in self.orders)
        return apply_discount(amount, discount)

    def names(self):
        return [order.product.name for order in self.orders]
'''

JAVA_REPO_FILES = [
    ("shop/model/Item.java", '''package shop.model;

public class Item {
    private final String name;
    private final int priceCents;

    public Item(String name, int priceCents) {
        this.name = name;
        this.priceCents = priceCents;
    }

    public String getName() {
        return name;
    }

    public int getPriceCents() {
        return priceCents;
    }
}
'''),
]
JAVA_REPO_MODULE = '''package shop.cart;

import java.util.ArrayList;
import java.util.List;
import shop.model.Item;

public class Cart {
    private final List<Item> items = new ArrayList<>();

    public void add(String name, int priceCents) {
        Item item = new Item(name, priceCents);
        items.add(item);
    }

    public int totalCents() {
        int total = 0;
        for (Item item : items) {
            total += item.getPriceCents();
        }
        return total;
    }

    public List<String> names() {
        List<String> result = new ArrayList<>();
        for (Item item : items) {
            result.add(item.getName());
        }
        return result;
    }
}
'''
