"""Users file, bcrypt passwords, role permissions, de-identification and `groundwatch users`."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import bcrypt
import pytest
import yaml
from typer.testing import CliRunner

from core.auth import (
    ACTIONS,
    LOCAL_ADMIN,
    AuthConfigError,
    PasswordPolicyError,
    User,
    UserStore,
    can,
    check_password,
    deidentify,
    hash_password,
    parse_users,
)
from core.cli import app
from core.config import reset_settings_cache

runner = CliRunner()
FAST = bcrypt.hashpw(b"correct horse", bcrypt.gensalt(rounds=4)).decode()


def users_file(tmp_path: Path, users: dict[str, object]) -> Path:
    path = tmp_path / "users.yaml"
    path.write_text(yaml.safe_dump({"users": users}), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- passwords


def test_hash_and_check_password() -> None:
    h = hash_password("correct horse", rounds=4)
    assert h.startswith("$2b$04$")
    assert "correct" not in h
    assert check_password("correct horse", h)
    assert not check_password("correct horsE", h)
    assert not check_password("", h)
    assert not check_password("correct horse", "not-a-hash")
    assert not check_password("x" * 73, h)


@pytest.mark.parametrize(
    ("password", "rule"),
    [("short", "at least 8"), ("é" * 40, "at most 72 bytes"), ("abcdefgh\x00", "NUL")],
)
def test_password_policy(password: str, rule: str) -> None:
    with pytest.raises(PasswordPolicyError, match=rule) as info:
        hash_password(password, rounds=4)
    assert password not in str(info.value)


# --------------------------------------------------------------------------- roles


def test_role_permissions() -> None:
    reviewer = User("r", "reviewer")
    analyst = User("a", "analyst")
    admin = User("x", "admin")
    assert can(reviewer, "view_text")
    assert can(reviewer, "give_verdict")
    assert not can(reviewer, "view_audit")
    assert not can(reviewer, "manage_users")
    assert can(analyst, "view_aggregates")
    for action in (
        "view_text",
        "give_verdict",
        "export_text",
        "view_audit",
        "manage_users",
        "store_record",
        "replace_record",
    ):
        assert not can(analyst, action)
    assert can(reviewer, "store_record")
    assert not can(reviewer, "replace_record")
    assert all(can(admin, a) for a in ACTIONS)
    assert all(not can(None, a) for a in ACTIONS)
    assert LOCAL_ADMIN.role == "admin"
    with pytest.raises(ValueError, match="unknown action"):
        can(admin, "delete_everything")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- users file


def test_an_unknown_user_costs_a_bcrypt_check_of_the_users_own_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No user names found by timing: the hash checked for an unknown name has the cost of
    the users' hashes (here 5), not a cheap one."""
    import core.auth as auth_module

    five = bcrypt.hashpw(b"correct horse", bcrypt.gensalt(rounds=5)).decode()
    store = UserStore(users_file(tmp_path, {"alice": {"role": "reviewer", "password": five}}))
    checked: list[str] = []
    real = auth_module.check_password

    def spy(password: str, password_hash: str) -> bool:
        checked.append(password_hash)
        return real(password, password_hash)

    monkeypatch.setattr(auth_module, "check_password", spy)
    assert store.authenticate("nobody", "correct horse") is None
    assert store.authenticate("alice", "wrong horse") is None
    assert [auth_module.bcrypt_cost(h) for h in checked] == [5, 5]


def test_load_and_authenticate(tmp_path: Path) -> None:
    path = users_file(
        tmp_path,
        {
            "alice": {"role": "reviewer", "password": FAST, "email": "alice@example.org"},
            "bob": {"role": "analyst", "password": FAST, "disabled": True},
            "carol": {"role": "admin", "email": "carol@example.org"},
        },
    )
    store = UserStore(path)
    assert [u.username for u in store.users()] == ["alice", "bob", "carol"]
    user = store.authenticate("alice", "correct horse")
    assert user == User("alice", "reviewer", "alice@example.org")
    assert store.authenticate(" alice ", "correct horse") == user
    assert store.authenticate("alice", "wrong horse") is None
    assert store.authenticate("nobody", "correct horse") is None
    assert store.authenticate("bob", "correct horse") is None  # disabled
    assert store.authenticate("carol", "") is None  # OIDC-only: no password login
    found = store.find_by_email("CAROL@example.org")
    assert found is not None
    assert found.user.role == "admin"


def test_streamlit_authenticator_layout_is_accepted() -> None:
    doc = {"credentials": {"usernames": {"dana": {"password": FAST, "roles": ["reviewer"]}}}}
    entries = parse_users(doc)
    assert entries["dana"].user.role == "reviewer"


@pytest.mark.parametrize(
    ("users", "message"),
    [
        ({"alice": {"role": "boss", "password": FAST}}, "users.alice.role: must be one of"),
        ({"alice": {"role": "reviewer", "password": "hunter22"}}, "alice.password: not a bcrypt"),
        ({"alice": {"role": "reviewer"}}, "alice: needs a password or an email"),
        ({"alice": "reviewer"}, "alice: expected a mapping"),
        ({"bad name!": {"role": "reviewer", "password": FAST}}, "invalid user name"),
        ({"alice": {"role": "reviewer", "password": FAST, "email": "nope"}}, "alice.email"),
        ({"alice": {"role": "reviewer", "password": FAST, "disabled": "yes"}}, "disabled"),
    ],
)
def test_invalid_users_file_names_user_and_field(
    tmp_path: Path, users: dict[str, object], message: str
) -> None:
    path = users_file(tmp_path, users)
    with pytest.raises(AuthConfigError, match="users.yaml") as info:
        UserStore(path)
    assert message in str(info.value)
    assert "hunter22" not in str(info.value)


def test_unreadable_users_files(tmp_path: Path) -> None:
    with pytest.raises(AuthConfigError, match="users file not found"):
        UserStore(tmp_path / "missing.yaml")
    assert UserStore(tmp_path / "missing.yaml", allow_missing=True).entries == {}
    bad = tmp_path / "bad.yaml"
    bad.write_text("users:\n  alice: {role: reviewer\n", encoding="utf-8")
    with pytest.raises(AuthConfigError, match=r"not valid YAML at line \d+"):
        UserStore(bad)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"users:\n  \xff\xfe: 1\n")
    with pytest.raises(AuthConfigError, match="invalid UTF-8 at byte 9"):
        UserStore(binary)
    listy = tmp_path / "list.yaml"
    listy.write_text("- alice\n", encoding="utf-8")
    with pytest.raises(AuthConfigError, match="expected a mapping"):
        UserStore(listy)
    assert parse_users(None) == {}


def test_save_roundtrip_is_private_and_hashed(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "users.yaml"
    store = UserStore(path, allow_missing=True)
    assert store.add("alice", role="reviewer", password="correct horse") is True
    assert store.add("alice", role="admin", password=None) is False  # keeps the hash
    store.save()
    text = path.read_text(encoding="utf-8")
    assert "correct horse" not in text
    assert "$2b$" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = UserStore(path)
    user = again.authenticate("alice", "correct horse")
    assert user is not None
    assert user.role == "admin"
    assert again.remove("alice")
    assert not again.remove("alice")
    with pytest.raises(AuthConfigError, match="user name"):
        again.add("../etc", role="reviewer", password="correct horse")


def test_authentication_logs_no_secret(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = users_file(tmp_path, {"alice": {"role": "reviewer", "password": FAST}})
    store = UserStore(path)
    caplog.set_level(logging.DEBUG)
    store.authenticate("alice", "SENTINEL-PASSWORD-1")
    store.authenticate("SENTINEL-NAME-2", "SENTINEL-PASSWORD-3")
    deidentify("Patient: SENTINEL Name seen 2024-01-02")
    text = caplog.text + " ".join(str(r.args) for r in caplog.records)
    assert "login refused" in text
    assert "SENTINEL" not in text


# --------------------------------------------------------------------------- de-identification


def test_deidentify_masks_identifiers_and_keeps_clinical_facts() -> None:
    text = (
        "Mrs. Jane Doe (MRN: 12345678, jane.doe@mail.com, 555-123-4567) was seen on "
        "2024-03-05 and on March 3, 2024 by Dr. Smith. Patient: John Smith. SSN 123-45-6789. "
        "Takes metformin 500 mg twice daily; BP 120/80; HbA1c 7.2%."
    )
    out = deidentify(text)
    for secret in (
        "Jane",
        "Doe",
        "12345678",
        "jane.doe",
        "555-123-4567",
        "2024-03-05",
        "March 3",
        "Smith",
        "John",
        "123-45-6789",
    ):
        assert secret not in out, secret
    for kept in ("metformin 500 mg twice daily", "BP 120/80", "HbA1c 7.2%", "Mrs.", "Dr."):
        assert kept in out, kept
    assert {"[NAME]", "[ID]", "[EMAIL]", "[PHONE]", "[DATE]"} <= {
        t for t in ("[NAME]", "[ID]", "[EMAIL]", "[PHONE]", "[DATE]") if t in out
    }
    assert deidentify("") == ""


# --------------------------------------------------------------------------- CLI


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_cli_users_add_list_remove(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "users.yaml"
    monkeypatch.setenv("GROUNDWATCH_AUTH_FILE", str(path))
    code, out, _ = invoke(
        "users",
        "add",
        "alice",
        "--role",
        "reviewer",
        "--password-stdin",
        "--json",
        stdin="correct horse\n",
    )
    assert code == 0, out
    assert json.loads(out)["status"] == "added"
    code, out, _ = invoke(
        "users",
        "add",
        "carol",
        "--role",
        "admin",
        "--no-password",
        "--email",
        "carol@example.org",
        "--json",
    )
    assert code == 0, out
    code, out, _ = invoke("users", "add", "alice", "--role", "analyst", "--no-password", "--json")
    assert json.loads(out)["status"] == "updated"
    code, out, _ = invoke("users", "list", "--json")
    assert code == 0
    listed = json.loads(out)["users"]
    assert [(u["username"], u["role"], u["password"]) for u in listed] == [
        ("alice", "analyst", True),
        ("carol", "admin", False),
    ]
    assert "$2b$" not in out
    user = UserStore(path).authenticate("alice", "correct horse")
    assert user is not None
    assert user.role == "analyst"
    code, out, _ = invoke("users", "remove", "carol", "--json")
    assert code == 0
    assert json.loads(out)["status"] == "removed"


def test_cli_users_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = invoke("users", "list", "--json")
    assert code == 1
    assert json.loads(out)["error"] == "usage"
    path = tmp_path / "users.yaml"
    monkeypatch.setenv("GROUNDWATCH_AUTH_FILE", str(path))
    reset_settings_cache()
    code, out, _ = invoke(
        "users",
        "add",
        "al",
        "--role",
        "boss",
        "--password-stdin",
        "--json",
        stdin="correct horse\n",
    )
    assert code == 1
    assert "--role must be one of" in json.loads(out)["message"]
    code, out, _ = invoke(
        "users", "add", "al", "--role", "reviewer", "--password-stdin", "--json", stdin="short\n"
    )
    assert code == 2
    assert "at least 8" in json.loads(out)["message"]
    assert "short" not in json.loads(out)["message"].replace("at least", "")
    code, out, _ = invoke("users", "add", "al", "--role", "reviewer", "--no-password", "--json")
    assert code == 1
    assert "needs a password" in json.loads(out)["message"]
    assert not path.exists()
    path.write_text("users: [", encoding="utf-8")
    code, out, _ = invoke("users", "list", "--json")
    assert code == 2
    assert json.loads(out)["error"] == "auth_config"
    code, out, err = invoke("users", "list")
    assert code == 2
    assert "Traceback" not in out + err
