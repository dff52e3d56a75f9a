"""The tuner's container image, measured: how long scripts/build_image.sh takes, how big the archive and the root
filesystem are (and what of it is chronos's venv), and how long chronos takes to start inside it, run as a runtime
runs it (the image's user, a read-only root: tests.support.container_image), `--version` and `tune --help`.

    .venv/bin/python bench/image.py [--archive dist/chronos-image-0.1.0.oci.tar] [--runs 10]

As root (the build and the namespaces need it). Writes bench/results/image.json."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]


def megabytes(path: Path) -> float:
    done = subprocess.run(["du", "-sb", "--apparent-size", str(path)], capture_output=True, text=True, check=True)
    return round(int(done.stdout.split()[0]) / 1e6, 1)


def timed(runs: int, command: Any) -> dict[str, float]:
    took = []
    for _ in range(runs):
        began = time.monotonic()
        done = command()
        took.append(time.monotonic() - began)
        assert done.returncode == 0, done.stderr
    return {"first_s": round(took[0], 3), "median_s": round(statistics.median(took), 3), "max_s": round(max(took), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", type=Path, help="an image built before (default: build one now)")
    parser.add_argument("--runs", type=int, default=10, help="start-ups timed per command")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))  # the suite's way of running the image: one definition, test and bench
    from tests.support.container_image import prepare, run_in, unpack

    console = Console(stderr=True)
    work = Path(tempfile.mkdtemp(prefix="chronos-image-bench-"))
    try:
        result: dict[str, Any] = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        archive = args.archive
        if archive is None:
            began = time.monotonic()
            subprocess.run(["bash", str(ROOT / "scripts" / "build_image.sh"), "--out", str(work / "out")], check=True)
            result["build_s"] = round(time.monotonic() - began, 1)
            (archive,) = (work / "out").glob("*.oci.tar")
        root = work / "rootfs"
        config = unpack(archive, root)
        prepare(root)
        result["archive_mb"] = megabytes(archive)
        result["root_filesystem_mb"] = megabytes(root)
        result["chronos_venv_mb"] = megabytes(root / "opt" / "chronos")
        result["layers"] = config.layers
        result["version"] = timed(args.runs, lambda: run_in(root, config, "--version"))
        result["tune_help"] = timed(args.runs, lambda: run_in(root, config, "tune", "--help"))
        result["host_version"] = timed(args.runs, lambda: subprocess.run(
            [str(ROOT / ".venv" / "bin" / "chronos"), "--version"], capture_output=True, text=True))
        console.print_json(json.dumps(result))
        out = ROOT / "bench" / "results" / "image.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        console.print(f"written: {out}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
