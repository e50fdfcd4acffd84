"""The token reading: which words of a sentence are asserted, negated, asked or supposed.

A negation cue's scope runs over a list and ends at a clause boundary ("denies fever,
chills, or sweats, but reports a cough"); an after-cue negates what stands before it ("pain
free", "was ruled out"); in speech, a question's scope is asked, not said ("any fever ?");
a condition supposes what it says ("if symptoms do not improve"). Grounding's fact checks
read every sentence this way (:func:`polarity_marks`), extraction reads a mention's negation
here (:func:`read_negation`) and the claim audit asks :func:`denies`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from core.assertion.rules import load_rules
from core.lexicon import load_lexicon
from core.text import SPEAKER_RE, STOPWORDS, cached_for_short_texts, stem, token_spans, tokens

Mark = bool | None | Literal["if"]
"""A token's reading: True asserted, False negated, None asked, "if" supposed."""

_R = load_rules()
# The word classes the token reading below tests, by the names it has always used.
_NEG_CUES = _R.neg_cues  # negate what follows them ("denies fever", "no rash")
_POST_CUES = _R.neg_after  # negate what comes just before them ("pain free")
# ... or what follows, when a content word follows ("the workup ruled out asthma")
_BOTH_WAYS = _R.neg_both_ways
_PSEUDO = _R.pseudo
_AFFIRMERS = _R.affirmers  # assert what stands before them, ending a negation's scope
_LINKS = _R.links
_SCOPE_END = _R.scope_end
_SCOPE_MAX = _R.scope_words
_LIST_ITEM = _R.list_item_words  # content words a list item may have before the scope renews
_SUBJECTS = _R.subjects  # a new subject ends a negation's scope: "no fever , she has a cough"
_CLAUSE_STARTS = _R.clause_starts  # after an answer "no": "no , i think it's stress"
_COMMA_CLAUSE = _R.comma_clause  # after a comma: a new clause, unless a list goes on
_NEW_PHRASE = _R.new_phrase  # "and" before these starts a new phrase
_PREPOSITIONS = _R.prepositions
_COPULAS = _R.copulas
_FINE = _R.fine  # "is intact", "are normal": after a copula, a clause of its own
_RAISING = _R.raising  # pass a denial on to the clause they take: "i don't think i've had"
_RAISED_BY = _R.raised_by  # between a raising verb and what it raises
_VERBS_BEFORE_ANY = _R.verbs_before_any  # "i have not had any pain" states, not asks
_CONDITIONS = _R.conditions  # a condition supposes what it says
_ASKS = _R.asks
_ASK_PAIRS = _R.ask_pairs
_ASK_ALWAYS = _R.ask_always
_AUXILIARIES = _R.auxiliaries  # an auxiliary opening a sentence asks: "does the pain radiate"
_ASKED_SUBJECTS = _R.asked_subjects
_ASK_VERBS = frozenset(a for a, _ in _ASK_PAIRS)  # "do" in "do you": the asker's own "you"
_OPENERS = _R.openers  # what may stand before "do you" when it asks
_WH_WORDS = _R.wh_words
_WH_NEXT = _R.wh_next  # after "how", "when", ...: the words that make it a question
_RELATIVES = _R.relatives
_ASKED_PARTICIPLES = _R.asked_participles  # "have you" asks when one of these follows
_NO_WORDS = _R.no_words
_HESITATIONS = _R.hesitations
_FILLERS = _R.fillers


def strip_speaker(sentence: str) -> str:
    """A dialogue sentence without its speaker tag ("[doctor] ", "Guest_family: ")."""
    return SPEAKER_RE.sub("", sentence)


@lru_cache(maxsize=1)
def finding_stems() -> frozenset[str]:
    """The stems of the one-word findings of the lexicon (symptoms a clinician asks about)."""
    return frozenset(stem(w) for w in load_lexicon().findings if " " not in w)


@cached_for_short_texts(maxsize=16384)
def findings_as_words(text: str) -> str:
    """``text`` with each lay or clinical name of one finding written as one word
    ("shortness of breath" -> "dyspnea"), so that it is read as one word for negation."""
    text = _R.naming.sub(" ", text)
    for pattern, word in _R.finding_phrases:
        text = pattern.sub(word, text)
    return text


def content_word(tok: str) -> bool:
    """Whether a token names something a sentence can say or deny (no function word, cue
    or clause end)."""
    return (
        tok.isalpha()
        and tok not in STOPWORDS
        and len(tok) > 2
        and tok not in _NEG_CUES
        and tok not in _SCOPE_END
    )


def opens_wh_question(toks: list[str], opener: int) -> bool:
    """Whether the word at ``opener`` opens a wh-question: "how far ...", "what medications
    ...", "when did it start", but not "how about ..." nor "when you're constipated , ..."."""
    tok = toks[opener]
    nxt = toks[opener + 1] if opener + 1 < len(toks) else ""
    if tok not in _WH_WORDS or (tok, nxt) in _ASK_ALWAYS:
        return False
    return tok in {"what", "which", "who", "whose"} or nxt in _WH_NEXT


def _asks_here(toks: list[str], i: int, wh: bool) -> bool:
    """Whether a question starts at token ``i`` of a transcript sentence."""
    tok, prev = toks[i], toks[i - 1] if i else ""
    nxt = toks[i + 1] if i + 1 < len(toks) else ""
    after = toks[i + 2] if i + 2 < len(toks) else ""
    if (tok, nxt) in _ASK_ALWAYS:
        return True
    if tok in _AUXILIARIES and nxt in _ASKED_SUBJECTS and (not prev or prev in _OPENERS):
        return True  # "so does the pain radiate", "are anyone in your family ..."
    if (
        tok == "any"
        and content_word(prev)
        and prev not in _VERBS_BEFORE_ANY
        and not prev.endswith(("ed", "ing"))
        and content_word(nxt)
    ):
        return True  # run-on speech: "let's talk about some other symptoms any joint pain"
    if tok in _ASKS or (tok, nxt) in _ASK_PAIRS:
        at_start = not prev or prev in _OPENERS
        if tok in _ASKS:
            return at_start
        if at_start and not wh:
            return True
        # run-on speech: "... nothing else is going on have you done physical therapy"
        return prev not in _WH_WORDS and (
            (tok in {"do", "did"} and nxt == "you" and after.isalpha())
            or (tok == "have" and nxt == "you" and after in _ASKED_PARTICIPLES)
        )
    return False


def polarity_marks(toks: list[str], *, speech: bool = True) -> list[Mark]:
    """Per token: True asserted, False negated, None asked (in a question's scope), "if"
    supposed (in a condition: "if symptoms do not improve"); see :func:`_read_marks`."""
    return _read_marks(toks, speech=speech)[0]


def _after_cue(toks: list[str], i: int) -> bool:
    """Whether an after-cue ("free", "ruled out") starts at token ``i``."""
    return any(tuple(toks[i : i + len(p)]) == p for p in _POST_CUES.get(toks[i], ()))


_ARTICLES = frozenset({"a", "an", "the", "any"})  # "ruled out a fracture"


def _forward_cue(toks: list[str], i: int) -> bool:
    """Whether a cue that negates either way ("ruled out") starts at token ``i`` with a
    content word after it, which it then negates ("ruled out asthma", not "asthma was
    ruled out")."""
    for p in _BOTH_WAYS:
        k = i + len(p)
        if tuple(toks[i:k]) != p:
            continue
        if k < len(toks) and toks[k] in _ARTICLES:
            k += 1
        if k < len(toks) and content_word(toks[k]):
            return True
    return False


def _read_marks(toks: list[str], *, speech: bool) -> tuple[list[Mark], list[int]]:
    """The token reading: the marks of :func:`polarity_marks` and the indices of the
    negation cues it applied (before-cues and after-cues alike).

    A negation's scope runs over at most ``_SCOPE_MAX`` content words (a list renews it:
    "denies fever, chills, muscle aches, nausea, or vomiting") and ends at a clause
    boundary: a conjunction such as "but", a new subject ("no rash, she says ..."), "and"
    before a new phrase ("cannot catch her breath and some wheezing is present"), or a
    comma that does not continue a list.
    """
    marks: list[Mark] = [True] * len(toks)
    cues: list[int] = []
    scope = 0  # content words left in a negation's scope
    cue = -1  # where the last negation cue stood
    asking = supposing = False
    opener = next((i for i, t in enumerate(toks) if t.isalpha() and t not in _FILLERS), -1)
    # "how far are you running": presupposed, not asked; but "what about ..." asks
    wh = opener >= 0 and opens_wh_question(toks, opener)
    for i, tok in enumerate(toks):
        prev = toks[i - 1] if i else ""
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        # "not only", "no change", "gram negative": a cue in a pseudo-phrase is no cue
        pseudo = (tok, nxt) in _PSEUDO or (prev, tok) in _PSEUDO
        if (
            tok in _SCOPE_END
            or tok == "?"
            or (tok == "," and nxt in _COMMA_CLAUSE)
            or (tok == "other" and nxt == "than")
            or (tok == "and" and nxt in _NEW_PHRASE)
            or (tok in {"and", "or"} and nxt in {"your", "my"})
        ):
            scope, asking, supposing = 0, False, False
            continue
        if supposing:
            if tok in {",", "then"}:
                supposing = False
            else:
                marks[i] = "if"
            continue
        if tok in _CONDITIONS:
            scope, asking, supposing = 0, False, True
            continue
        if (
            tok in _SUBJECTS
            and scope < _SCOPE_MAX  # not "denies that she ..."
            and not (
                # "i don't think i've ever had heartburn": the denial moves to what is thought
                0 <= cue < i - 1
                and toks[cue] == "not"
                and toks[cue + 1] in _RAISING
                and all(t in _RAISED_BY for t in toks[cue + 2 : i])
            )
        ):
            scope = 0
        if tok in _SUBJECTS and asking and prev not in _ASK_VERBS | _RELATIVES:
            # "any ... when i'm ...", but not "anyone that you know has ..."
            asking = False
        if scope > 0 and cue >= 0 and toks[cue] == "without" and tok in _PREPOSITIONS:
            scope = 0  # "without contrast of your abdomen"
        if speech and scope > 0 and tok == "some" and any(map(content_word, toks[cue + 1 : i])):
            scope = 0  # "no fever some chills": "some" starts what is said
        if (
            speech
            and scope > 0
            and tok in {"your", "my"}
            and content_word(prev)
            and prev not in _VERBS_BEFORE_ANY
            and not prev.endswith(("ing", "ed"))
        ):
            scope = 0  # "you don't have any fever your blood pressure is fine"
        if (
            speech
            and scope > 0
            and tok in _COPULAS
            and nxt in _FINE
            and content_word(prev)
            and any(map(content_word, toks[cue + 1 : i - 1]))
        ):
            # run-on speech: "there is no pronator drift sensation is intact": the word
            # before "is intact" starts a clause of its own
            marks[i - 1] = True
            scope = 0
        used_up = not speech and cue >= 0 and i > 0 and marks[i - 1] is False and content_word(prev)
        if (scope > 0 or used_up) and (tok in {",", "or", "nor"} or (tok == "and" and prev == ",")):
            # a list renews the scope; in writing, also when its last item used the scope up
            # ("denies black stools , heavy menstrual bleeding , weight loss , or syncope")
            scope = max(scope, _LIST_ITEM)
            continue
        if (
            tok in _NO_WORDS
            and (not prev or prev in _NO_WORDS or prev == "," or prev in _HESITATIONS)
            and (not nxt or nxt in _CLAUSE_STARTS)
        ):
            continue  # an answer particle: "no , i think ..." negates nothing that follows
        if tok == "negative" and nxt != "for" and content_word(nxt) and not pseudo:
            scope = 1  # "negative margins": an adjective on the next word
            cues.append(i)
            continue
        if not pseudo and not asking and _forward_cue(toks, i):
            scope, cue = _SCOPE_MAX, i
            cues.append(i)
            continue
        if (
            tok in _POST_CUES
            and not pseudo
            and not (tok == "negative" and nxt == "for")
            and _after_cue(toks, i)
        ) or (tok in _NO_WORDS and prev and nxt in {"", ".", "?"}):
            cues.append(i)
            # "pain free", "margins were negative", "pregnancy test negative", "diarrhea no"
            j = i - 1
            while j >= 0 and toks[j] in _LINKS:
                j -= 1
            # the words before it that name one thing ("pregnancy test negative"); a spoken
            # "diarrhea no" takes one word
            for _ in range(1 if tok in _NO_WORDS else _LIST_ITEM):
                if j < 0 or not content_word(toks[j]) or marks[j] is not True:
                    break
                marks[j] = False
                j -= 1
            continue
        if tok == "without" and prev == "or":  # "with or without"
            continue
        if tok == "non":
            scope = 1
            cues.append(i)
            continue
        if (
            scope > 0
            and tok in _AFFIRMERS
            and cue < (last_comma := _last(toks, ",", i))
            and toks[last_comma + 1] not in {"or", "and", "nor"}
        ):
            # "no tenderness , bowel sounds are present": the item before it is asserted
            # (but not in "no murmurs present" nor "no murmurs , gallops , or rubs present")
            for j in range(last_comma + 1, i):
                if marks[j] is False:
                    marks[j] = True
            scope = 0
            continue
        if speech and scope > 0 and tok in _AFFIRMERS and content_word(nxt):
            # run-on speech: "no evidence of thrush present tonsils are midline": what
            # follows "present" is said of its own
            marks[i] = False
            scope = 0
            continue
        if tok in _NEG_CUES and not pseudo:
            if not asking:  # "do you not have a bowel movement ?" still asks
                scope, cue = _SCOPE_MAX, i
                cues.append(i)
            continue
        if speech and scope == 0 and _asks_here(toks, i, wh):
            asking = True
        if scope > 0:
            marks[i] = False
            if content_word(tok):
                scope -= 1
        elif asking:
            marks[i] = None
    return marks, cues


def denies(text: str) -> bool:
    """Whether written ``text`` denies something: one of its content words read as negated,
    by the same reading the fact checks give a statement (a cue's scope over a list, "pain
    free", "negative for", "non-", a clause boundary ending it). Other detectors ask this
    rather than keep a cue list of their own."""
    toks = tokens(findings_as_words(text))
    marks = polarity_marks(toks, speech=False)
    return any(m is False and content_word(t) for t, m in zip(toks, marks, strict=True))


def _last(toks: list[str], tok: str, before: int) -> int:
    """Index of the last ``tok`` before index ``before`` (-1: none)."""
    return next((j for j in range(before - 1, -1, -1) if toks[j] == tok), -1)


@dataclass(frozen=True, slots=True)
class NegationReading:
    """The token reading of one written sentence, by character offsets: each word (or name
    read as one word) with whether it is negated, and where the cues it applied stand."""

    words: tuple[tuple[int, int, bool], ...]
    cues: tuple[tuple[int, int], ...]

    def negated(self, start: int, end: int) -> bool:
        """Whether a word within ``[start, end)`` is negated."""
        return any(negated for a, b, negated in self.words if a >= start and b <= end)


_NAME_TOKEN = "name"  # a content word that no rule lists: what a name is read as


def read_negation(text: str, names: Sequence[tuple[int, int]] = ()) -> NegationReading:
    """The token reading (:func:`polarity_marks`, as written text) of ``text``, each of the
    ``names`` (``[start, end)`` offsets of the terms a reader found) read as one word, as
    grounding reads a finding's several words as one: "without shortness of breath" denies
    the whole name, "non-small cell lung cancer" is a name and no denial. A name holding a
    negation cue is read as its words."""
    words = token_spans(text)
    # a name that says its own denial ("does not smoke", "no known allergies") is read as its
    # words, so that its cue goes on to what follows: "does not smoke or drink alcohol"
    names = [
        (x, y)
        for x, y in names
        if not any(x <= a and b <= y and tok in _NEG_CUES for tok, a, b in words)
    ]
    spans: list[tuple[str, int, int]] = []
    for tok, a, b in words:
        name = next(((x, y) for x, y in names if x <= a and b <= y), None)
        if name is None:
            spans.append((tok, a, b))
        elif not spans or spans[-1][1:] != name:
            spans.append((_NAME_TOKEN, *name))
    marks, cues = _read_marks([tok for tok, _, _ in spans], speech=False)
    return NegationReading(
        words=tuple(
            (a, b, mark is False)
            for (tok, a, b), mark in zip(spans, marks, strict=True)
            if tok.isalpha()
        ),
        cues=tuple((spans[i][1], spans[i][2]) for i in cues),
    )
