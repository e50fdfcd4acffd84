"""The status every check reports, so that nothing degrades silently.

``ok``: the check ran. ``skipped``: not applicable or disabled (the reason says why).
``unavailable``: a backend it needs is missing (the reason names it). ``failed``: it ran and
raised (the reason names the error, never patient text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "skipped", "unavailable", "failed"]
STATUSES: tuple[Status, ...] = ("ok", "skipped", "unavailable", "failed")


@dataclass(frozen=True, slots=True)
class CheckStatus:
    """Outcome of one check or tier, with a reason unless it is ``ok``."""

    status: Status
    reason: str | None = None

    def __str__(self) -> str:
        return self.status if not self.reason else f"{self.status} ({self.reason})"

    def to_dict(self) -> dict[str, str | None]:
        return {"status": self.status, "reason": self.reason}

    @property
    def ran(self) -> bool:
        return self.status == "ok"


OK = CheckStatus("ok")


def skipped(reason: str) -> CheckStatus:
    return CheckStatus("skipped", reason)


def unavailable(reason: str) -> CheckStatus:
    return CheckStatus("unavailable", reason)


def failed(reason: str) -> CheckStatus:
    return CheckStatus("failed", reason)
