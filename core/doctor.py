"""``groundwatch doctor``: what is configured, and whether it works.

Each part is reported ``ok``, ``unavailable`` (not configured, or configured but missing:
the reason says which) or ``failed`` (configured, tried, and it did not work), with what to
do about it. A part that is not configured is never a failure; the exit code is 0 only when
everything that is configured works.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

State = Literal["ok", "unavailable", "failed"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One part of the installation: its state, what was found, and what to do."""

    part: str
    state: State
    detail: str
    fix: str | None = None
    configured: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _database(settings: Any) -> Finding:
    from sqlalchemy.engine import make_url

    from core.storage.db import (
        DatabaseError,
        alembic_config,
        check_connection,
        current_revision,
        get_engine,
    )

    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        if not Path(url.database).exists():  # connecting would create it: report instead
            return Finding(
                "database",
                "failed",
                f"sqlite, the file {url.database} does not exist yet",
                "run `groundwatch init-db` (or `make run`)",
            )
    try:
        engine = get_engine(settings.database_url)
        check_connection(engine)
        at = current_revision(engine)
    except DatabaseError as exc:
        return Finding(
            "database",
            "failed",
            str(exc),
            "check GROUNDWATCH_DATABASE_URL and that the server is running",
        )
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config(settings.database_url)).get_current_head()
    engine_name = engine.dialect.name
    if at != head:
        return Finding(
            "database",
            "failed",
            f"{engine_name}, schema at revision {at or 'none'}, the code needs {head}",
            "run `groundwatch init-db`",
        )
    return Finding("database", "ok", f"{engine_name}, schema at revision {head} (newest)")


def _timed(load: Any) -> tuple[Any, Any, float]:
    started = time.perf_counter()
    model, status = load()
    return model, status, time.perf_counter() - started


def _embedder(settings: Any) -> Finding:
    from core.backends import load_embedder

    model, status, seconds = _timed(lambda: load_embedder(settings))
    if model is None:
        return Finding(
            "embedding model",
            "failed",
            status.reason or "not loaded",
            "reinstall (`make install`) or set GROUNDWATCH_EMBEDDING_MODEL to a model folder",
        )
    vector = model.encode(["Groundwatch checks that the model loads."])
    return Finding(
        "embedding model",
        "ok",
        f"{settings.embedding_model or 'all-MiniLM-L6-v2 (package)'}, {vector.shape[1]} "
        f"dimensions, loaded in {seconds:.1f} s",
    )


def _learned(settings: Any) -> Finding:
    from core.backends import load_learned

    if not settings.learned_verifier:
        return Finding(
            "learned verifier",
            "unavailable",
            "turned off (GROUNDWATCH_LEARNED_VERIFIER=false): the rules alone decide",
            "unset GROUNDWATCH_LEARNED_VERIFIER to use the shipped model",
            configured=False,
        )
    model, status, seconds = _timed(lambda: load_learned(settings))
    if model is None:
        return Finding(
            "learned verifier",
            "failed",
            status.reason or "not loaded",
            "reinstall (`make install`), or fix GROUNDWATCH_LEARNED_VERIFIER_PATH",
        )
    p = float(model.predict([("The knee is swollen.", "Patient: my knee is swollen.")])[0])
    version = model.settings.get("version", "?")
    return Finding(
        "learned verifier",
        "ok",
        f"version {version}, loaded in {seconds:.1f} s, a supported test pair scores {p:.2f}",
    )


def _nli(settings: Any) -> Finding:
    from core.backends import load_nli

    if not settings.nli_model:
        return Finding(
            "NLI model",
            "unavailable",
            "not configured (GROUNDWATCH_NLI_MODEL): optional, the learned verifier decides",
            configured=False,
        )
    model, status = load_nli(settings)
    if model is None:
        return Finding(
            "NLI model", "failed", status.reason or "not loaded", "fix GROUNDWATCH_NLI_MODEL"
        )
    return Finding("NLI model", "ok", f"{settings.nli_model}")


def _llm(settings: Any) -> Finding:
    from core.backends import load_llm

    if not settings.llm_base_url:
        return Finding(
            "LLM server",
            "unavailable",
            "not configured (GROUNDWATCH_LLM_BASE_URL): optional (LLM judge, sample generation)",
            "`groundwatch llm serve` starts a local one",
            configured=False,
        )
    client, _ = load_llm(settings)
    assert client is not None
    try:
        reply = client.chat(
            [{"role": "user", "content": "Reply with the word OK."}],
            temperature=0.0,
            max_tokens=4,
            use_cache=False,
        )
    except Exception as exc:  # any failure of the server is the finding
        return Finding(
            "LLM server",
            "failed",
            f"{settings.llm_base_url}: {type(exc).__name__}",
            "check that the server runs and GROUNDWATCH_LLM_BASE_URL / _MODEL / _API_KEY",
        )
    finally:
        client.close()
    return Finding(
        "LLM server",
        "ok",
        f"{settings.llm_base_url}, model {reply.model or settings.llm_model}, answered in "
        f"{reply.latency_ms:.0f} ms",
    )


def _login(settings: Any) -> Finding:
    from core.auth import AuthConfigError, UserStore

    if settings.auth_file is None:
        return Finding(
            "login",
            "ok",
            "none configured: the dashboard listens on localhost only, as the local admin",
            "set GROUNDWATCH_AUTH_FILE (`groundwatch users add`) to serve other machines",
            configured=False,
        )
    try:
        users = UserStore(settings.auth_file).users()
    except AuthConfigError as exc:
        return Finding("login", "failed", str(exc), "fix the users file")
    roles = sorted({u.role for u in users})
    return Finding(
        "login",
        "ok",
        f"password login, {len(users)} user(s) ({', '.join(roles) or 'no roles'})",
    )


def _retention(settings: Any) -> Finding:
    if settings.retention_days is None:
        return Finding(
            "retention",
            "ok",
            "not set: record text is kept until `groundwatch purge --older-than DAYS` removes it",
            "set GROUNDWATCH_RETENTION_DAYS and schedule `groundwatch purge`",
            configured=False,
        )
    return Finding(
        "retention",
        "ok",
        f"{settings.retention_days} days (`groundwatch purge` removes older record text)",
    )


def _sample_rate(settings: Any) -> Finding:
    rate = float(settings.check_sample_rate)
    if rate >= 1.0:
        return Finding(
            "check sample rate",
            "ok",
            "every record is checked",
            "set GROUNDWATCH_CHECK_SAMPLE_RATE below 1 to check a share of records",
            configured=False,
        )
    return Finding(
        "check sample rate",
        "ok",
        f"{rate:.0%} of records are checked (the same ones every time); the others are stored "
        "with every check skipped",
    )


CHECKS = (_database, _embedder, _learned, _nli, _llm, _login, _retention, _sample_rate)


def diagnose(settings: Any) -> list[Finding]:
    """Every finding, in a fixed order; a check that raises is reported ``failed``."""
    out = []
    for check in CHECKS:
        try:
            out.append(check(settings))
        except Exception as exc:  # the doctor reports, it does not crash
            name = check.__name__.strip("_").replace("_", " ")
            out.append(Finding(name, "failed", f"check raised {type(exc).__name__}"))
    return out


def healthy(findings: list[Finding]) -> bool:
    """Whether everything that is configured works."""
    return all(f.state == "ok" for f in findings if f.configured)


__all__ = ["Finding", "diagnose", "healthy"]
