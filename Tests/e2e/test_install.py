"""scripts/install, as `make install PREFIX=/usr/local DESTDIR=...` runs it (make deb runs it with
/usr; scripts/check-deb checks the package in CI): the layout, the units written from their
templates with the prefix, the generated config file and stpd.conf(5), and an existing config
file kept. The binaries are the debug build's; the generate-manual pages are stand-ins here."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

from conftest import REPO_ROOT, clean_environment

INSTALL = REPO_ROOT / "scripts" / "install"


def install(bin_dir: Path, man_dir: Path, destdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(INSTALL), "--bin-dir", str(bin_dir), "--man-dir", str(man_dir),
                           "--destdir", str(destdir), *args],
                          env=clean_environment(), capture_output=True, text=True, timeout=120)


def stand_in_manuals(directory: Path) -> Path:
    directory.mkdir()
    (directory / "stpd.8").write_text(".Dt STPD 8\n")
    (directory / "stpctl.1").write_text(".Dt STPCTL 1\n")
    return directory


def test_make_install_layout(bin_dir: Path, tmp_path: Path):
    man = stand_in_manuals(tmp_path / "man")
    dest = tmp_path / "dest"
    done = install(bin_dir, man, dest, "--prefix", "/usr/local")
    assert done.returncode == 0, done.stderr
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == [
        "etc/stpd/stpd.conf",
        "usr/local/bin/stpctl",
        "usr/local/bin/stpd",
        "usr/local/lib/systemd/system/stpd.service",
        "usr/local/lib/systemd/system/stpd.socket",
        "usr/local/lib/systemd/user/stpd.service",
        "usr/local/lib/systemd/user/stpd.socket",
        "usr/local/lib/sysusers.d/stpd.conf",
        "usr/local/share/bash-completion/completions/stpctl",
        "usr/local/share/fish/vendor_completions.d/stpctl.fish",
        "usr/local/share/man/man1/stpctl.1.gz",
        "usr/local/share/man/man5/stpd.conf.5.gz",
        "usr/local/share/man/man8/stpd.8.gz",
        "usr/local/share/zsh/site-functions/_stpctl",
    ]
    for scope in ("system", "user"):
        unit = (dest / f"usr/local/lib/systemd/{scope}/stpd.service").read_text()
        assert "ExecStart=/usr/local/bin/stpd\n" in unit and "@BINDIR@" not in unit, unit
    assert "EnvironmentFile=-/etc/stpd/stpd.conf\n" in (dest / "usr/local/lib/systemd/system/stpd.service").read_text()
    conf = (dest / "etc/stpd/stpd.conf").read_text()
    assert "#STPD_MAX_FRAME_BYTES=1048576\n" in conf
    assert all(line == "" or line.startswith("#") for line in conf.splitlines())
    manual = gzip.decompress((dest / "usr/local/share/man/man5/stpd.conf.5.gz").read_bytes()).decode()
    assert manual.startswith(".TH STPD.CONF 5") and "STPD_MAX_FRAME_BYTES" in manual
    bash = (dest / "usr/local/share/bash-completion/completions/stpctl").read_text()
    assert not bash.startswith("#!") and "stpctl" in bash
    assert (dest / "usr/local/bin/stpd").stat().st_mode & 0o777 == 0o755


def test_make_install_keeps_an_edited_config(bin_dir: Path, tmp_path: Path):
    man = stand_in_manuals(tmp_path / "man")
    dest = tmp_path / "dest"
    (dest / "etc" / "stpd").mkdir(parents=True)
    (dest / "etc" / "stpd" / "stpd.conf").write_text("STPD_LOG_LEVEL=debug\n")
    done = install(bin_dir, man, dest, "--prefix", "/usr")
    assert done.returncode == 0, done.stderr
    assert "keeping" in done.stderr
    assert (dest / "etc" / "stpd" / "stpd.conf").read_text() == "STPD_LOG_LEVEL=debug\n"
    assert (dest / "usr/share/zsh/vendor-completions/_stpctl").is_file()  # Debian's place under /usr


def test_install_needs_the_manual_pages(bin_dir: Path, tmp_path: Path):
    (tmp_path / "man").mkdir()
    done = install(bin_dir, tmp_path / "man", tmp_path / "dest")
    assert done.returncode == 1 and "stpd.8 is missing" in done.stderr
