"""The dev split, by title: a stable hash, so every file, stage and rerun holds out the same pages."""

from __future__ import annotations

import hashlib


def is_dev_title(title: str, dev_fraction: float) -> bool:
    """Whether an article belongs to the dev split: a stable hash of its title, so reruns agree."""
    digest = int(hashlib.sha256(title.encode("utf-8")).hexdigest()[:8], 16)
    return digest / 0xFFFFFFFF < dev_fraction


def split_by_article(articles: list[dict], dev_fraction: float = 0.1) -> tuple[list[dict], list[dict]]:
    """(train, dev) with no title in both."""
    train = [a for a in articles if not is_dev_title(a["title"], dev_fraction)]
    dev = [a for a in articles if is_dev_title(a["title"], dev_fraction)]
    return train, dev
