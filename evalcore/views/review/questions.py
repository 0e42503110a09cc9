"""The Review page's Questions tab, worked out: the dataset's guidelines, each question of the session as its widget
shows it (with the person's draft, else what they submitted), where their answers stand, and the others' answers
(none in blind mode, except to an adjudicator)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalcore.schema import Session
from evalcore.store.answers import Answer
from evalcore.store.questions import VERDICT_KEY, Question
from evalcore.store.store import Store
from evalcore.views.text import visible

__all__ = [
    "AnswerRow",
    "GoldChoice",
    "QuestionForm",
    "QuestionsView",
    "answer_text",
    "asked_of",
    "gold_table",
    "has_own_questions",
    "has_verdict_questions",
    "gold_views",
    "questions_view",
]

#: Up to this many options a choice is one row of buttons; beyond it, a list to pick from.
BUTTONS = 6


def has_own_questions(questions: list[Question]) -> bool:
    """Whether the dataset asks questions of its own, besides those its reviewers' verdicts stand for: Review then
    asks them all on its Questions tab, in place of the Verdict tab."""
    return any(VERDICT_KEY not in q.spec for q in questions)


def has_verdict_questions(questions: list[Question]) -> bool:
    """Whether some of the dataset's questions stand for its reviewers' verdicts (made when first given)."""
    return any(VERDICT_KEY in q.spec for q in questions)


def asked_of(questions: list[Question], session: Session) -> list[Question]:
    """The questions asked of ``session``: a rubric's verdict only of the sessions that have that rubric (a rubric is
    a session's own)."""
    rubrics = session.rubrics or {}
    out = []
    for q in questions:
        verdict = q.spec.get(VERDICT_KEY)
        if isinstance(verdict, str) and verdict.startswith("rubric:") and verdict[len("rubric:") :] not in rubrics:
            continue
        out.append(q)
    return out


@dataclass(frozen=True)
class QuestionForm:
    """One session-level question as its widget shows it."""

    question: Question
    label: str  # the name, with `` *`` when it must be answered (plain text: the page shows it literally)
    widget: str  # buttons | pills | select | multiselect | number | text
    options: list[Any]  # what may be chosen (ratings: the points of the scale)
    captions: dict[Any, str]  # a caption of some options (a rating's named points: "1 · poor")
    value: Any  # what the widget shows: the draft, else what was submitted, else None
    draft: bool  # ``value`` is a draft not submitted yet


@dataclass(frozen=True)
class AnswerRow:
    """Another person's submitted answer, as the table lists it."""

    question: str
    person: str
    answer: str
    version: str  # the version of the question it answered ("v2"): an edit of the question since is said
    at: str


@dataclass(frozen=True)
class QuestionsView:
    guidelines: str
    forms: list[QuestionForm]
    turn_questions: list[str]  # the per-turn questions' names (asked on each turn)
    state: str  # where the person's answers stand, in words
    can_submit: bool  # they have something to submit
    others: list[AnswerRow]
    hidden: int  # how many others' answers blind mode hides
    per_turn: list[Question]
    mine: dict[tuple[int, int | None], Answer]

    def turn_forms(self, turn: int) -> list[QuestionForm]:
        """The per-turn questions as turn ``turn``'s widgets show them."""
        return [_form(q, self.mine.get((q.id, turn))) for q in self.per_turn]


def _form(q: Question, answer: Answer | None) -> QuestionForm:
    widget, options, captions = _widget(q)
    return QuestionForm(
        q, q.name + (" *" if q.required else ""), widget, options, captions,
        None if answer is None else answer.current, answer is not None and answer.draft is not None,
    )  # fmt: skip


def _widget(question: Question) -> tuple[str, list[Any], dict[Any, str]]:
    spec = question.spec
    if question.kind == "choice":
        return ("buttons" if len(spec["options"]) <= BUTTONS else "select"), list(spec["options"]), {}
    if question.kind == "multi":
        return ("pills" if len(spec["options"]) <= BUTTONS * 2 else "multiselect"), list(spec["options"]), {}
    if question.kind == "rating":
        points = list(range(spec["min"], spec["max"] + 1))
        captions = {int(p): f"{p} · {label}" for p, label in spec.get("labels", {}).items()}
        return ("buttons" if len(points) <= 11 else "select"), points, captions
    return ("number" if question.kind == "number" else "text"), [], {}


def answer_text(value: Any) -> str:
    """An answer as one line of text."""
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "(none)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def questions_view(store: Store, dataset: str, pk: int, questions: list[Question] | None = None) -> QuestionsView:
    """The Questions tab of session ``pk`` for the store's user (``questions``: the dataset's, when read already)."""
    questions = store.questions.of(dataset) if questions is None else questions
    mine = {(a.question_id, a.turn): a for a in store.answers.mine(pk)}
    forms = [_form(q, mine.get((q.id, None))) for q in questions if q.level == "session"]
    me = store.user
    submitted = [s for s in store.answers.submissions(pk) if s.user_id == me.id]
    drafts = sum(1 for a in mine.values() if a.draft is not None)
    if submitted:
        when = submitted[0].at[:16].replace("T", " ")
        state = f"Submitted {when} UTC" + (f"; {drafts} change{'s' if drafts != 1 else ''} not submitted" if drafts
                                           else "")  # fmt: skip
    elif drafts:
        state = f"Draft: {drafts} answer{'s' if drafts != 1 else ''}, kept as you go; not submitted yet"
    else:
        state = "Not answered yet"
    names = {q.id: q.name for q in store.questions.of(dataset, retired=True)}
    blind = any(queue.blind for queue in store.queues.of(dataset)) and not me.can("adjudicate")
    others = [a for a in store.answers.of_session(pk) if a.user_id != me.id]
    rows = [] if blind else [
        AnswerRow(visible(names.get(a.question_id, "?") + ("" if a.turn is None else f" (turn {a.turn + 1})")),
                  visible(a.author), visible(answer_text(a.value)), f"v{a.question_version}",
                  (a.submitted_at or "")[:16].replace("T", " "))
        for a in others
    ]  # fmt: skip
    return QuestionsView(
        guidelines=store.questions.guidelines(dataset),
        forms=forms,
        turn_questions=[q.name for q in questions if q.level == "turn"],
        state=state,
        can_submit=bool(mine) and (drafts > 0 or not submitted),
        others=rows,
        hidden=len(others) if blind else 0,
        per_turn=[q for q in questions if q.level == "turn"],
        mine=mine,
    )


@dataclass(frozen=True)
class GoldChoice:
    """One session-level question an adjudicator may settle: everyone's submitted answer, and the gold so far."""

    form: QuestionForm  # the question's widget, showing the gold (None until settled)
    answers: dict[str, Any]  # person -> what they submitted
    gold: Any
    gold_by: str | None
    agreed: bool  # every submitted answer is the same


def gold_views(store: Store, pk: int, questions: list[Question]) -> dict[int | None, list[GoldChoice]]:
    """Of ``questions`` (the dataset's), those someone has answered on session ``pk``, side by side with the gold:
    by turn (None: the session's questions), read in one pass."""
    submitted: dict[tuple[int, int | None], dict[str, Any]] = {}
    for a in store.answers.of_session(pk):
        submitted.setdefault((a.question_id, a.turn), {})[a.author] = a.value
    gold = {(g.question_id, g.turn): g for g in store.answers.gold(pk)}
    by_id = {q.id: q for q in questions}
    choices: dict[int | None, list[GoldChoice]] = {}
    for q_id, turn in sorted({*submitted, *gold}, key=lambda k: (k[1] is not None, k[1] or 0)):
        q = by_id.get(q_id)
        if q is None:  # (retired)
            continue
        answers = submitted.get((q_id, turn), {})
        settled = gold.get((q_id, turn))
        widget, options, captions = _widget(q)
        form = QuestionForm(q, f"Gold: {q.name}", widget, options, captions,
                            None if settled is None else settled.value, False)  # fmt: skip
        values = [repr(v) for v in answers.values()]
        choices.setdefault(turn, []).append(GoldChoice(
            form, answers, None if settled is None else settled.value, None if settled is None else settled.author,
            len(set(values)) == 1 and len(values) > 1,
        ))  # fmt: skip
    order = {q.id: n for n, q in enumerate(questions)}
    for listed in choices.values():
        listed.sort(key=lambda c: order[c.form.question.id])
    return choices


def gold_table(choices: list[GoldChoice]) -> list[dict[str, str]]:
    """The answers side by side: one row per question, a column per person, then the gold."""
    people = sorted({person for c in choices for person in c.answers})
    rows = []
    for c in choices:
        row = {"question": visible(c.form.question.name)}
        row.update({visible(p): visible(answer_text(c.answers[p])) if p in c.answers else "" for p in people})
        row["agreed"] = "yes" if c.agreed else ("no" if len(c.answers) > 1 else "")  # (one answer: nothing to agree)
        row["gold"] = "" if c.gold is None else visible(answer_text(c.gold)) + f" ({visible(c.gold_by or '')})"
        rows.append(row)
    return rows
