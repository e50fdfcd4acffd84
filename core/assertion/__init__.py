"""The assertion engine: whether a sentence says that what it names is there.

One reading for every detector. Grounding's fact checks and the claim audit read a
sentence's assertion here, with one set of rules
(``core/data/assertion.json``, :mod:`core.assertion.rules`), so that they cannot read the
same sentence two ways:

- **negated**, **asked** and **supposed**: the token reading
  (:mod:`core.assertion.reading`): a cue's scope over a list up to a clause boundary ("denies
  fever, chills, or sweats"), after-cues ("pain free"), a question's scope in speech, a
  condition ("if symptoms do not improve");
- the dialogue's questions and answers (:mod:`core.assertion.dialogue`): a question answered
  "no" denies what it asked;
"""

from core.assertion.dialogue import (
    QUESTION_RUN,
    Polarity,
    dialogue_polarity,
    is_question,
    reply_answer,
    reply_index,
    text_polarity,
)
from core.assertion.reading import (
    Mark,
    content_word,
    denies,
    finding_stems,
    findings_as_words,
    polarity_marks,
    strip_speaker,
)
from core.assertion.rules import Rules, load_rules

__all__ = [
    "QUESTION_RUN",
    "Mark",
    "Polarity",
    "Rules",
    "content_word",
    "denies",
    "dialogue_polarity",
    "finding_stems",
    "findings_as_words",
    "is_question",
    "load_rules",
    "polarity_marks",
    "reply_answer",
    "reply_index",
    "strip_speaker",
    "text_polarity",
]
