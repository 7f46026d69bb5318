"""Write two held-out lookup files: a row named by one or two of its cells, another cell asked.

- ``dev-en-lookup.json``: lookups in the tables of WikiTableQuestions' dev pages (never trained on), written by
  the same templates as the page-tables recipe's lookups stage;
- ``dev-ko-lookup.json``: lookups in tables built after the dev split's Korean articles.

Both are SQuAD files with each answer's ``table_row``, so ``littlebird evaluate`` also prints how often the best
guess stands in the answer's row. Usage::

    python experiments/table-lookups/dev_lookups.py --data ../shared/data --output runs/dev --questions 200
"""

import argparse

from littlebird.training.data import write_squad
from littlebird.training.table_lookups import english_lookup_articles, korean_lookup_articles

DEV_FRACTION = 0.1  # the dev split of every other dev file
SEED = 7  # not the training stage's seed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the shared data folder")
    parser.add_argument("--output", required=True, help="the folder the two files go in")
    parser.add_argument("--questions", type=int, default=200, help="questions in each file")
    args = parser.parse_args()
    english = english_lookup_articles(args.data, DEV_FRACTION, args.questions, seed=SEED, split="dev")
    korean = korean_lookup_articles(args.data, args.questions, seed=SEED, dev_fraction=DEV_FRACTION)
    for name, articles in [("dev-en-lookup", english), ("dev-ko-lookup", korean)]:
        questions = [q for article in articles for q in article["paragraphs"][0]["qas"]]
        two = sum(len(q["keys"]) == 2 for q in questions)
        write_squad(f"{args.output}/{name}.json", articles)
        print(f"{name}: {len(articles)} pages, {len(questions)} questions ({two} naming their row by two cells)")


if __name__ == "__main__":
    main()
