"""What a release publishes: ``python -m build`` makes the sdist and, from it, the wheel;
``twine check`` passes on both; both carry LICENSE, and the metadata is ready for a package
index (classifiers, project URLs, the README as the long description). The wheel is
complete: every file under emulator/ is in it, and payemu installed from it into a fresh
virtual environment outside the checkout serves every page and asset it links (200, no
traceback) and runs every command (or says in one line that it needs a checkout). The
artifacts are built and installed once for the module, the new environment reusing this
one's installed dependencies through a ``.pth`` file."""

from __future__ import annotations

import email
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from tests.support.paths import REPO_ROOT
from tests.support.servers import PayemuProcess

ROOT = REPO_ROOT
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "emulator", "schemas", "scenarios")  # what a build reads
MAX_PAGES = 80


def build(source: Path, out: Path) -> tuple[Path, Path]:
    """``python -m build``: the sdist, then the wheel built from it (so the sdist is complete).
    Its isolated build environment is made with uv when uv is installed (seconds), else pip."""
    installer = ["--installer", "uv"] if shutil.which("uv") else []
    built = subprocess.run(
        [sys.executable, "-m", "build", *installer, "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [sdist] = out.glob("payemu-*.tar.gz")
    [wheel] = out.glob("payemu-*.whl")
    return sdist, wheel


def install(wheel: Path, target: Path) -> Path:
    """A fresh venv at ``target`` with the wheel installed and this environment's
    dependencies visible (a ``.pth`` file: its own ``.pth`` files, such as an editable
    payemu's, are not run). Returns the venv's bin directory."""
    venv.create(target, with_pip=False, symlinks=True)
    python = target / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    Path(purelib, "_payemu_test_deps.pth").write_text("\n".join(paths) + "\n")
    if shutil.which("uv"):
        command = ["uv", "pip", "install", "-q", "--offline", "--no-deps", "--python", str(python), str(wheel)]
    else:
        command = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)]
    installed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return target / "bin"


@dataclass
class Installed:
    sdist: Path
    wheel: Path
    bin: Path
    home: Path  # the working directory, outside the checkout

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return subprocess.run(
            [str(self.bin / "payemu"), *args], cwd=self.home, env=env, capture_output=True, text=True, timeout=60
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    sdist, wheel = build(source, base / "dist")
    home = base / "home"
    home.mkdir()
    return Installed(sdist, wheel, install(wheel, base / "venv"), home)


def test_twine_checks_the_sdist_and_the_wheel(installed: Installed) -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(installed.sdist), str(installed.wheel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2


def test_the_license_ships_in_both(installed: Installed) -> None:
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License")
    with zipfile.ZipFile(installed.wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(name).decode() == license_text
    with tarfile.open(installed.sdist) as archive:
        [member] = [m for m in archive.getmembers() if m.name.count("/") == 1 and m.name.endswith("/LICENSE")]
        extracted = archive.extractfile(member)
        assert extracted is not None
        assert extracted.read().decode() == license_text


def test_the_metadata_is_ready_for_an_index(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_string(archive.read(name).decode())
    assert metadata["Name"] == "payemu"
    assert metadata["License-Expression"] == "MIT"
    assert metadata["License-File"] == "LICENSE"
    classifiers = metadata.get_all("Classifier") or []
    assert "Framework :: Pytest" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL") or [])
    assert set(urls) >= {"Homepage", "Documentation", "Changelog", "Issues"}
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload() == (ROOT / "README.md").read_text()


def test_the_wheel_ships_every_file_under_emulator(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as archive:
        names = set(archive.namelist())
        schema = archive.read("emulator/data/openapi.json")
        scenarios = archive.read("emulator/data/default-scenarios.yaml")
    assert schema == (ROOT / "schemas" / "openapi.json").read_bytes()
    assert scenarios == (ROOT / "scenarios" / "default.yaml").read_bytes()
    files = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "emulator").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    ]
    assert "emulator/ui/static/favicon.svg" in files
    assert [name for name in files if name not in names] == []


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [value for name, value in attrs if name in ("href", "src") and value]


def links_of(page: str) -> list[str]:
    parser = Links()
    parser.feed(page)
    return [link for link in parser.found if not link.startswith(("#", "mailto:", "javascript:", "data:"))]


@dataclass
class Serving:
    url: str
    card_form: str
    log: Path
    start_links: list[str]


@pytest.fixture(scope="module")
def serving(installed: Installed) -> Iterator[Serving]:
    ready = installed.home / "ready.json"
    with PayemuProcess(
        "serve",
        "--card-form-port",
        "0",
        "--ready-file",
        str(ready),
        ready_file=ready,
        executable=[str(installed.bin / "payemu")],
        cwd=installed.home,
        unset=("PYTHONPATH", "VIRTUAL_ENV"),
    ) as process:
        info = process.ready
        start = httpx.get(info["url"] + "/", headers={"Accept": "text/html"}, timeout=10)
        assert start.status_code == 200
        card_form = info["cardFormUrl"].replace("//localhost:", "//127.0.0.1:")
        yield Serving(info["url"], card_form, process.log, links_of(start.text))
        process.stop(signal.SIGTERM, timeout=15)


def test_every_page_and_asset_it_links_answers_200(serving: Serving) -> None:
    """From the start page and the card form, every link of payemu's own (pages, scripts,
    styles, icons, schemas), and theirs in turn, answers 200; the log shows no traceback."""
    html = {"Accept": "text/html"}
    seen: dict[str, int] = {}
    queue = [serving.url + "/", serving.card_form]
    origins = {urlsplit(url).netloc for url in queue}
    while queue and len(seen) < MAX_PAGES:
        url = queue.pop(0)
        if url in seen:
            continue
        answer = httpx.get(url, headers=html, timeout=10)
        seen[url] = answer.status_code
        if answer.headers.get("content-type", "").startswith("text/html"):
            for link in links_of(answer.text):
                target = urljoin(url, link)
                if urlsplit(target).netloc in origins and target not in seen:
                    queue.append(target)
    failed = {url: status for url, status in seen.items() if status != 200}
    assert failed == {}
    paths = {urlsplit(url).path for url in seen}
    for expected in ("/", "/_emulator/", "/docs", "/favicon.ico", "/_emulator/static/payemu.css"):
        assert expected in paths
    log = serving.log.read_text()
    assert "Traceback" not in log and "payemu bug" not in log, log[-3000:]


def test_the_start_page_links_nothing_a_wheel_user_lacks(serving: Serving) -> None:
    """Links off payemu's own origin go to public https pages, not to a server only a
    checkout runs (such as ``mkdocs serve`` on 127.0.0.1:8000)."""
    own = urlsplit(serving.url).netloc
    elsewhere = [link for link in serving.start_links if urlsplit(urljoin(serving.url, link)).netloc != own]
    assert [link for link in elsewhere if not link.startswith("https://")] == []


VALID_RULES = (
    "- name: big\n  when: {amount: 999}\n  then: {operationResultCode: Rejected, rejectReasonCode: DoNotHonor}\n"
)


@pytest.mark.parametrize(
    ("args", "status", "says"),
    [
        (["--version"], 0, "payemu 0.1.0"),
        (["--help"], 0, "serve"),
        (["serve", "--help"], 0, "--ready-file"),
        (["scenarios", "check", "rules.yaml"], 0, "1 file(s) OK"),
        (["scenarios", "list", "rules.yaml"], 0, "big"),
        (["scenarios", "table"], 0, "| "),
        (
            ["scenarios", "table", "--write-docs"],
            2,
            "payemu: --write-docs writes docs/test-cards.md of a payemu checkout",
        ),
        (["proxy", "--help"], 0, "--upstream"),
        (["verify", "--help"], 0, "--upstream"),
        (["state", "migrate", "--help"], 0, "OLD"),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, list) else None,
)
def test_every_command_runs_from_the_wheel(installed: Installed, args: list[str], status: int, says: str) -> None:
    (installed.home / "rules.yaml").write_text(VALID_RULES)
    result = installed.run(*args)
    assert result.returncode == status, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert says in output
    assert "Traceback" not in output
    if status:
        assert len(result.stderr.strip().splitlines()) == 1  # one line saying why
