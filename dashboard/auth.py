"""The dashboard's login gate, the logged-in user, and what each role may open.

Three modes, chosen by configuration:

- ``oidc``: ``[auth]`` is configured in ``.streamlit/secrets.toml``; users log in with
  Streamlit's ``st.login`` and get the role the users file gives their e-mail address;
- ``password``: ``GROUNDWATCH_AUTH_FILE`` names a users file; a login form checks the bcrypt
  hash;
- ``none``: nothing configured; the app listens on localhost only (``groundwatch serve``),
  says so in a banner and treats the local user as an admin.

The router calls :func:`require_login` before anything else; every page also calls
:func:`guard` with its name, so a page run on its own refuses an anonymous user too.

Every audit event names who acted, from one place, :func:`actor` (see :func:`actor_for` for
the convention): the logged-in user's name, or without a login the local user's name with
the reviewer name typed in the sidebar, e.g. ``local-admin (Dr. Rivera)``.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, Literal

import streamlit as st

from core.auth import (
    ANONYMOUS,
    LOCAL_ADMIN,
    MAX_REVIEWER_CHARS,
    Action,
    AuthConfigError,
    User,
    UserStore,
    actor_for,
    clean_reviewer,
)
from core.auth import can as _can
from core.text import short_hash

log = logging.getLogger(__name__)

AuthMode = Literal["none", "password", "oidc"]

SESSION_KEY = "auth_user"
# the sidebar's "Reviewer name" field (shown only when no login is configured)
REVIEWER_KEY = "sidebar_reviewer"
NO_LOGIN_BANNER = "No login configured: listening on localhost only"

# What a user must be allowed to do to open each page (by url path).
PAGE_ACTIONS: dict[str, Action] = {
    "overview": "view_aggregates",
    "calibration": "view_aggregates",
    "upload": "upload",
    "review": "view_text",
    "report": "view_text",
    "patients": "view_text",
    "alerts": "view_text",
    "rescore": "view_aggregates",
    "admin": "view_audit",
}


def can(user: User | None, action: Action) -> bool:
    """Whether ``user`` may perform ``action`` (anonymous users may do nothing)."""
    return _can(user, action)


def can_open(user: User | None, page: str) -> bool:
    """Whether ``user`` may open the page with url path ``page`` (unknown pages: no)."""
    action = PAGE_ACTIONS.get(page)
    return action is not None and can(user, action)


def _oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file, or an unreadable one: not configured
        return False


def _auth_file() -> Path | None:
    from dashboard import data

    return data.settings().auth_file


def auth_mode() -> AuthMode:
    """How users log in, from the configuration."""
    if _oidc_configured():
        return "oidc"
    if _auth_file() is not None:
        return "password"
    return "none"


@st.cache_resource(show_spinner=False, max_entries=4)
def _load_store(path: str, mtime_ns: int, size: int) -> UserStore:
    return UserStore(path)


def user_store() -> UserStore:
    """The users file, re-read when it changes.

    Raises:
        AuthConfigError: the file is missing or invalid (message names file, user, field).
    """
    path = _auth_file()
    if path is None:
        raise AuthConfigError("no users file configured (GROUNDWATCH_AUTH_FILE)")
    try:
        stat = Path(path).stat()
    except OSError:
        raise AuthConfigError(f"users file not found: {path} (GROUNDWATCH_AUTH_FILE)") from None
    return _load_store(str(path), stat.st_mtime_ns, stat.st_size)


def current_user() -> User | None:
    """The logged-in user of this session (the local admin when no login is configured)."""
    mode = auth_mode()
    if mode == "none":
        return LOCAL_ADMIN
    raw = st.session_state.get(SESSION_KEY)
    if not isinstance(raw, dict):
        return None
    if mode == "oidc" and not _oidc_logged_in():
        return None
    if raw.get("source") != ("oidc" if mode == "oidc" else "password"):
        return None
    # Re-check against the users file: a removed, disabled or re-roled user loses access.
    try:
        store = user_store()
    except AuthConfigError:
        return None
    entry = store.get(str(raw.get("username", "")))
    if entry is None or entry.disabled:
        return None
    user = entry.user
    return User(user.username, user.role, user.email, user.display_name, raw["source"])


def _audit(
    actor: str,
    action: str,
    detail: dict[str, Any] | None = None,
    *,
    target_type: str = "user",
    target_id: str | None = None,
) -> None:
    from dashboard import data

    try:
        data.audit(
            actor=actor, action=action, target_type=target_type, target_id=target_id or actor
        )
    except Exception as exc:  # the login must not fail because the audit store is down
        log.warning("audit of %s not stored (%s)", action, type(exc).__name__)


def login_key(username: str) -> str:
    """The key failed logins are counted under: a hash of the typed name, known or not (so the
    lockout says nothing about which names exist, and no typed text is stored)."""
    return short_hash(username.strip().casefold())


def _locked_message(wait: float) -> str:
    return (
        "Too many failed attempts: this account is locked for "
        f"{math.ceil(wait / 60)} min (try again at the end of the lock)."
    )


def _login_form(store: UserStore) -> User | None:
    box = st.empty()
    with box.container():
        st.title("Groundwatch")
        st.caption("Log in to see how far the answers about your patients can be trusted.")
        with st.form("auth_login"):
            username = st.text_input("User name", key="auth_username")
            password = st.text_input("Password", type="password", key="auth_password")
            submitted = st.form_submit_button("Log in", type="primary")
        if not submitted:
            return None
        from dashboard import data

        key = login_key(username or "")
        wait = data.login_wait(key)
        if wait > 0:
            st.error(_locked_message(wait))
            return None
        user = store.authenticate(username or "", password or "")
        if user is None:
            known = store.get((username or "").strip()) is not None
            actor = (username or "").strip() if known else "unknown"
            try:
                wait = data.login_failed(key, actor)
            except Exception as exc:  # the refusal stands; only the count is lost
                log.warning("failed login not counted (%s)", type(exc).__name__)
            st.error(_locked_message(wait) if wait > 0 else "Wrong user name or password.")
            return None
    box.empty()  # the form disappears; the app is drawn in this same run
    st.session_state[SESSION_KEY] = user.to_dict()
    try:
        data.login_succeeded(key)
    except Exception as exc:
        log.warning("login count not reset (%s)", type(exc).__name__)
    _audit(user.username, "login", target_type="login", target_id=key)
    return user


def _oidc_logged_in() -> bool:
    try:
        return bool(st.user.is_logged_in)
    except Exception:
        return False


def _oidc_login() -> User | None:
    if not _oidc_logged_in():
        st.title("Groundwatch")
        st.caption("Log in with your organisation's account.")
        if st.button("Log in", key="auth_oidc_login", type="primary"):
            try:
                st.login()
            except Exception as exc:
                log.warning("OpenID Connect login unavailable (%s)", type(exc).__name__)
                st.error(
                    "OpenID Connect login is configured but cannot start "
                    f"({type(exc).__name__}); check [auth] in .streamlit/secrets.toml and "
                    "that Authlib is installed."
                )
        return None
    email = str(st.user.get("email") or "")
    try:
        store = user_store()
    except AuthConfigError:
        st.error(
            "Logged in, but no users file says which role you have "
            "(GROUNDWATCH_AUTH_FILE with your e-mail address)."
        )
        return None
    entry = store.find_by_email(email) if email else None
    if entry is None or entry.disabled:
        st.error("Your account is not allowed to use this dashboard. Ask an admin.")
        st.button("Log out", key="auth_oidc_refused_logout", on_click=st.logout)
        return None
    user = User(
        entry.user.username, entry.user.role, entry.user.email, entry.user.display_name, "oidc"
    )
    if st.session_state.get(SESSION_KEY, {}).get("username") != user.username:
        st.session_state[SESSION_KEY] = user.to_dict()
        _audit(user.username, "login")
    return user


def require_login() -> User | None:
    """Return the logged-in user, or draw the login and return None (caller stops).

    With no login configured, shows the localhost banner and returns the local admin. A
    broken users file refuses everyone (fails closed) with a message naming what is wrong.
    """
    mode = auth_mode()
    if mode == "none":
        st.info(NO_LOGIN_BANNER, icon=":material/lock_open:")
        return LOCAL_ADMIN
    user = current_user()
    if user is not None:
        return user
    st.session_state.pop(SESSION_KEY, None)
    if mode == "oidc":
        return _oidc_login()
    try:
        store = user_store()
    except AuthConfigError as exc:
        st.error(f"Login is configured but the users file cannot be used: {exc}")
        return None
    return _login_form(store)


def logout() -> None:
    """End this session's login (and the OIDC session when there is one)."""
    user = current_user()
    st.session_state.pop(SESSION_KEY, None)
    if user is not None and user.source != "local":
        _audit(user.username, "logout")
    if auth_mode() == "oidc" and _oidc_logged_in():
        st.logout()


def render_user_box(user: User) -> None:
    """Who is logged in, with their role and a log-out button (in the sidebar)."""
    with st.sidebar:
        st.caption(f"Signed in as **{user.username}** · {user.role}")
        if user.source != "local":
            st.button("Log out", key="auth_logout", on_click=logout)


def guard(page: str) -> User:
    """Stop the page unless the session's user may open it; return the user.

    Pages call this first, so that no page shows anything to an anonymous user or to a role
    it is not meant for, even when run without the router.
    """
    user = current_user()
    if user is None:
        st.error("Please log in to see this page.")
        st.stop()
    if not can_open(user, page):
        st.error(f"Your role ({user.role}) does not give access to this page.")
        st.stop()
    return user


def actor() -> str:
    """Who is acting in this session, as :func:`actor_for` names them: the identity every
    audit event of the dashboard carries (pages read it and hand it to ``dashboard.data``,
    which reads no session).

    It reads the session, so it must be called during the script run; code that runs later
    (a download button's data callable) takes the value read during the run.

    Raises:
        RuntimeError: called outside a script run (the session cannot be read).
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    if get_script_run_ctx(suppress_warning=True) is None:
        raise RuntimeError(
            "auth.actor() reads the session: call it during the script run and hand the value "
            "to callbacks that run later (download buttons)"
        )
    user = current_user()
    typed = st.session_state.get(REVIEWER_KEY) if user is not None else None
    return actor_for(user, str(typed or ""))


__all__ = [
    "ANONYMOUS",
    "MAX_REVIEWER_CHARS",
    "NO_LOGIN_BANNER",
    "PAGE_ACTIONS",
    "REVIEWER_KEY",
    "actor",
    "actor_for",
    "auth_mode",
    "can",
    "can_open",
    "clean_reviewer",
    "current_user",
    "guard",
    "logout",
    "render_user_box",
    "require_login",
    "user_store",
]
