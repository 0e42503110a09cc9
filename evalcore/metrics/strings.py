"""String metrics as ragas defines them, per turn: the turn's answer against its reference.

A turn's reference is its ground truth; the last turn the assistant answered also takes the session's
reference answer when it has none of its own (``base.final_turn``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar, Literal

from evalcore.metrics.base import Level, Metric, MetricResult, register_metric
from evalcore.schema import Session, Turn


def turn_reference(session: Session, turn: Turn, *, last: bool) -> str | None:
    """The reference answer of a turn: its ground truth, else (``last``: the last turn the assistant answered) the
    session's reference."""
    if turn.truth.ground_truth:
        return turn.truth.ground_truth
    if last and session.reference:
        return session.reference
    return None


class _StringMetric(Metric):
    needs: ClassVar[tuple[str, ...]] = ("reference",)
    level: ClassVar[Level] = "turn"

    def compare(self, reference: str, response: str) -> float:
        raise NotImplementedError

    def score_turn(self, session: Session, turn: Turn, *, last: bool) -> MetricResult:
        reference = turn_reference(session, turn, last=last)
        if reference is None:
            return self.not_applicable("no reference answer for this turn", turn.index)
        answer = turn.answer
        if answer is None:
            return self.not_applicable("no assistant answer in this turn", turn.index)
        return self.result(self.compare(reference, answer), turn=turn.index)


@register_metric
class ExactMatch(_StringMetric):
    """1 when the answer equals the reference exactly (ragas ``ExactMatch``)."""

    name: ClassVar[str] = "exact_match"
    description: ClassVar[str] = "answer == reference (ragas ExactMatch)"

    def compare(self, reference: str, response: str) -> float:
        return float(reference == response)


@register_metric
class StringPresence(_StringMetric):
    """1 when the reference appears in the answer, case-sensitive (ragas ``StringPresence``)."""

    name: ClassVar[str] = "string_presence"
    description: ClassVar[str] = "reference is a substring of the answer (ragas StringPresence)"

    def compare(self, reference: str, response: str) -> float:
        return float(reference in response)


@register_metric
class StringSimilarity(_StringMetric):
    """1 minus the normalised distance (ragas ``NonLLMStringSimilarity``, rapidfuzz)."""

    name: ClassVar[str] = "string_similarity"
    description: ClassVar[str] = "1 - normalised Levenshtein/Hamming/Jaro/Jaro-Winkler distance (ragas)"
    measure: Literal["levenshtein", "hamming", "jaro", "jaro_winkler"] = "levenshtein"

    def compare(self, reference: str, response: str) -> float:
        from rapidfuzz import distance

        measures: dict[str, Any] = {
            "levenshtein": distance.Levenshtein,
            "hamming": distance.Hamming,
            "jaro": distance.Jaro,
            "jaro_winkler": distance.JaroWinkler,
        }
        return 1.0 - float(measures[self.measure].normalized_distance(reference, response))


@register_metric
class Bleu(_StringMetric):
    """sacrebleu's corpus BLEU over sentences split on ". ", divided by 100 (ragas ``BleuScore``)."""

    name: ClassVar[str] = "bleu"
    description: ClassVar[str] = "sacrebleu corpus BLEU / 100, sentences split on '. ' (ragas BleuScore)"

    def compare(self, reference: str, response: str) -> float:
        from sacrebleu import corpus_bleu

        references = [[sentence] for sentence in reference.split(". ")]
        return float(corpus_bleu(response.split(". "), references).score) / 100


@lru_cache(maxsize=4)
def _rouge_scorer(rouge_type: str) -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer([rouge_type], use_stemmer=True)


@register_metric
class Rouge(_StringMetric):
    """ROUGE-1 or ROUGE-L with Porter stemming (ragas ``RougeScore``)."""

    name: ClassVar[str] = "rouge"
    description: ClassVar[str] = "rouge_score ROUGE-1/ROUGE-L with stemming (ragas RougeScore)"
    rouge_type: Literal["rouge1", "rougeL"] = "rougeL"
    mode: Literal["fmeasure", "precision", "recall"] = "fmeasure"

    def compare(self, reference: str, response: str) -> float:
        score = _rouge_scorer(self.rouge_type).score(reference, response)[self.rouge_type]
        return float(getattr(score, self.mode))
