"""Review's ground-truth editors and the fields their drafts are kept for."""

from __future__ import annotations

from evalcore.views.review.drafts import draft_target


def test_the_editor_a_draft_comes_from() -> None:
    assert draft_target("s-reference-12-0", "12-0") == ("reference", None)
    assert draft_target("s-erc-12-0", "12-0") == ("expected_retrieved_context", None)
    assert draft_target("t-gt-3-12-0", "12-0") == ("ground_truth", 3)
    assert draft_target("t-obs-10-12-0", "12-0") == ("observation", 10)
    for other in ("s-reference-12-1", "s-tags-12-0", "t-weight-3-12-0", "t-gt-x-12-0", "q-4-12-0", "", "12-0"):
        assert draft_target(other, "12-0") is None, other
    assert draft_target(None, "12-0") is None  # type: ignore[arg-type]


def test_drafts_of_the_forms_version_go_back_into_their_boxes() -> None:
    from evalcore.store.drafts import Draft
    from evalcore.views.review.drafts import DraftsView

    view = DraftsView(
        [Draft("goal", None, "new goal", 3, "t"), Draft("reference", None, "old", 2, "t"),
         Draft("observation", 1, "slow", 3, "t")],
        version=3,
    )  # fmt: skip
    assert view.fresh(None) == {"goal": "new goal"} and view.fresh(1) == {"observation": "slow"}
    assert [d.field for d in view.stale(None)] == ["reference"] and view.stale(1) == []
    assert view.fresh_keys() == {("goal", None), ("observation", 1)}


def test_text_that_is_the_saved_value_is_no_draft() -> None:
    """The browser sends typed text 0.7 s after the last key: a form saved sooner gets its text afterwards, which is
    the field's value, not unsaved text (the screenshot review saw it shown as "Your unsaved text from version 4")."""
    from evalcore.store.drafts import Draft
    from evalcore.views.review.drafts import DraftsView, is_saved_text

    assert is_saved_text("Their reference", "Their reference")
    assert is_saved_text(None, "") and is_saved_text("", None)
    assert not is_saved_text("Their reference ", "Their reference")
    view = DraftsView(
        [Draft("reference", None, "Their reference", 4, "t"), Draft("goal", None, "Mine", 4, "t")], version=5
    )
    current = {"reference": "Their reference", "goal": "", "tags": []}
    assert [d.field for d in view.stale(None, current)] == ["goal"]  # the saved one is not shown as unsaved
    assert [d.field for d in view.stale(None)] == ["reference", "goal"]
