"""A metric of your own: 1 when the assistant's final answer mentions a word, else 0."""

from typing import ClassVar

from evalcore.metrics import Metric, MetricResult
from evalcore.schema import Session


class AnswerMentions(Metric):
    name: ClassVar[str] = "answer_mentions"
    description: ClassVar[str] = "1 when the final answer mentions the word (any case), else 0"
    needs: ClassVar[tuple[str, ...]] = ("answer",)  # sessions with no final answer: not applicable

    word: str = "thank"  # a parameter: answer_mentions:word="sorry"

    def score_session(self, session: Session) -> MetricResult:
        answer = session.final_answer() or ""
        found = self.word.lower() in answer.lower()
        return self.result(1.0 if found else 0.0, f"{self.word!r} {'is' if found else 'is not'} in the final answer")
