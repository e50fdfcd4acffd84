"""Speed of evidence validation (spec 054) and quote grounding (spec 053).

Prints one plain table: schema validation time per call (8 keys x 5 quotes), substring
grounding throughput on a 60,000-character transcript, and fuzzy mode against the naive
definition ``fuzz.partial_ratio(normalize(quote), normalize(transcript)) / 100 >= threshold``
evaluated per quote, with the speed-up and the number of decisions that differ.

The transcript is synthetic (a clinical interview written by this script, fixed seed).

    .venv/bin/python benchmarks/evidence.py [--json] [--seed N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rapidfuzz import fuzz  # noqa: E402

from core.evidence import (  # noqa: E402
    PHQ8_KEYS,
    EvidenceGrounder,
    normalize_for_quote_match,
    validate_evidence_schema,
)

TARGET_CHARS = 60_000
N_QUOTES = 100
THRESHOLD = 0.85

DOCTOR = [
    "How have you been sleeping over the last two weeks?",
    "Do you still enjoy the things you used to do?",
    "How is your appetite these days?",
    "Have you been feeling down or hopeless?",
    "Can you concentrate when you read or watch television?",
    "Do you feel tired even after a full night in bed?",
    "Has anyone noticed you moving or speaking more slowly?",
    "Do you ever feel like you have let your family down?",
    "Tell me a bit more about that.",
    "When did that start?",
    "Okay, thank you for sharing that with me.",
]
OPENERS = ["Honestly", "Well", "I guess", "Um", "You know", "To be fair", "Yeah", "Mostly"]
SUBJECTS = ["I", "my husband", "my daughter", "my boss", "the doctor", "my sister", "everyone"]
VERBS = [
    "wake up at four and can\u2019t get back to sleep",
    "don\u2019t really enjoy cooking anymore",
    "skip breakfast and sometimes lunch too",
    "feel like a failure at work",
    "can\u2019t focus on the news for more than a minute",
    "am exhausted by the middle of the afternoon",
    "stopped going to the gym in March",
    "feel slowed down, like walking through mud",
    "sleep twelve hours on weekends",
    "eat a lot more sweets than before",
    "cry in the car on the way home",
    "lost interest in seeing friends",
]
TAILS = [
    "most days",
    "since the winter",
    "maybe three times a week",
    "every single night",
    "when I am alone",
    "after the move",
    "which is not like me",
    "and I hate it",
]
TAGS = ["<laughter>", "<sigh>", "<pause>", "<crosstalk>"]


def make_transcript(rng: random.Random) -> tuple[str, list[str]]:
    """A doctor-patient interview of about TARGET_CHARS characters, and its patient turns."""
    lines: list[str] = []
    patient_turns: list[str] = []
    size = 0
    while size < TARGET_CHARS:
        doctor = rng.choice(DOCTOR)
        parts = []
        for _ in range(rng.randint(1, 3)):
            sentence = f"{rng.choice(OPENERS)}, {rng.choice(SUBJECTS)} {rng.choice(VERBS)}"
            if rng.random() < 0.6:
                sentence += f" {rng.choice(TAILS)}"
            if rng.random() < 0.2:
                sentence += f" {rng.choice(TAGS)}"
            parts.append(sentence + rng.choice([".", ".", "...", "!"]))
        patient = " ".join(parts).replace(" ", "\u00a0", 1 if rng.random() < 0.1 else 0)
        patient_turns.append(patient)
        lines.append(f"Doctor: {doctor}\nPatient: {patient}\n")
        size += len(lines[-1])
    return "".join(lines)[:TARGET_CHARS], patient_turns


def drift(quote: str, rng: random.Random) -> str:
    """What an LLM does to a "verbatim" quote: case, punctuation, spacing, a typo."""
    chars = list(quote.replace("\u2019", "'"))
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(chars))
        op = rng.choice(["drop", "swap", "space"])
        if op == "drop":
            del chars[i]
        elif op == "swap" and i + 1 < len(chars):
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        else:
            chars.insert(i, " ")
    out = "".join(chars)
    return out.upper() if rng.random() < 0.2 else out


def make_quotes(transcript: str, turns: list[str], rng: random.Random) -> list[str]:
    """50 verbatim spans, 25 drifted ones and 25 invented ones (plausible but absent)."""
    quotes: list[str] = []
    while len(quotes) < N_QUOTES // 2:
        turn = rng.choice(turns)
        words = turn.split(" ")
        i = rng.randrange(len(words))
        quote = " ".join(words[i : i + rng.randint(4, 14)])
        if len(quote) > 15 and quote in transcript:
            quotes.append(quote)
    while len(quotes) < 3 * N_QUOTES // 4:
        turn = rng.choice(turns)
        words = turn.split(" ")
        i = rng.randrange(len(words))
        quote = " ".join(words[i : i + rng.randint(5, 14)])
        if len(quote) > 25:
            quotes.append(drift(quote, rng))
    norm = normalize_for_quote_match(transcript)
    while len(quotes) < N_QUOTES:
        invented = (
            f"{rng.choice(SUBJECTS)} {rng.choice(['never', 'always', 'rarely'])} "
            f"{rng.choice(VERBS)} {rng.choice(['on holidays', 'at the lake', 'with my dog'])}"
        )
        if normalize_for_quote_match(invented) not in norm:
            quotes.append(invented)
    rng.shuffle(quotes)
    return quotes


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--seed", type=int, default=53, help="random seed of the synthetic data")
    parser.add_argument("--repeat", type=int, default=3, help="timing runs (best is kept)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    transcript, turns = make_transcript(rng)
    quotes = make_quotes(transcript, turns, rng)
    evidence = {"quotes": quotes}
    rows: list[tuple[str, str, str]] = []
    out: dict[str, Any] = {"transcript_chars": len(transcript), "quotes": len(quotes)}

    # Spec 054: schema validation, 8 keys x 5 quotes.
    obj = {key: [f"  quote {k} for {key}  " for k in range(5)] for key in PHQ8_KEYS}
    loops = 20_000
    per_call = [
        best_of(lambda: [validate_evidence_schema(obj) for _ in range(loops)], 1) / loops
        for _ in range(args.repeat)
    ]
    schema_us = min(per_call) * 1e6
    rows.append(("schema validation, 8 keys x 5 quotes", f"{schema_us:.1f} us/call", "< 20 us"))
    out["schema_us_per_call"] = schema_us

    # Spec 053: substring mode throughput.
    for locate in (True, False):
        grounder = EvidenceGrounder(mode="substring", log_rejections=False, locate_rejected=locate)
        prepared = grounder.prepare(transcript)
        seconds = best_of(partial(grounder.check, evidence, transcript), args.repeat)
        seconds_prepared = best_of(partial(grounder.check, evidence, prepared), args.repeat)
        label = "locate rejected" if locate else "no locating"
        rows.append(
            (
                f"substring grounding ({label})",
                f"{len(quotes) / seconds:,.0f} quotes/s",
                f"{len(quotes) / seconds_prepared:,.0f} quotes/s with the transcript prepared",
            )
        )
        out[f"substring_quotes_per_s_{'locate' if locate else 'nolocate'}"] = len(quotes) / seconds
    prep_s = best_of(lambda: EvidenceGrounder.prepare(transcript), args.repeat)
    rows.append(("transcript normalisation + offset map", f"{prep_s * 1e3:.1f} ms", "once"))

    # Fuzzy mode: naive definition per quote vs this implementation, in the same run.
    def naive() -> list[bool]:
        return [
            fuzz.partial_ratio(normalize_for_quote_match(q), normalize_for_quote_match(transcript))
            / 100
            >= THRESHOLD
            for q in quotes
        ]

    def normalised_once() -> list[bool]:
        norm = normalize_for_quote_match(transcript)
        return [
            fuzz.partial_ratio(normalize_for_quote_match(q), norm) / 100 >= THRESHOLD
            for q in quotes
        ]

    naive_decisions = naive()
    naive_s = best_of(naive, args.repeat)
    once_s = best_of(normalised_once, args.repeat)
    rows.append(("fuzzy: naive definition per quote", f"{naive_s * 1e3:.1f} ms", "baseline"))
    rows.append(
        (
            "fuzzy: transcript normalised once, partial_ratio each",
            f"{once_s * 1e3:.1f} ms",
            f"{naive_s / once_s:.1f}x vs naive",
        )
    )
    out["fuzzy_naive_ms"] = naive_s * 1e3
    out["fuzzy_normalised_once_ms"] = once_s * 1e3
    for locate in (True, False):
        grounder = EvidenceGrounder(
            mode="fuzzy", threshold=THRESHOLD, log_rejections=False, locate_rejected=locate
        )
        result = grounder.check(evidence, transcript)
        decisions = [m.grounded for m in result.matches]
        differ = sum(a != b for a, b in zip(decisions, naive_decisions, strict=True))
        fast_s = best_of(partial(grounder.check, evidence, transcript), args.repeat)
        label = "locate rejected" if locate else "no locating"
        rows.append(
            (
                f"fuzzy: EvidenceGrounder ({label})",
                f"{fast_s * 1e3:.1f} ms",
                f"{naive_s / fast_s:.1f}x vs naive (target >= 10x); "
                f"{differ} differing decisions (must be 0)",
            )
        )
        key = "locate" if locate else "nolocate"
        out[f"fuzzy_fast_ms_{key}"] = fast_s * 1e3
        out[f"fuzzy_speedup_{key}"] = naive_s / fast_s
        out[f"fuzzy_differing_{key}"] = differ
    out["fuzzy_grounded"] = sum(naive_decisions)
    methods = [m.method for m in result.matches]
    rows.append(
        (
            "fuzzy: decisions",
            f"{sum(naive_decisions)}/{len(quotes)} grounded",
            f"{methods.count('substring')} by substring, {methods.count('fuzzy')} by alignment",
        )
    )

    width = [max(len(r[i]) for r in rows) for i in range(2)]
    print(
        f"evidence benchmark: {len(transcript):,}-character synthetic transcript, "
        f"{len(quotes)} quotes, threshold {THRESHOLD}, best of {args.repeat}"
    )
    print(f"{'measure':<{width[0]}}  {'value':>{width[1]}}  note")
    for name, value, note in rows:
        print(f"{name:<{width[0]}}  {value:>{width[1]}}  {note}")
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
