"""scripts/setup.sh installs system packages with apt; a newcomer should see what is installed, not apt's progress
and debconf's notes, yet see all of apt's output when it fails. Specified on scripts/lib/apt.sh with a stand-in
`apt-get` (and `sudo`) on PATH: the real apt path only runs on a machine missing a package."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stand_ins(bin_dir: Path, apt_exit: int) -> None:
    bin_dir.mkdir()
    apt = bin_dir / "apt-get"
    apt.write_text(
        "#!/bin/sh\n"
        'echo "Reading package lists... (args: $*)"\n'
        'echo "debconf: DEBIAN_FRONTEND=$DEBIAN_FRONTEND" >&2\n'
        f"exit {apt_exit}\n"
    )
    sudo = bin_dir / "sudo"
    sudo.write_text('#!/bin/sh\nexec "$@"\n')
    for tool in (apt, sudo):
        tool.chmod(0o755)


def _run(tmp_path: Path, apt_exit: int) -> subprocess.CompletedProcess[str]:
    _stand_ins(tmp_path / "bin", apt_exit)
    script = "set -euo pipefail; source scripts/lib/apt.sh; apt_get_quietly install -y maven; echo after"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)}
    return subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30, check=False)


def test_a_successful_install_prints_nothing_of_apts_output_and_leaves_no_log(tmp_path: Path) -> None:
    done = _run(tmp_path, apt_exit=0)
    assert done.returncode == 0
    assert done.stdout == "after\n"
    assert done.stderr == ""
    assert not list(tmp_path.glob("chronos-apt.*"))


def test_a_failed_install_stops_setup_and_shows_all_of_apts_output(tmp_path: Path) -> None:
    done = _run(tmp_path, apt_exit=100)
    assert done.returncode != 0
    assert "after" not in done.stdout
    assert "error: 'apt-get install -y maven' failed" in done.stderr
    assert "Reading package lists... (args: install -y maven)" in done.stderr
    assert "debconf: DEBIAN_FRONTEND=noninteractive" in done.stderr, "apt must never stop to ask"
    assert not list(tmp_path.glob("chronos-apt.*"))
