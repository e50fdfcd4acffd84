"""The assertion engine: whether a sentence says that what it names is there.

One reading for every detector. Grounding's fact checks, extraction for consistency and the
claim audit read a sentence's assertion here, with one set of rules
(``core/data/assertion.json``, :mod:`core.assertion.rules`), so that they cannot read the
same sentence two ways:

- **negated**, **asked** and **supposed**: the token reading
  (:mod:`core.assertion.reading`): a cue's scope over a list up to a clause boundary ("denies
  fever, chills, or sweats"), after-cues ("pain free"), a question's scope in speech, a
  condition ("if symptoms do not improve");
- the dialogue's questions and answers (:mod:`core.assertion.dialogue`): a question answered
  "no" denies what it asked;
- **historical**, **hypothetical** and **family** (and extraction's allergy and medication
  action modifiers): ConText-style triggers with a direction (:mod:`core.assertion.context`).

A mention's one :data:`Assertion` is :func:`mention_assertion`: family, then negated, then
hypothetical, then historical.
"""

from core.assertion.context import (
    ACTION_CATEGORIES,
    BREAKS,
    NEGATION_CUE,
    Assertion,
    Trigger,
    context_trigger,
    mention_assertion,
    reaching,
)
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
    NegationReading,
    content_word,
    denies,
    finding_stems,
    findings_as_words,
    polarity_marks,
    read_negation,
    strip_speaker,
)
from core.assertion.rules import PHRASE_TOKEN_RE, Rules, load_rules, phrase_key

__all__ = [
    "ACTION_CATEGORIES",
    "BREAKS",
    "NEGATION_CUE",
    "PHRASE_TOKEN_RE",
    "QUESTION_RUN",
    "Assertion",
    "Mark",
    "NegationReading",
    "Polarity",
    "Rules",
    "Trigger",
    "content_word",
    "context_trigger",
    "denies",
    "dialogue_polarity",
    "finding_stems",
    "findings_as_words",
    "is_question",
    "load_rules",
    "mention_assertion",
    "phrase_key",
    "polarity_marks",
    "reaching",
    "read_negation",
    "reply_answer",
    "reply_index",
    "strip_speaker",
    "text_polarity",
]
