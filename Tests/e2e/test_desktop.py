"""Desktop integration: contrib/desktop's x-scheme-handler entry and its install script, and
`stpctl handle-url` as the desktop runs it (quiet, exit 5 when nothing matched).

The rendered entry must pass `desktop-file-validate` (Debian's desktop-file-utils, which
scripts/bootstrap installs). Without it the validation test is skipped, except under CI
(`CI` set), where a missing validator is a failure rather than a silent pass.
"""

from __future__ import annotations

from codes import INVALID_PARAMS
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, clean_environment

DESKTOP = REPO_ROOT / "contrib" / "desktop"
INSTALL = DESKTOP / "install-url-handler"
TEMPLATE = DESKTOP / "stpd-url-handler.desktop.in"
EXIT_TIMEOUT = 30.0
NO_SESSION_MATCHED = 5
# What the install script runs, besides /bin/sh's builtins.
SCRIPT_TOOLS = ["dirname", "tr", "sed", "mkdir", "mv"]


def validator() -> str:
    path = shutil.which("desktop-file-validate")
    if path:
        return path
    if os.environ.get("CI"):
        pytest.fail("desktop-file-validate is missing: scripts/bootstrap installs desktop-file-utils")
    pytest.skip("desktop-file-validate is missing (Debian: desktop-file-utils)")


def tools_dir(directory: Path, fakes: dict[str, str] | None = None) -> Path:
    """A directory to be the whole $PATH: links to the tools the script needs and FAKES (name ->
    shell script body), so that no xdg-mime or update-desktop-database of the machine is run."""
    directory.mkdir(parents=True)
    for tool in SCRIPT_TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} is missing"
        (directory / tool).symlink_to(found)
    for name, body in (fakes or {}).items():
        fake = directory / name
        fake.write_text("#!/bin/sh\n" + body)
        fake.chmod(0o755)
    return directory


def install(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", str(INSTALL), *args], env=env, capture_output=True, text=True,
                          timeout=EXIT_TIMEOUT, stdin=subprocess.DEVNULL)


def entry(text: str) -> dict[str, str]:
    lines = text.splitlines()
    assert lines[0] == "[Desktop Entry]", text
    return dict(line.split("=", 1) for line in lines[1:] if line and not line.startswith("#"))


def test_rendered_entry_is_valid(tmp_path):
    done = install("--print", "--stpctl", "/usr/local/bin/stpctl", "--name", "My Shop & Co", "MyShop",
                   env=clean_environment())
    assert done.returncode == 0, done.stderr
    path = tmp_path / "stpd-url-handler-myshop.desktop"
    path.write_text(done.stdout)
    checked = subprocess.run([validator(), str(path)], capture_output=True, text=True, timeout=EXIT_TIMEOUT)
    assert checked.returncode == 0 and checked.stdout == "" and checked.stderr == "", checked
    keys = entry(done.stdout)
    assert keys["MimeType"] == "x-scheme-handler/myshop;"  # the scheme in lower case
    assert keys["Exec"] == "/usr/local/bin/stpctl handle-url %u"
    assert (keys["Type"], keys["NoDisplay"], keys["Terminal"]) == ("Application", "true", "false")
    assert keys["Name"] == "My Shop & Co"
    assert "@" not in done.stdout  # every placeholder filled in


def test_template_has_the_placeholders():
    keys = entry("\n".join(line for line in TEMPLATE.read_text().splitlines() if not line.startswith("#")))
    assert keys["MimeType"] == "x-scheme-handler/@SCHEME@;"
    assert keys["Exec"] == "@STPCTL@ handle-url %u"
    assert "Categories" not in keys  # NoDisplay: it belongs in no menu


def test_socket_option_goes_into_exec():
    done = install("--print", "--stpctl", "/usr/bin/stpctl", "--socket", "/run/stpd/stpd.sock", "myshop",
                   env=clean_environment())
    assert done.returncode == 0, done.stderr
    assert entry(done.stdout)["Exec"] == "/usr/bin/stpctl --socket /run/stpd/stpd.sock handle-url %u"


def test_install_without_xdg_mime_writes_the_entry(tmp_path):
    data = tmp_path / "data"
    env = {"PATH": str(tools_dir(tmp_path / "bin")), "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(data)}
    done = install("--stpctl", "/opt/stpd/bin/stpctl", "myshop", env=env)
    assert done.returncode == 0, done.stderr
    written = data / "applications" / "stpd-url-handler-myshop.desktop"
    keys = entry(written.read_text())
    assert keys["MimeType"] == "x-scheme-handler/myshop;"
    assert keys["Exec"] == "/opt/stpd/bin/stpctl handle-url %u"
    # It says how to register it by hand, and leaves nothing else behind.
    assert "xdg-mime default stpd-url-handler-myshop.desktop x-scheme-handler/myshop" in done.stderr
    assert sorted(p.name for p in written.parent.iterdir()) == [written.name]
    assert not (tmp_path / "home").exists()


def test_install_registers_with_xdg_mime(tmp_path):
    calls = tmp_path / "calls"
    record = f'echo "${{0##*/}} $*" >> {calls}\n'  # its own name and arguments
    path = tools_dir(tmp_path / "bin", {"xdg-mime": record, "update-desktop-database": record})
    data = tmp_path / "data"
    done = install("--id", "com.example.MyShop", "--stpctl", "/usr/bin/stpctl", "myshop",
                   env={"PATH": str(path), "HOME": str(tmp_path), "XDG_DATA_HOME": str(data)})
    assert done.returncode == 0, done.stderr
    assert (data / "applications" / "com.example.MyShop.desktop").is_file()
    assert calls.read_text().splitlines() == [
        f"update-desktop-database {data / 'applications'}",
        "xdg-mime default com.example.MyShop.desktop x-scheme-handler/myshop",
    ]


@pytest.mark.parametrize("args", [["http"], ["my shop"], ["1shop"], [], ["a", "b"], ["--stpctl", "/a b/stpctl", "x"],
                                  ["--id", "a/b", "x"], ["--bogus", "x"]])
def test_install_refuses_what_it_cannot_write_safely(tmp_path, args):
    done = install("--print", *args, env=clean_environment())
    assert done.returncode == 2, done
    assert done.stdout == "" and done.stderr.startswith("install-url-handler: ")


# -- stpctl handle-url, as the desktop runs it ---------------------------------------------------

@pytest.fixture
def handle_url(bin_dir: Path, start_stpd, tmp_path: Path):
    """handle_url(url, *options) -> CompletedProcess: stpctl handle-url against a fresh daemon,
    stdout piped as when the desktop launches it."""
    daemon = start_stpd(tmp_path / "stpd")

    def run(url: str, *options: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(bin_dir / "stpctl"), "--socket", str(daemon.socket_path), "handle-url", *options, url],
                              env=clean_environment(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=EXIT_TIMEOUT)

    return run


def test_handle_url_without_sessions_exits_5(handle_url):
    url = "myshop://stripe-redirect?source=src_1&client_secret=src_client_secret_xyz"
    done = handle_url(url)
    assert done.returncode == NO_SESSION_MATCHED, done
    assert done.stdout == ""
    assert "no redirect session" in done.stderr
    assert "src_client_secret_xyz" not in done.stderr  # return URLs may carry secrets: never echoed
    # --json: the reply too.
    done = handle_url(url, "--json")
    assert done.returncode == NO_SESSION_MATCHED
    assert json.loads(done.stdout)["handled"] is False


def test_handle_url_with_a_malformed_url_fails(handle_url):
    done = handle_url("not a url")
    assert done.returncode == 1, done
    assert done.stdout == ""
    assert json.loads(done.stderr)["code"] == INVALID_PARAMS


def test_handle_url_completes_a_redirect(bin_dir, start_stpd, tmp_path, stripe_test_server):
    """The whole desktop path: create a Source and a session with stpctl, follow the bank page's
    302 to the app's return URL, hand it to `stpctl handle-url` (quiet, exit 0), and
    `stpctl redirect wait` gets the outcome."""
    from flows import bank_page, stpd_for

    daemon = stpd_for(start_stpd, tmp_path / "stpd", stripe_test_server)

    def stpctl(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(bin_dir / "stpctl"), "--socket", str(daemon.socket_path), *args],
                              env=clean_environment(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=EXIT_TIMEOUT)

    def ok(*args: str) -> dict:
        done = stpctl(*args)
        assert done.returncode == 0 and done.stderr == "", done
        return json.loads(done.stdout)

    created = ok("source", "create", "sofort", "--amount", "1099", "--country", "DE",
                 "--return-url", "myshop://stripe-redirect?order=7")
    source = created["source"]
    assert created["clientSecret"] == "[REDACTED]"  # stpd keeps it; stpctl never prints it unasked
    session = ok("redirect", "create", "--source", source["id"])
    open_url = stpctl("redirect", "start", session["id"], "--url")
    # --url prints the whole URL, for a browser; elsewhere its client secret is redacted.
    redacted = source["redirect"]["url"].split("client_secret=")
    assert open_url.returncode == 0 and open_url.stdout.strip().startswith(redacted[0] + "client_secret="), open_url
    assert "[REDACTED]" in redacted[1] and "[REDACTED]" not in open_url.stdout, open_url

    return_url = bank_page(open_url.stdout.strip(), "authorize")
    handled = stpctl("handle-url", return_url)
    assert (handled.returncode, handled.stdout, handled.stderr) == (0, "", "")  # quiet when piped
    # The same URL again: the session is no longer in progress.
    assert stpctl("handle-url", return_url).returncode == NO_SESSION_MATCHED

    outcome = ok("--timeout", "30", "redirect", "wait", session["id"])
    assert outcome["status"] == "completed" and outcome["outcome"]["result"] == "chargeable", outcome
