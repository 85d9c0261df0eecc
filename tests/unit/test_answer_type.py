"""The answer kind a question asks for (from its first word) and the check every QA mode applies."""

from __future__ import annotations

import pytest

from hoprag.planner.answer_type import answer_kind, fit_answer


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Are groclopril and Lemavir used against the same disease?", "yes_no"),
        ("Do both films have directors from the same country?", "yes_no"),
        ("did the two firms share a founder", "yes_no"),  # no capital, no question mark
        ("Has the gene been found in mice?", "yes_no"),
        ("Isn’t Worms in Germany?", "yes_no"),  # typographic apostrophe
        ("Is Worms or Berlin the older city?", "any"),  # an alternative question names its answer
        ("Who directed Payment On Demand?", "open"),
        ("How many films did Carl Boese direct?", "open"),
        ("In which year was Lemavir approved?", "any"),  # not recognized: nothing is checked
        ("Tell me whether Worms is in Germany.", "any"),
        ("", "any"),
    ],
)
def test_the_first_word_decides_the_answer_kind(question: str, kind: str) -> None:
    assert answer_kind(question) == kind


def test_a_yes_no_question_keeps_only_a_yes_or_no_answer() -> None:
    q = "Are groclopril and Lemavir used against the same disease?"
    assert fit_answer(q, "Yes, both treat Wotranditis") == ("Yes", None)
    assert fit_answer(q, "no") == ("no", None)
    assert fit_answer(q, "True") == ("yes", None)
    assert fit_answer(q, "") == ("", None)  # the model did not know: no complaint
    assert fit_answer(q, "Wotranditis") == ("", "'Wotranditis' does not answer a yes/no question")
    assert fit_answer(q, "Nobody knows")[0] == ""  # "no" must be a word of its own


def test_an_open_question_refuses_a_bare_yes_or_no_only() -> None:
    q = "Which film did Carl Boese direct?"
    assert fit_answer(q, "Yes.")[0] == "" and "asks for a name" in (fit_answer(q, "no")[1] or "")
    assert fit_answer(q, "No Country for Old Men") == ("No Country for Old Men", None)
    assert fit_answer("In which year?", "yes") == ("yes", None)  # kind not recognized: unchecked
