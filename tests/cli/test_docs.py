"""The README, the model card and docs/ describe the product: no work-log residue, metadata the Hub reads,
links that resolve where the documents are read."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CARD = ROOT / "assets" / "littlebird-qa" / "README.md"
TRAINING_LOG = ROOT / "docs" / "training-log.md"  # the history: the one document allowed to narrate
PRODUCT_DOCUMENTS = [README, CARD, *sorted(p for p in (ROOT / "docs").glob("*.md") if p != TRAINING_LOG)]

# How work-log residue reads: "session 12", "issue #10", "issues 6", "lent GPU", "a lent H200".
WORK_LOG = re.compile(
    r"\b(?:sessions?|issues?)\s*#?\s*\d|\blent\s+(?:an?\s+)?(?:GPUs?|H100|H200|machines?)\b", re.IGNORECASE
)
FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
FENCED_CODE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def front_matter(path: Path) -> dict:
    match = FRONT_MATTER.match(path.read_text(encoding="utf-8"))
    assert match, f"{path.relative_to(ROOT)} has no YAML front matter"
    return yaml.safe_load(match.group(1))


def link_targets(path: Path) -> list[str]:
    """Targets of the Markdown links and images in ``path``, outside code blocks and HTML comments."""
    text = HTML_COMMENT.sub("", FENCED_CODE.sub("", path.read_text(encoding="utf-8")))
    return LINK.findall(text)


def is_absolute(target: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) is not None


@pytest.mark.parametrize("path", PRODUCT_DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_product_documents_hold_no_work_log(path):
    lines = [
        f"{n}: {line.strip()}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if WORK_LOG.search(line)
    ]
    assert not lines, (
        f"{path.relative_to(ROOT)} narrates the work (history goes to docs/training-log.md):\n" + "\n".join(lines)
    )


def test_work_log_pattern():
    for residue in ("session 12", "Session #3", "issue 10", "issues 6 and 7", "a lent GPU", "the lent H200"):
        assert WORK_LOG.search(residue), residue
    for fine in ("sessions of the app", "an issue with fonts", "the GPU", "silent GPU fans"):
        assert not WORK_LOG.search(fine), fine


def test_model_card_metadata():
    meta = front_matter(CARD)
    for key in ("language", "license", "base_model", "datasets", "metrics", "model-index", "pipeline_tag"):
        assert meta.get(key), f"the model card's YAML lacks {key}"
    results = meta["model-index"][0]["results"]
    body = FRONT_MATTER.sub("", CARD.read_text(encoding="utf-8"))
    for result in results:
        assert result["task"]["type"] == "question-answering"
        metrics = {m["type"]: m["value"] for m in result["metrics"]}
        assert {"exact_match", "f1"} <= set(metrics), result["dataset"]["name"]
        for value in metrics.values():
            assert isinstance(value, (int, float)) and 0 <= value <= 100
            # the YAML repeats the Evaluation table; a figure changed in one place must change in both
            assert f"{value:.1f}" in body, f"model-index value {value} is not in the card's text"


def test_readme_links_resolve():
    missing = [
        t
        for t in link_targets(README)
        if not is_absolute(t) and not t.startswith("#") and not (ROOT / t.split("#")[0]).exists()
    ]
    assert not missing, f"README.md links to missing files: {missing}"


def test_model_card_links_are_absolute():
    # The card is also read on the Hub, where a path into this repository leads nowhere.
    relative = [t for t in link_targets(CARD) if not is_absolute(t) and not t.startswith("#")]
    assert not relative, f"the model card links relatively: {relative}"
