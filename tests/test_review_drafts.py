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
