"""Root writing into a directory the stacks' service user owns: whatever that user planted there (a link to a victim's
file or directory, a hard link, a directory of a third user, the services directory made a link itself), nothing
outside the tree is written, chmodded, chowned, read or removed, and what chronos writes is the service user's.
The attacks are staged as root (the test needs it to own files as another user) and read as that user would stage
them: `nobody` is the services' user and `daemon` a third one."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from chronos.errors import StackError
from chronos.stack.service_tree import ServiceTree

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: files owned by the services' user")


@pytest.fixture()
def world(tmp_path: Path) -> tuple[ServiceTree, Path, Path]:
    """(the tree as root writes it for `nobody`, its top, a victim folder of root's with a file)."""
    anchor = tmp_path / "stacks"
    anchor.mkdir(mode=0o755)
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    (victim / "shadow").write_text("root's secret\n")
    (victim / "shadow").chmod(0o600)
    nobody = pwd.getpwnam("nobody")
    tree = ServiceTree(anchor, anchor / "stack-1", nobody.pw_uid, nobody.pw_gid)
    tree.directory(tree.top)
    return tree, tree.top, victim


def untouched(victim: Path) -> None:
    for path in (victim, victim / "shadow"):
        info = os.lstat(path)
        assert info.st_uid == 0, f"{path} was handed to uid {info.st_uid}"
    assert oct(os.lstat(victim).st_mode & 0o777) == oct(0o755), "the victim folder's mode changed"
    assert oct(os.lstat(victim / "shadow").st_mode & 0o777) == oct(0o600)
    assert (victim / "shadow").read_text() == "root's secret\n"
    assert sorted(p.name for p in victim.iterdir()) == ["shadow"], "something was made in the victim folder"


def as_service_user(path: Path) -> None:
    os.lchown(path, pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid)


def test_what_root_writes_is_the_service_users_and_private(world: tuple[ServiceTree, Path, Path]) -> None:
    tree, top, _ = world
    config = tree.write(top / "flink" / "conf" / "config.yaml", "a: 1\n")
    nobody = pwd.getpwnam("nobody").pw_uid
    for path in (top, top / "flink", top / "flink" / "conf", config):
        assert os.lstat(path).st_uid == nobody, path
    assert os.lstat(config).st_mode & 0o777 == 0o600 and config.read_text() == "a: 1\n"
    tree.link(top / "flink" / "lib" / "a.jar", Path("/usr/share/java/a.jar"))
    assert os.readlink(top / "flink" / "lib" / "a.jar") == "/usr/share/java/a.jar"
    assert os.lstat(top / "flink" / "lib" / "a.jar").st_uid == nobody


def test_the_services_directory_made_a_link_is_refused_and_nothing_is_done_through_it(
        world: tuple[ServiceTree, Path, Path]) -> None:
    tree, top, victim = world
    os.rename(top, top.with_name("moved"))
    top.symlink_to(victim)
    for act in (lambda: tree.directory(top), lambda: tree.write(top / "x", "x"), lambda: tree.append(top / "log"),
                lambda: tree.link(top / "l", Path("/etc")), lambda: tree.directory(top / "flink"),
                lambda: tree.remove(top / "shadow")):
        with pytest.raises(StackError, match="is a symlink, not a directory chronos made"):
            act()
    assert tree.read(top / "shadow") is None, "nothing is read through the link either"
    untouched(victim)


def test_a_directory_inside_made_a_link_is_refused(world: tuple[ServiceTree, Path, Path]) -> None:
    tree, top, victim = world
    (top / "flink").symlink_to(victim)
    as_service_user(top / "flink")
    with pytest.raises(StackError, match=r"flink \(in the stack's services directory .*\) is a symlink"):
        tree.write(top / "flink" / "conf" / "config.yaml", "a: 1\n")
    assert tree.names(top / "flink") == [] and not tree.exists(top / "flink" / "shadow")
    untouched(victim)


def test_a_file_made_a_link_or_a_hard_link_is_replaced_not_written_through(world: tuple[ServiceTree, Path, Path]) -> None:
    tree, top, victim = world
    (top / "conf").mkdir()
    as_service_user(top / "conf")
    (top / "conf" / "config.yaml").symlink_to(victim / "shadow")
    os.link(victim / "shadow", top / "conf" / "server.properties")  # as fs.protected_hardlinks=0 would let it
    tree.write(top / "conf" / "config.yaml", "a: 1\n")
    tree.write(top / "conf" / "server.properties", "b: 2\n")
    assert not (top / "conf" / "config.yaml").is_symlink() and (top / "conf" / "config.yaml").read_text() == "a: 1\n"
    assert (top / "conf" / "server.properties").read_text() == "b: 2\n"
    assert os.stat(victim / "shadow").st_nlink == 1, "the hard link was removed, not written through"
    untouched(victim)


def test_a_log_file_made_a_link_is_replaced_and_appended_only_when_it_is_a_plain_file(
        world: tuple[ServiceTree, Path, Path]) -> None:
    tree, top, victim = world
    (top / "stdout.log").symlink_to(victim / "shadow")
    fd = tree.append(top / "stdout.log")
    os.write(fd, b"started\n")
    os.close(fd)
    fd = tree.append(top / "stdout.log")
    os.write(fd, b"again\n")
    os.close(fd)
    assert (top / "stdout.log").read_text() == "started\nagain\n"
    untouched(victim)


def test_removing_a_tree_removes_the_links_in_it_not_what_they_name(world: tuple[ServiceTree, Path, Path]) -> None:
    tree, top, victim = world
    lib = tree.directory(top / "flink" / "lib")
    (lib / "victim").symlink_to(victim)
    (lib / "shadow").symlink_to(victim / "shadow")
    tree.remove(top / "flink")
    assert not (top / "flink").exists()
    untouched(victim)


def test_what_is_read_back_is_a_plain_file_with_one_name(world: tuple[ServiceTree, Path, Path]) -> None:
    tree, top, victim = world
    pid = tree.write(top / "pid" / "flink.pid", "4242\n")
    assert tree.read(pid) == b"4242\n"
    (top / "pid" / "link.pid").symlink_to(victim / "shadow")
    os.link(victim / "shadow", top / "pid" / "hard.pid")
    assert tree.read(top / "pid" / "link.pid") is None and tree.read(top / "pid" / "hard.pid") is None
    os.unlink(top / "pid" / "hard.pid")
    untouched(victim)


def test_a_directory_of_a_third_user_is_refused(world: tuple[ServiceTree, Path, Path]) -> None:
    tree, top, _ = world
    (top / "kafka").mkdir()
    daemon = pwd.getpwnam("daemon")
    os.chown(top / "kafka", daemon.pw_uid, daemon.pw_gid)
    with pytest.raises(StackError, match=f"belongs to uid {daemon.pw_uid}, neither chronos's nor the services' user"):
        tree.write(top / "kafka" / "server.properties", "x")


def test_a_root_someone_else_could_change_is_not_trusted(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # world-writable, not sticky: anyone could swap what lies below it
    tree = ServiceTree(shared / "stacks", shared / "stacks" / "s", 65534, 65534)
    with pytest.raises(StackError, match="is not trusted"):
        tree.directory(tree.top)
