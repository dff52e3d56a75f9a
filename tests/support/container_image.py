"""The tuner's container image as the tests use it: built by scripts/build_image.sh, unpacked from its OCI archive
as a runtime would (layers in order, whiteouts applied), and run as a container runtime runs it: the image's user,
environment, working directory and entry point, in a mount and PID namespace of its own, on its root filesystem
mounted read-only, with /tmp and /data writable (what the Helm chart mounts), /proc and /dev, and the host's
network. No container runtime here: `unshare` and `chroot` (util-linux, coreutils), as root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class BuiltImage:
    archive: Path
    digest: str  # what the build wrote beside the archive
    build_output: str


@dataclass(frozen=True)
class ImageConfig:
    """What of an OCI image's config a runtime acts on."""

    manifest_digest: str
    reference: str  # the archive's org.opencontainers.image.ref.name
    user: str
    entrypoint: tuple[str, ...]
    env: tuple[str, ...]
    working_dir: str
    layers: int


def build(out: Path, base_cache: Path, timeout_s: float = 1200) -> BuiltImage:
    """The image into `out`; its Debian base kept in `base_cache` for a day (the suite's runs share it)."""
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build_image.sh"), "--out", str(out),
                            "--base-cache", str(base_cache)], cwd=ROOT,
                           capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, f"scripts/build_image.sh exited {built.returncode}:\n{built.stderr[-4000:]}"
    (archive,) = out.glob("chronos-image-*.oci.tar")
    return BuiltImage(archive, archive.with_name(archive.name.replace(".oci.tar", ".digest")).read_text().strip(),
                      built.stdout)


def unpack(archive: Path, root: Path) -> ImageConfig:
    """The image's root filesystem under `root` (made here), from the archive's first manifest."""
    layout = root.with_name(root.name + "-layout")
    layout.mkdir()
    try:
        subprocess.run(["tar", "-xf", str(archive), "-C", str(layout)], check=True)
        index = json.loads((layout / "index.json").read_text())
        (entry,) = index["manifests"]
        manifest = json.loads(_blob(layout, entry["digest"]).read_text())
        config = json.loads(_blob(layout, manifest["config"]["digest"]).read_text())["config"]
        root.mkdir()
        for layer in manifest["layers"]:
            blob = _blob(layout, layer["digest"])
            _apply_whiteouts(blob, root)
            subprocess.run(["tar", "-xf", str(blob), "-C", str(root), "--numeric-owner", "--same-permissions",
                            "--exclude=.wh.*", "--exclude=*/.wh.*"], check=True)
        return ImageConfig(entry["digest"], entry.get("annotations", {}).get("org.opencontainers.image.ref.name", ""),
                           config.get("User", ""), tuple(config.get("Entrypoint") or ()), tuple(config.get("Env") or ()),
                           config.get("WorkingDir") or "/", len(manifest["layers"]))
    finally:
        shutil.rmtree(layout, ignore_errors=True)


def _blob(layout: Path, digest: str) -> Path:
    algorithm, value = digest.split(":", 1)
    return layout / "blobs" / algorithm / value


def _apply_whiteouts(layer: Path, root: Path) -> None:
    """A `.wh.NAME` entry deletes NAME of the layers below; `.wh..wh..opq` empties its directory (OCI image spec)."""
    with tarfile.open(layer) as tar:
        for name in tar.getnames():
            path = Path(name.removeprefix("./"))
            if not path.name.startswith(".wh."):
                continue
            parent = root / path.parent
            if path.name == ".wh..wh..opq":
                for child in parent.iterdir() if parent.is_dir() else ():
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            else:
                gone = parent / path.name.removeprefix(".wh.")
                if gone.is_dir() and not gone.is_symlink():
                    shutil.rmtree(gone)
                elif gone.exists() or gone.is_symlink():
                    gone.unlink()


# In the new mount namespace (private: nothing of it reaches the host's): the root filesystem read-only, the chart's
# writable volumes, /proc of the new PID namespace, /dev; then chroot as the image's user. Arguments, never text.
_CONTAINER = r'''
set -eu
root="$1"; user="$2"; workdir="$3"; shift 3
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mount -t tmpfs -o "mode=0770,uid=${user%%:*},gid=${user##*:}" tmpfs "$root/data"
exec chroot --userspec="$user" "$root" /usr/bin/env -i -C "$workdir" "$@"
'''


def prepare(root: Path) -> None:
    """What a runtime provides beside the image: the host's name resolution, and the mount points of the chart's
    volumes (a read-only root has none of its own)."""
    for name in ("hosts", "resolv.conf"):
        if Path("/etc", name).exists():
            shutil.copyfile(Path("/etc", name), root / "etc" / name)
    for point in ("proc", "dev", "tmp", "data"):
        (root / point).mkdir(exist_ok=True)


def run_in(root: Path, config: ImageConfig, *args: str, entrypoint: tuple[str, ...] | None = None,
           timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """`args` to the image's entry point (or to `entrypoint`), as the image's user, with its environment."""
    command = ["unshare", "--mount", "--pid", "--fork", "--kill-child", "sh", "-c", _CONTAINER, "container",
               str(root), config.user, config.working_dir, *config.env, *(entrypoint or config.entrypoint), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})


def can_run_images() -> str | None:
    """Why images cannot be built and run here, or None."""
    if os.geteuid() != 0:
        return "building and running the image needs root here (mmdebstrap, buildah's chroot build, unshare)"
    missing = [tool for tool in ("mmdebstrap", "buildah", "unshare", "chroot") if shutil.which(tool) is None]
    return f"not installed: {', '.join(missing)} (bash scripts/setup.sh installs them)" if missing else None
