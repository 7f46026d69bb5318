"""Write held-out lookup files: a row named by one or two of its cells, another cell asked.

- ``dev-en-lookup.json``: lookups in the tables of WikiTableQuestions' dev pages (never trained on), written by
  the same templates as the page-tables recipe's lookups stage;
- ``dev-ko-lookup.json``: lookups in tables built after the dev split's Korean articles;
- ``dev-ko-vehicle.json``: route tables built after the same articles, their vehicle named in the first
  departure's header ("첫 배"), each question naming the vehicle too but asking for another column (the crossing
  time or the fare), in wordings no training template has ("동항에서 북항까지 가는 배는 얼마나 걸리는가?"): a
  question sharing a word with a column it does not ask for;
- ``dev-ko-vehicle-control.json``: the same questions without the vehicle's word.

All are SQuAD files with each answer's ``table_row``, so ``littlebird evaluate`` also prints how often the best
guess stands in the answer's row. Usage::

    python experiments/table-lookups/dev_lookups.py --data ../shared/data --output runs/dev --questions 200
"""

import argparse
import random
import re

from littlebird.training.data import write_squad
from littlebird.training.table_lookups import english_lookup_articles, korean_lookup_articles

DEV_FRACTION = 0.1  # the dev split of every other dev file
SEED = 7  # not the training stage's seed

# Wordings of the vehicle probe: none is a training template (``_PLAIN_VEHICLE`` and the header forms). Every
# vehicle (배, 버스, 열차) ends in a vowel, so the particles are fixed.
_VEHICLE_ASKS = {
    "duration": [
        "{a}에서 {b}까지 가는 {w}는 얼마나 걸리는가?",
        "{a}에서 {b}까지 {w}로 몇 시간이 걸리나?",
        "{w}로 {a}에서 {b}까지 가면 시간이 얼마나 걸려?",
    ],
    "fare": ["{a}에서 {b}까지 {w}표는 얼마인가?", "{a}에서 {b}까지 {w}를 타려면 얼마를 내야 하나?"],
}
# The control: the same questions without the vehicle's word, on the same tables.
_CONTROL_ASKS = {
    "duration": [
        "{a}에서 {b}까지 가는 데는 얼마나 걸리는가?",
        "{a}에서 {b}까지 몇 시간이 걸리나?",
        "{a}에서 {b}까지 가면 시간이 얼마나 걸려?",
    ],
    "fare": ["{a}에서 {b}까지 표는 얼마인가?", "{a}에서 {b}까지 가려면 얼마를 내야 하나?"],
}


def vehicle_probe(data: str, count: int, asks: dict[str, list[str]] = _VEHICLE_ASKS) -> list[dict]:
    """Up to ``count`` questions on built route tables that name their vehicle in the first departure's header,
    each asking for the crossing time or the fare with the vehicle's word in it (:data:`_VEHICLE_ASKS`; with
    :data:`_CONTROL_ASKS`, the same questions without it)."""
    rng = random.Random(SEED + 1)
    articles = korean_lookup_articles(
        data,
        100 * count,  # every dev-split article
        seed=SEED + 1,
        per_table=10,
        dev_fraction=DEV_FRACTION,
        vehicle_share=1.0,
        kinds=["운행 시간표"],
    )
    kept, total = [], 0
    for article in articles:
        paragraph = article["paragraphs"][0]
        vehicle = re.search(r"첫 (배|버스|열차)", paragraph["context"])
        if vehicle is None:
            continue
        qas = []
        for qa in paragraph["qas"]:
            answer = qa["answers"][0]["text"]
            kind = "fare" if answer.endswith("원") else "duration" if re.fullmatch(r"[0-9시간분 ]+", answer) else None
            if kind is None or len(qa["keys"]) != 2 or total + len(qas) >= count:
                continue
            if any(re.fullmatch(r"[가-바]|[0-9]+번", key) for key in qa["keys"]):  # named by its line: no route
                continue
            a, b = qa["keys"]
            qas.append({**qa, "question": rng.choice(asks[kind]).format(a=a, b=b, w=vehicle.group(1))})
        if qas:
            total += len(qas)
            kept.append({"title": article["title"], "paragraphs": [{**paragraph, "qas": qas}]})
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the shared data folder")
    parser.add_argument("--output", required=True, help="the folder the two files go in")
    parser.add_argument("--questions", type=int, default=200, help="questions in each file")
    args = parser.parse_args()
    english = english_lookup_articles(args.data, DEV_FRACTION, args.questions, seed=SEED, split="dev")
    korean = korean_lookup_articles(args.data, args.questions, seed=SEED, dev_fraction=DEV_FRACTION)
    vehicle = vehicle_probe(args.data, args.questions)
    control = vehicle_probe(args.data, args.questions, _CONTROL_ASKS)
    for name, articles in [
        ("dev-en-lookup", english),
        ("dev-ko-lookup", korean),
        ("dev-ko-vehicle", vehicle),
        ("dev-ko-vehicle-control", control),
    ]:
        questions = [q for article in articles for q in article["paragraphs"][0]["qas"]]
        two = sum(len(q["keys"]) == 2 for q in questions)
        write_squad(f"{args.output}/{name}.json", articles)
        print(f"{name}: {len(articles)} pages, {len(questions)} questions ({two} naming their row by two cells)")


if __name__ == "__main__":
    main()
