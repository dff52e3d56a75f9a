"""The image tests unpack an OCI archive as a runtime would (tests.support.container_image): layers in order, a
`.wh.NAME` entry deleting NAME of the layers below (at the root too), `.wh..wh..opq` emptying its directory, and
the config a runtime acts on read back."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from tests.support.container_image import unpack


def tar_of(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def oci_archive(path: Path, layers: list[bytes], config: dict[str, object]) -> None:
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return digest

    manifest = json.dumps({"config": {"digest": blob(json.dumps({"config": config}).encode())},
                           "layers": [{"digest": blob(layer)} for layer in layers]}).encode()
    index = {"manifests": [{"digest": blob(manifest),
                            "annotations": {"org.opencontainers.image.ref.name": "example/chronos:1"}}]}
    with tarfile.open(path, "w") as tar:
        for name, data in [("oci-layout", b'{"imageLayoutVersion": "1.0.0"}'),
                           ("index.json", json.dumps(index).encode()),
                           *((f"blobs/sha256/{d.split(':')[1]}", b) for d, b in blobs.items())]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_layers_apply_in_order_with_their_whiteouts_and_the_config_is_read(tmp_path: Path) -> None:
    archive = tmp_path / "image.oci.tar"
    oci_archive(archive, [
        tar_of({"./a": b"1", "./keep": b"2", "./d/x": b"3", "./d/y": b"4", "./e/old": b"5"}),
        tar_of({"./.wh.a": b"", "./d/.wh..wh..opq": b"", "./d/z": b"6", "./e/.wh.old": b"", "./e/new": b"7"}),
    ], {"User": "10001:10001", "Entrypoint": ["/bin/chronos"], "Env": ["HOME=/tmp"], "WorkingDir": "/tmp"})
    root = tmp_path / "rootfs"
    config = unpack(archive, root)
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == ["d/z", "e/new", "keep"]
    assert config.user == "10001:10001" and config.entrypoint == ("/bin/chronos",) and config.layers == 2
    assert config.env == ("HOME=/tmp",) and config.working_dir == "/tmp"
    assert config.reference == "example/chronos:1" and config.manifest_digest.startswith("sha256:")
    assert not (tmp_path / "rootfs-layout").exists(), "the layout is removed once unpacked"
