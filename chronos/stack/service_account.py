"""Who runs the local stack's services (Kafka, Flink, Prometheus), with what environment, and where their
files live.

Their APIs are unauthenticated: whoever reaches them (any local user, on loopback) can make Flink run
code. So run as root, chronos does not run them as root: they run as a dedicated system user (`chronos`,
created by scripts/setup.sh; `CHRONOS_SERVICE_USER` names another), in a directory that user owns
(`/var/lib/chronos-stacks/<name>-<hash>`), below a root that only root can change (not the user's home: whoever
owns a directory can replace what is in it). Root writes into that directory only through
chronos.stack.service_tree (no link followed, files made anew). The stack directory keeps what chronos itself reads
and acts on (state, job records, helper records) and stays root's, and so do the stack's credentials, in a folder
beside the services' that their user may read but not change: nothing running as the service user can write a file
chronos-as-root later trusts, or reads. Run as any other user, the services run as that user, in the stack
directory, as they always did.

Services get an allow-listed environment: PyFlink logs the whole environment of every Python process it
starts, and a shell's tokens and keys have no business in a Flink log.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pwd
import re
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronos.errors import StackError
from chronos.flink.submit import JobSubmitter
from chronos.model import CheckpointSettings, JobSpec, RunAs
from chronos.stack.service_tree import ServiceTree

SERVICE_USER_ENV = "CHRONOS_SERVICE_USER"
DEFAULT_SERVICE_USER = "chronos"
SERVICES_ROOT = Path("/var/lib/chronos-stacks")
# What a service may inherit from chronos's environment; everything else (tokens, keys, proxies with
# credentials) stays out of the services and their logs.
INHERITED_ENV = ("PATH", "JAVA_HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
CREATE_USER = (f"useradd --system --user-group --home-dir /var/lib/chronos --create-home "
               f"--shell /usr/sbin/nologin {DEFAULT_SERVICE_USER}")


@dataclass(frozen=True)
class ServiceAccount:
    name: str
    uid: int
    gid: int
    home: Path
    separate: bool  # True: not the user chronos runs as (root handing its services to a system user)

    def run_as(self) -> RunAs:
        """How to start a service as this account, with the allow-listed environment."""
        env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
        env.update({"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name})
        return RunAs(self.uid if self.separate else None, self.gid if self.separate else None, tuple(sorted(env.items())))

    def popen_kwargs(self) -> dict[str, Any]:
        return self.run_as().popen_kwargs()

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The allow-listed environment of a service, with `extra` on top."""
        return {**dict(self.run_as().env), **(extra or {})}

    def tree(self, services_dir: Path) -> ServiceTree:
        """The services directory as chronos writes into it (chronos.stack.service_tree): below SERVICES_ROOT for a
        separate account (refused elsewhere), the stack directory itself otherwise."""
        if not self.separate:
            return ServiceTree(services_dir, services_dir)
        if services_dir.parent != SERVICES_ROOT or services_dir.name in ("", ".", ".."):
            raise StackError(f"the services of user {self.name!r} live below {SERVICES_ROOT}, not in {services_dir}")
        return ServiceTree(SERVICES_ROOT, services_dir, self.uid, self.gid)

    def can(self, test: str, path: Path) -> bool:
        """Whether this account passes `test -r|-x|-w path` (asked as the account itself, so every
        directory on the way counts)."""
        if not self.separate:
            return os.access(path, {"-r": os.R_OK, "-x": os.X_OK, "-w": os.W_OK}[test])
        done = subprocess.run(["test", test, str(path)], check=False, timeout=10, **self.popen_kwargs())
        return done.returncode == 0

    def require_readable(self, paths: Sequence[Path], hint: str) -> None:
        """Refuse, in one line, a file or directory the services need but cannot read."""
        for path in paths:
            if not self.can("-r", path) or (path.is_dir() and not self.can("-x", path)):
                raise StackError(f"the stack's services run as user {self.name!r}, who cannot read {path}; {hint}")

    def services_dir(self, stack_dir: Path) -> Path:
        """Where the services of the stack in `stack_dir` keep their files (configs, logs, data,
        checkpoints): the stack directory itself, or (as root) a directory of the service account's."""
        return services_dir_for(stack_dir, self.separate)

    def prepare(self, directory: Path) -> Path:
        """Create `directory` (mode 0700) for the services, this account's; one that is there must be a directory
        (not a link) of this account's or chronos's, or nothing is done in it."""
        return self.tree(directory).directory(directory, 0o700)



def services_dir_for(stack_dir: Path, separate: bool) -> Path:
    """The one place the services of the stack in `stack_dir` can live: the stack directory, or (services run
    by a separate user) a directory under SERVICES_ROOT named after the stack directory's resolved path. A
    state file that names another place is not believed (chronos.stack.state)."""
    if not separate:
        return stack_dir
    resolved = stack_dir.resolve()
    slug = re.sub(r"[^A-Za-z0-9._-]", "-", resolved.name)[:40] or "stack"
    return SERVICES_ROOT / f"{slug}-{hashlib.sha256(str(resolved).encode()).hexdigest()[:12]}"


def service_account(name: str | None = None) -> ServiceAccount:
    """The account the stack's services run as: chronos's own user, or, when chronos runs as root, the
    dedicated system user (refused in one line if it does not exist or is root itself)."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid())
        return ServiceAccount(me.pw_name, me.pw_uid, me.pw_gid, Path(me.pw_dir), separate=False)
    wanted = name or os.environ.get(SERVICE_USER_ENV) or DEFAULT_SERVICE_USER
    try:
        entry = pwd.getpwnam(wanted)
    except KeyError:
        raise StackError(f"chronos runs as root, so the stack's services run as the system user {wanted!r}, which "
                         f"does not exist: run scripts/setup.sh, or create it: {CREATE_USER}") from None
    if entry.pw_uid == 0:
        raise StackError(f"{SERVICE_USER_ENV}={wanted!r} is root: the stack's services never run as root")
    return ServiceAccount(entry.pw_name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), separate=True)


def account_of(services_dir: Path) -> ServiceAccount:
    """The account a running stack's services run as: the owner of their directory. A replacement
    process (a TaskManager after a kill, a restarted broker) is started as the same account; never root's for a
    stack whose services live below SERVICES_ROOT, and never read through a link."""
    try:
        info = os.lstat(services_dir)
    except OSError as exc:
        raise StackError(f"the stack's services directory {services_dir} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise StackError(f"the stack's services directory {services_dir} is not a directory chronos made (a link?); "
                         "nothing is started as its owner")
    try:
        owner = pwd.getpwuid(info.st_uid)
    except KeyError:
        raise StackError(f"the stack's services directory {services_dir} belongs to uid {info.st_uid}, no user of "
                         "this machine") from None
    me = os.geteuid()
    if owner.pw_uid == 0 and services_dir.parent == SERVICES_ROOT:
        raise StackError(f"the stack's services directory {services_dir} belongs to root: the services never run as "
                         "root")
    if owner.pw_uid == me:
        return ServiceAccount(owner.pw_name, owner.pw_uid, owner.pw_gid, Path(owner.pw_dir), separate=False)
    if me != 0:
        raise StackError(f"the stack's services run as user {owner.pw_name!r}; chronos runs as another user and "
                         "cannot start processes for them")
    return ServiceAccount(owner.pw_name, owner.pw_uid, owner.pw_gid, Path(owner.pw_dir), separate=True)


def remove_services_dir(directory: Path, stack_dir: Path) -> None:
    """Delete a services directory kept apart from its stack directory (`stack down --purge`), and its credentials'
    folder; a services directory that is the stack directory itself is left to its owner. Only an entry of
    SERVICES_ROOT (callers pass one computed from the stack directory, never one a file named), removed through the
    no-follow walk: a link in its place is removed as the link, nothing it names."""
    if directory.parent != SERVICES_ROOT or directory == stack_dir or directory.name in ("", ".", ".."):
        return
    root = ServiceTree(SERVICES_ROOT, SERVICES_ROOT)
    for entry in (directory, credentials_dir_for(directory)):
        with contextlib.suppress(FileNotFoundError, StackError):
            root.remove(entry)


def credentials_dir_for(services_dir: Path) -> Path:
    """Where a stack's generated credentials live: beside its services directory below SERVICES_ROOT (root's, the
    services' user may read them: nothing root reads back lies in a folder that user could change), else in it."""
    if services_dir.parent == SERVICES_ROOT:
        return SERVICES_ROOT / f"{services_dir.name}.credentials"
    return services_dir / "credentials"


class ReadableFirst:
    """Submission to a stack whose services run as another user: a program file that user cannot read
    fails inside Flink as "Could not execute application"; here it is one line naming the file."""

    def __init__(self, inner: JobSubmitter, account: ServiceAccount) -> None:
        self._inner, self._account = inner, account

    def submit(self, spec: JobSpec, settings: CheckpointSettings, savepoint: str | None = None) -> str:
        files = [spec.python_file] if spec.python_file else []
        files += [spec.args[i + 1] for i, arg in enumerate(spec.args[:-1]) if arg == "--sql"]
        self._account.require_readable([Path(f) for f in files], "put the job's files where that user can read them")
        return self._inner.submit(spec, settings, savepoint)
