"""LLM-judge metrics: the shared machinery, and ragas' judges (goal accuracy, topic adherence,
rubrics, aspect critiques). Databricks' and Gaussia's judges have modules of their own.

Each returns a value and the judge's reason, kept, shown and exported. Every judge answers a
JSON object checked against the metric's schema. Prompts show the conversation as ragas'
transcript lines.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from evalcore.judge import Judge, Verdict
from evalcore.metrics.base import JudgeUsage, Metric, MetricResult, register_metric
from evalcore.metrics.transcript import transcript
from evalcore.schema import Session

YesNo = Literal["yes", "no"]


class Reasoned(BaseModel):
    reason: str = Field(description="why, in one or two sentences")


class YesNoAnswer(Reasoned):
    verdict: YesNo


def usage(judge: Judge, verdict: Verdict) -> JudgeUsage:
    """What a verdict cost, as results keep it."""
    return JudgeUsage.of(judge.config.model, verdict)


def final_exchange(session: Session) -> tuple[str, str]:
    """The transcript before the final answer, and the final answer (as Databricks' judges see them)."""
    messages = list(session.messages)
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant" and messages[i].text:
            return transcript(messages[:i]), messages[i].text
    return transcript(messages), ""


class SessionJudge(Metric):
    """A session-level judge metric: one question to the judge, one answer, one score."""

    uses_judge: ClassVar[bool] = True
    answer_schema: ClassVar[type[BaseModel]] = YesNoAnswer
    system: ClassVar[str] = ""

    def prompt(self, session: Session) -> str:
        raise NotImplementedError

    def interpret(self, answer: Any, session: Session) -> tuple[float | None, str, dict[str, float]]:
        return (1.0 if answer.verdict == "yes" else 0.0), answer.reason, {}

    def answer_shape(self, session: Session) -> type[BaseModel]:
        """The answer's shape for this session (a judge that rates n items must rate exactly n)."""
        return self.answer_schema

    async def judge_session(self, session: Session, judge: Judge) -> MetricResult:
        verdict = await judge.ask(self.system, self.prompt(session), self.answer_shape(session))
        value, reason, sub = self.interpret(verdict.answer, session)
        if value is None:
            return MetricResult(metric=self.name, not_applicable=reason, usage=usage(judge, verdict))
        return self.result(value, reason, sub=sub, usage=usage(judge, verdict))


# -- agent goal accuracy (ragas) --------------------------------------------------------------


class GoalAnswer(Reasoned):
    user_goal: str = Field(description="what the user wanted")
    end_state: str = Field(description="what the conversation actually achieved")
    verdict: Literal[0, 1] = Field(description="1 when the end state achieves the desired outcome, else 0")


@register_metric
class AgentGoalAccuracy(SessionJudge):
    """Did the agent reach the desired outcome (the reference answer, else the goal, else the expected facts)?"""

    name: ClassVar[str] = "agent_goal_accuracy"
    description: ClassVar[str] = "judge: end state matches the reference outcome (ragas, with reference)"
    needs: ClassVar[tuple[str, ...]] = ("desired_outcome", "user_message")
    answer_schema: ClassVar[type[BaseModel]] = GoalAnswer
    system: ClassVar[str] = (
        "You judge agentic workflows. Given a conversation between a Human, an AI and its tools, identify the "
        "user's goal and the end state the conversation reached, then compare the end state with the desired "
        "outcome: verdict 1 if they are the same outcome, 0 if not."
    )

    def prompt(self, session: Session) -> str:
        facts = "\n".join(f"- {f}" for f in session.expected_facts or [])
        desired = session.reference_answer() or session.goal or facts
        return f"Workflow:\n{transcript(session.messages)}\n\nDesired outcome:\n{desired}"

    def interpret(self, answer: Any, session: Session) -> tuple[float | None, str, dict[str, float]]:
        return float(answer.verdict), f"{answer.reason} (end state: {answer.end_state})", {}


@register_metric
class AgentGoalAccuracyNoReference(AgentGoalAccuracy):
    """Did the agent achieve what the user wanted, judged from the conversation alone? 1 or 0."""

    name: ClassVar[str] = "agent_goal_accuracy_no_reference"
    description: ClassVar[str] = "judge: end state achieves the goal the judge infers (ragas, without reference)"
    needs: ClassVar[tuple[str, ...]] = ("user_message",)
    system: ClassVar[str] = (
        "You judge agentic workflows. Given a conversation between a Human, an AI and its tools, identify the "
        "user's goal and the end state the conversation reached: verdict 1 if the end state achieves the "
        "user's goal, 0 if not."
    )

    def prompt(self, session: Session) -> str:
        return f"Workflow:\n{transcript(session.messages)}"


# -- topic adherence (ragas) --------------------------------------------------------------------


class TopicItem(BaseModel):
    topic: str
    answered: bool = Field(description="false if the AI refused or avoided answering about it")
    in_reference_topics: bool = Field(description="whether the topic falls under any of the reference topics")


class TopicsAnswer(Reasoned):
    topics: list[TopicItem] = Field(description="every topic the Human asked about")


@register_metric
class TopicAdherence(SessionJudge):
    """Does the agent answer on-topic questions and decline off-topic ones? Precision, recall and F1."""

    name: ClassVar[str] = "topic_adherence"
    description: ClassVar[str] = "judge: precision/recall/F1 of answering within the reference topics (ragas)"
    needs: ClassVar[tuple[str, ...]] = ("reference_topics", "user_message")
    answer_schema: ClassVar[type[BaseModel]] = TopicsAnswer
    system: ClassVar[str] = (
        "List every topic the Human asks about in the conversation. For each, say whether the AI answered it "
        "(false if it refused or deflected) and whether the topic falls under any of the reference topics."
    )
    mode: Literal["precision", "recall", "f1"] = "f1"

    def prompt(self, session: Session) -> str:
        return f"Conversation:\n{transcript(session.messages)}\n\nReference topics: {session.reference_topics}"

    def interpret(self, answer: Any, session: Session) -> tuple[float | None, str, dict[str, float]]:
        topics = answer.topics
        if not topics:
            return None, "the judge found no topic in the conversation", {}
        tp = sum(1 for t in topics if t.answered and t.in_reference_topics)
        fp = sum(1 for t in topics if t.answered and not t.in_reference_topics)
        fn = sum(1 for t in topics if not t.answered and t.in_reference_topics)
        precision = tp / (tp + fp + 1e-10)
        recall = tp / (tp + fn + 1e-10)
        f1 = 2 * precision * recall / (precision + recall + 1e-10)
        parts = {"precision": precision, "recall": recall, "f1": f1}
        listed = "; ".join(
            f"{t.topic} ({'answered' if t.answered else 'declined'}, "
            f"{'in' if t.in_reference_topics else 'out of'} scope)"
            for t in topics
        )
        return parts[self.mode], f"{answer.reason} Topics: {listed}", parts


# -- rubrics and aspect critiques (ragas) --------------------------------------------------------

DEFAULT_RUBRIC = {
    "score1_description": "The response is entirely incorrect and fails to address any aspect of the request.",
    "score2_description": "The response contains significant inaccuracies or misses key parts of the request.",
    "score3_description": "The response is partly correct but incomplete or unclear in places.",
    "score4_description": "The response is mostly accurate and clear, with minor gaps.",
    "score5_description": "The response is completely accurate, clear, and thoroughly addresses the request.",
}


class RubricAnswer(BaseModel):
    feedback: str
    score: int = Field(ge=1, le=5)


def _rubric_text(rubric: dict[str, str]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in rubric.items())


class _Rubric(SessionJudge):
    answer_schema: ClassVar[type[BaseModel]] = RubricAnswer
    scale: ClassVar[tuple[float, float]] = (1.0, 5.0)
    system: ClassVar[str] = "Score the conversation from 1 to 5 based only on the scoring rubric, with feedback."

    def rubric(self, session: Session) -> dict[str, str]:
        raise NotImplementedError

    def prompt(self, session: Session) -> str:
        text = f"Conversation:\n{transcript(session.messages)}"
        reference = session.reference_answer()
        if reference:
            text += f"\n\nReference answer:\n{reference}"
        return f"{text}\n\nScoring rubric:\n{_rubric_text(self.rubric(session))}"

    def interpret(self, answer: Any, session: Session) -> tuple[float | None, str, dict[str, float]]:
        return float(answer.score), answer.feedback, {}


@register_metric
class RubricScore(_Rubric):
    """A 1-5 score of the conversation against one rubric for all sessions (default: correctness)."""

    name: ClassVar[str] = "rubric_score"
    description: ClassVar[str] = "judge: 1-5 score against a rubric given as a parameter (ragas RubricsScore)"
    needs: ClassVar[tuple[str, ...]] = ("user_message",)
    rubrics: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_RUBRIC))

    def rubric(self, session: Session) -> dict[str, str]:
        return self.rubrics


@register_metric
class InstanceRubricScore(_Rubric):
    """A 1-5 score against the session's own rubric (ragas InstanceRubrics)."""

    name: ClassVar[str] = "instance_rubric_score"
    description: ClassVar[str] = "judge: 1-5 score against each session's own rubrics (ragas InstanceRubrics)"
    needs: ClassVar[tuple[str, ...]] = ("rubrics", "user_message")

    def rubric(self, session: Session) -> dict[str, str]:
        return session.rubrics or {}


class CritiqueAnswer(Reasoned):
    verdict: Literal[0, 1]


@register_metric
class AspectCritique(SessionJudge):
    """A yes/no verdict on an aspect the user defines (``aspect`` and ``definition``)."""

    name: ClassVar[str] = "aspect_critique"
    description: ClassVar[str] = "judge: 1/0 on a user-defined aspect (name + definition; ragas AspectCritic)"
    needs: ClassVar[tuple[str, ...]] = ("user_message",)
    answer_schema: ClassVar[type[BaseModel]] = CritiqueAnswer
    aspect: str = Field(min_length=1)
    definition: str = Field(min_length=1)

    @property
    def system(self) -> str:  # type: ignore[override]
        return (
            "Evaluate the conversation against the criterion. Use only 1 (yes) and 0 (no) as the verdict.\n"
            f"Criterion ({self.aspect}): {self.definition}"
        )

    def key(self) -> str:
        return f"aspect_critique:{self.aspect}"

    def prompt(self, session: Session) -> str:
        return f"Conversation:\n{transcript(session.messages)}"

    def interpret(self, answer: Any, session: Session) -> tuple[float | None, str, dict[str, float]]:
        return float(answer.verdict), answer.reason, {}
