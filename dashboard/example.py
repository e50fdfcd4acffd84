"""The upload page's worked example: a short visit and a note written from it with five planted
errors, written for Groundwatch (no real patient).

The note's errors: the dose of lisinopril (20 mg; the visit says 10), a denied symptom
asserted (chest pain), the side of the swollen ankle (right; the visit says left), the smoking
history (a current smoker; the visit says he quit), and an order never given (an MRI). The
shipped verifier catches the side, the asserted denied symptom, the dose and the order; the
smoking history is its known miss (the model card's Limits).
"""

from __future__ import annotations

VISIT = "\n".join(
    [
        "Doctor: Good morning, what brings you in today?",
        "Patient: My left ankle has been swollen for about a week, since I twisted it on the "
        "stairs.",
        "Doctor: Any chest pain or shortness of breath?",
        "Patient: No chest pain. I get a little winded on hills, but that is nothing new.",
        "Doctor: Are you still taking the lisinopril?",
        "Patient: Yes, ten milligrams every morning.",
        "Doctor: And do you smoke?",
        "Patient: I quit about five years ago.",
        "Doctor: On exam the left ankle is swollen and tender over the outer side. Let's get an "
        "X-ray of the left ankle and see you back in two weeks.",
    ]
)

NOTE = (
    "The patient presents with swelling of the right ankle for one week after a fall on the "
    "stairs. He reports chest pain. He takes lisinopril 20 mg every morning. He is a current "
    "smoker. Exam shows a swollen, tender ankle. An X-ray of the left ankle was ordered, and "
    "an MRI of the ankle was ordered. Follow-up in two weeks."
)

PLANTED = ("right ankle", "reports chest pain", "20 mg", "current smoker", "MRI")

__all__ = ["NOTE", "PLANTED", "VISIT"]
