"""What chronos writes for the stack's services, into the directory their user owns, reached the way root must reach
into a directory someone else controls.

Why: run as root, chronos writes the services' configs, log files and library links into a directory the service
user owns (the services write their data and logs there), and that user (anyone who runs code through Flink's REST
API) can put a symlink anywhere in it, or make a directory of it a link: a write, chmod or chown that follows one lands
on what it names (`/etc/shadow` handed to the service user). So every path below the services directory is reached
by a walk of `openat`s from a directory only root can change (the services root, itself checked from `/`), one
component at a time, never following a link (O_NOFOLLOW); a file is written by removing whatever is there and
creating it anew (O_EXCL: never through a link, or a hard link, left in its place), and handed to the service user by
`fchown` on what was opened; a directory in the way that is a link, not a directory, or another user's, is refused in
one line and nothing is written. What chronos reads back from there (a pid file Flink wrote) is read the same way: a
regular file, not a link, with one name. Run as the services' own user (no root), the walk starts at the stack
directory and nothing changes hands, the same code.

Hand-written over `os`'s dir_fd functions: no library on the registries does a no-follow walk.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from chronos.errors import StackError

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class NotWhatChronosMade(StackError):
    """A path in the services directory that chronos did not make as it is (a link, another user's file)."""


@dataclass(frozen=True)
class ServiceTree:
    """The services directory `top`, below `anchor` (a directory only chronos's own user can change), written for
    the account `uid`:`gid` (None: chronos's own user, nothing changes hands)."""

    anchor: Path
    top: Path
    uid: int | None = None
    gid: int | None = None

    def _parts(self, path: Path) -> list[str]:
        parts = path.relative_to(self.top).parts if path != self.top else ()
        if any(part in ("", ".", "..") for part in parts):
            raise NotWhatChronosMade(f"{path} is not a plain path below {self.top}")
        return list(parts)

    # -- the walk ---------------------------------------------------------------------------------------------
    @contextmanager
    def _top_fd(self, create: bool) -> Iterator[int]:
        anchor = _walk_checked(self.anchor, create)
        try:
            name = self.top.relative_to(self.anchor).parts
            fd = anchor
            for index, part in enumerate(name):
                child = self._child(fd, part, Path(self.anchor, *name[:index + 1]), create, mode=0o700)
                if fd != anchor:
                    os.close(fd)
                fd = child
            try:
                yield fd
            finally:
                if fd != anchor:
                    os.close(fd)
        finally:
            os.close(anchor)

    @contextmanager
    def _dir_fd(self, directory: Path, create: bool) -> Iterator[int]:
        """An open directory `directory` (below or at the top), every component opened without following a link."""
        parts = self._parts(directory)
        with self._top_fd(create) as top:
            fd = os.dup(top)
            try:
                for index, part in enumerate(parts):
                    child = self._child(fd, part, Path(self.top, *parts[:index + 1]), create)
                    os.close(fd)
                    fd = child
                yield fd
            finally:
                os.close(fd)

    def _child(self, parent: int, name: str, shown: Path, create: bool, mode: int = 0o700) -> int:
        try:
            return self._opened(os.open(name, _DIRECTORY, dir_fd=parent), shown)
        except FileNotFoundError:
            if not create:
                raise
        except OSError:  # ELOOP: a symlink; ENOTDIR: a file where a directory goes
            raise NotWhatChronosMade(f"{self._where(shown)} is {_what(parent, name)}, not a directory chronos made; "
                                     "nothing is written through it") from None
        with contextlib.suppress(FileExistsError):  # made meanwhile: opened below, and checked as any other
            os.mkdir(name, mode, dir_fd=parent)
        fd = self._opened(os.open(name, _DIRECTORY, dir_fd=parent), shown)
        self._hand_over(fd)
        os.fchmod(fd, mode)
        return fd

    def _opened(self, fd: int, shown: Path) -> int:
        info = os.fstat(fd)
        if info.st_uid not in {os.geteuid(), *(() if self.uid is None else (self.uid,))}:
            os.close(fd)
            raise NotWhatChronosMade(f"{self._where(shown)} belongs to uid {info.st_uid}, neither chronos's nor the "
                                     "services' user; nothing is written there")
        return fd

    def _where(self, shown: Path) -> str:
        return (f"the stack's services directory {shown}" if shown == self.top
                else f"{shown} (in the stack's services directory {self.top})")

    def _hand_over(self, fd: int) -> None:
        if self.uid is not None and self.gid is not None:
            os.fchown(fd, self.uid, self.gid)

    # -- what callers do ----------------------------------------------------------------------------------------
    def directory(self, path: Path, mode: int = 0o700) -> Path:
        """`path` made (with its parents) for the services, if it is not there."""
        with self._dir_fd(path, create=True) as fd:
            os.fchmod(fd, mode)
        return path

    def write(self, path: Path, data: bytes | str, mode: int = 0o600) -> Path:
        """`path` written anew with `data`, the services' user's (what was there is removed first, not written
        through)."""
        with self._dir_fd(path.parent, create=True) as parent:
            _remove_entry(parent, path.name, path)
            fd = os.open(path.name, _NEW_FILE, mode, dir_fd=parent)
            try:
                self._hand_over(fd)
                os.fchmod(fd, mode)
                view = memoryview(data.encode() if isinstance(data, str) else data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        return path

    def append(self, path: Path) -> int:
        """A file descriptor appending to the log file `path` (a child process's output): the file that is there if
        it is a plain file of the services' or chronos's, with one name, else a new one in its place."""
        with self._dir_fd(path.parent, create=True) as parent:
            try:
                fd = os.open(path.name, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=parent)
            except FileNotFoundError:
                fd = -1
            except OSError:  # a link, a FIFO without a reader, a directory
                _remove_entry(parent, path.name, path)
                fd = -1
            if fd >= 0:
                info = os.fstat(fd)
                if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_uid in {os.geteuid(), self.uid}:
                    os.set_blocking(fd, True)
                    return fd
                os.close(fd)
                _remove_entry(parent, path.name, path)
            fd = os.open(path.name, _NEW_FILE | os.O_APPEND, 0o600, dir_fd=parent)
            self._hand_over(fd)
            return fd

    def link(self, path: Path, target: Path) -> None:
        """A symlink `path` -> `target` (a jar of the distribution), made anew."""
        with self._dir_fd(path.parent, create=True) as parent:
            _remove_entry(parent, path.name, path)
            os.symlink(target, path.name, dir_fd=parent)
            if self.uid is not None and self.gid is not None:
                os.chown(path.name, self.uid, self.gid, dir_fd=parent, follow_symlinks=False)

    def remove(self, path: Path) -> None:
        """`path` (a file, a link, or a directory and all below it) gone, nothing outside it touched."""
        try:
            with self._dir_fd(path.parent, create=False) as parent:
                _remove_entry(parent, path.name, path)
        except FileNotFoundError:
            return

    def read(self, path: Path, max_bytes: int = 64 << 10) -> bytes | None:
        """What the services wrote at `path` (a pid file): None unless it is a regular file there, not a link, with
        one name; at most `max_bytes`."""
        try:
            with self._dir_fd(path.parent, create=False) as parent:
                fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
        except (FileNotFoundError, NotWhatChronosMade, OSError):
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                return None
            return os.read(fd, max_bytes)
        finally:
            os.close(fd)

    def names(self, directory: Path) -> list[str]:
        """The entries of `directory` (none if it is not there, or not one chronos made)."""
        try:
            with self._dir_fd(directory, create=False) as fd:
                return sorted(os.listdir(fd))
        except (FileNotFoundError, NotWhatChronosMade):
            return []

    def exists(self, path: Path) -> bool:
        try:
            with self._dir_fd(path.parent, create=False) as parent:
                os.stat(path.name, dir_fd=parent, follow_symlinks=False)
                return True
        except (FileNotFoundError, NotWhatChronosMade, NotADirectoryError):
            return False


def _remove_entry(parent: int, name: str, shown: Path) -> None:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=parent)  # fd-based on Linux: it follows no link below
    else:
        os.unlink(name, dir_fd=parent)


def _what(parent: int, name: str) -> str:
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except OSError:
        return "not a directory"
    return "a symlink" if stat.S_ISLNK(mode) else "not a directory"


def _walk_checked(anchor: Path, create: bool) -> int:
    """`anchor` opened from `/`, each directory on the way not a link, owned by root or chronos's user, and
    writable by no one else (a sticky one, as /tmp, excepted; a group counts as no one else if chronos's user is in
    it, as chronos.input_files.require_private counts it): who could change one could swap what lies below it."""
    me, ours = os.geteuid(), {os.getegid(), *os.getgroups()}
    fd = os.open("/", _DIRECTORY)
    try:
        for index, part in enumerate(anchor.parts[1:]):
            shown = Path(*anchor.parts[:index + 2])
            try:
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            except OSError as exc:
                raise NotWhatChronosMade(f"{shown} is {_what(fd, part)}, not a directory chronos can trust "
                                         f"({exc.strerror})") from None
            os.close(fd)
            fd = child
            info = os.fstat(fd)
            writable = info.st_mode & 0o002 or (info.st_mode & 0o020 and info.st_gid not in ours)
            others = writable and not info.st_mode & stat.S_ISVTX
            if info.st_uid not in (0, me) or others:
                raise NotWhatChronosMade(f"{shown} is not trusted: it belongs to uid {info.st_uid} (mode "
                                         f"{stat.S_IMODE(info.st_mode):o}); another user could swap what lies below it")
        return fd
    except BaseException:
        os.close(fd)
        raise
