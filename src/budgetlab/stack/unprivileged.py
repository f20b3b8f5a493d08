"""Run PostgreSQL as an unprivileged account when the workshop itself runs as root.

PostgreSQL refuses to start as root. Instead of creating a system user (which
pgserver would do with `useradd`) or loosening permissions on the user's
folders, the server runs as the existing `nobody` account, and its binaries
and data live in places that account can reach.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from budgetlab.errors import BudgetlabError

ACCOUNT = "nobody"


@dataclass(frozen=True)
class Account:
    """The operating-system account that runs PostgreSQL."""

    uid: int
    gid: int
    name: str
    home: str

    @property
    def is_current(self) -> bool:
        return self.uid == os.geteuid()

    def preexec(self):
        """Return a function for Popen that drops to this account, or None."""
        if self.is_current:
            return None

        def drop() -> None:
            os.setgroups([])
            os.setgid(self.gid)
            os.setuid(self.uid)
        return drop


def server_account() -> Account:
    """Return the account PostgreSQL runs as: the current one unless that is root."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return Account(entry.pw_uid, entry.pw_gid, entry.pw_name, entry.pw_dir)
    try:
        entry = pwd.getpwnam(ACCOUNT)
    except KeyError:
        raise BudgetlabError(
            f"running as root, but there is no '{ACCOUNT}' account to run PostgreSQL as; "
            "run the workshop as an ordinary user"
        ) from None
    return Account(entry.pw_uid, entry.pw_gid, entry.pw_name, "/tmp")


def reachable(path: Path, account: Account) -> bool:
    """Tell whether the account can traverse every folder down to path."""
    if account.is_current:
        return True
    for folder in [path, *path.parents]:
        if not folder.exists():
            continue
        mode = folder.stat()
        if mode.st_uid == account.uid:
            bit = stat.S_IXUSR
        elif mode.st_gid == account.gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not mode.st_mode & bit:
            return False
    return True


def outside_copy(label: str, path: Path) -> Path:
    """Return the folder under /tmp that stands in for `path` when the server's account cannot reach it."""
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    return Path("/tmp") / f"budgetlab-{label}-{digest}"


def reachable_home(preferred: Path, account: Account, label: str) -> Path:
    """Return preferred if the account can reach it, else a private folder under /tmp.

    The fallback is named after the checkout, so two checkouts never share data.
    """
    if reachable(preferred.parent, account):
        return preferred
    fallback = outside_copy(label, preferred)
    fallback.mkdir(mode=0o755, exist_ok=True)
    os.chmod(fallback, 0o755)
    return fallback / preferred.name


def outside_copies_of(state: Path, labels: str) -> list[Path]:
    """Return the folders under /tmp that stand in for folders of `state` whose names match the pattern `labels`."""
    found = []
    for folder in Path("/tmp").glob("budgetlab-*-*"):
        label, _, digest = folder.name.removeprefix("budgetlab-").rpartition("-")
        if re.fullmatch(labels, label) and outside_copy(label, state / label).name.endswith(digest):
            found.append(folder)
    return sorted(found)


def reachable_binaries(program, account: Account) -> tuple[Path, tuple[Path, ...]]:
    """Return a bin folder and library folders of the PostgreSQL `program` that the account can execute.

    A virtualenv inside a 0700 folder (a CI clone under a private temp dir)
    is out of the account's reach; a shared copy of the wheel's install
    under /tmp, keyed by its path, costs about 40 MB once. pgserver's
    binaries find their shared libraries through an RPATH of
    $ORIGIN/../../../pgserver.libs, so the copy keeps the wheel's layout:
    <copy>/<package>/pginstall beside <copy>/<package>.libs. An installed
    server's binaries find their share folder by a path relative to their
    own, which no copy keeps: out of reach, they are refused.
    """
    if reachable(program.path, account):
        return program.bin_dir, program.libraries
    install = program.bin_dir.parent
    if not program.source.endswith(" wheel"):
        raise BudgetlabError(f"PostgreSQL's binaries in {program.bin_dir} are out of reach of the '{account.name}' "
                             "account it runs as (running as root); run the workshop as an ordinary user")
    package = install.parent
    copy = outside_copy("pginstall", install)
    inside = copy / package.name / install.name

    def moved(folder: Path) -> Path:
        return inside / folder.relative_to(install) if folder.is_relative_to(install) else copy / folder.name

    marker = copy / ".complete"
    if not marker.exists():
        if copy.exists():
            shutil.rmtree(copy)
        partial = copy.with_name(copy.name + f".partial-{os.getpid()}")
        shutil.copytree(install, partial / package.name / install.name, symlinks=True)
        for folder in program.libraries:
            if not folder.is_relative_to(install):
                shutil.copytree(folder, partial / folder.name, symlinks=True)
        for folder in [partial, *[p for p in partial.rglob("*") if p.is_dir()]]:
            os.chmod(folder, 0o755)
        (partial / ".complete").write_text(str(install))
        os.replace(partial, copy)
    return inside / "bin", tuple(moved(folder) for folder in program.libraries)
