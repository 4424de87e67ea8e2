"""The packaging recipes agree with pyproject.toml, the version, and what the build makes.

The Debian package is built and installed in CI (packaging/build-deb.sh, tests/vm); the
RPM, Arch and Homebrew recipes cannot be built on a Debian machine, so these checks keep
them from drifting: the name and version, every dependency and extra, and a file list that
matches what `qex systemd export` and packaging/build-extras.py really produce.
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from qex import __version__
from qex.cli.commands import systemd as systemd_cmd
from qex.platform.activation import FD_NAME

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "packaging"
DIST = "qex-queue"
SDIST = f"qex_queue-{__version__}.tar.gz"
#: Extras that a user installs; `dev` and `docs` are for working on qex.
USER_EXTRAS = {"systemd", "udev", "nvidia"}


def _project() -> dict[str, object]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    assert isinstance(project, dict)
    return project


def _name(dep: str) -> str:
    return re.split(r"[<>=!~ ;\[]", dep, maxsplit=1)[0].lower()


def _dependencies() -> list[str]:
    deps = _project()["dependencies"]
    assert isinstance(deps, list)
    return [_name(dep) for dep in deps]


def _extras() -> dict[str, list[str]]:
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    return {k: [_name(d) for d in v] for k, v in extras.items()}


def build_extras() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_extras", PKG / "build-extras.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_project_is_what_the_recipes_assume() -> None:
    project = _project()
    assert project["name"] == DIST
    # The program is a wheel script (no entry-point wrapper, which imports `re` first).
    assert "scripts" not in project
    with open(ROOT / "pyproject.toml", "rb") as handle:
        wheel = tomllib.load(handle)["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["shared-scripts"] == {"scripts/qex": "qex"}
    script = ROOT / "scripts" / "qex"
    assert script.stat().st_mode & 0o111, "scripts/qex must be executable"
    lines = script.read_text().splitlines()
    assert lines[0].startswith("#!") and "python" in lines[0]
    assert "from qex.cli.main import program" in lines and "program()" in lines
    assert not any(line.startswith(("import re", "from re ")) for line in lines)
    assert set(_dependencies()) == {"click", "psutil", "pyyaml", "tomli-w"}
    assert set(_extras()) >= USER_EXTRAS
    assert _extras()["nvidia"] == ["nvidia-ml-py"]


def _code(markdown: str) -> list[str]:
    """The commands of a Markdown page: fenced blocks and `inline code`."""
    fenced = re.findall(r"```[^\n]*\n(.*?)```", markdown, re.S)
    rest = re.sub(r"```.*?```", "", markdown, flags=re.S)
    return [*fenced, *re.findall(r"`([^`\n]+)`", rest)]


def test_every_install_line_uses_the_distribution_name() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), PKG / "README.md"]
    seen = 0
    for path in pages:
        for code in _code(path.read_text()):
            for target in re.findall(r"\bpipx? install\s+(?:-\S+\s+)*(\S+)", code):
                if target.startswith(("'.", ".", "-e")):
                    continue  # a checkout, not the index
                seen += 1
                assert target.strip("'\"").startswith("qex-queue"), f"{path.name}: {code}"
    assert seen >= 3


def test_debian_control_changelog_and_rules() -> None:
    control = (PKG / "debian" / "control").read_text()
    assert re.search(rf"^Source: {DIST}$", control, re.M)
    assert re.search(rf"^Package: {DIST}$", control, re.M)
    build, runtime = control.split(f"Package: {DIST}", 1)
    for tool in ("pybuild-plugin-pyproject", "dh-python", "python3-hatchling",
                 "python3-click-man"):
        assert tool in build, tool
    names = {"pyyaml": "python3-yaml"}
    for dep in _dependencies():
        assert names.get(dep, f"python3-{dep}") in runtime, dep
        assert names.get(dep, f"python3-{dep}") in build, dep
    changelog = (PKG / "debian" / "changelog").read_text()
    assert changelog.startswith(f"{DIST} ({__version__}-")
    rules = (PKG / "debian" / "rules").read_text()
    assert "--buildsystem=pybuild" in rules and "PYBUILD_SYSTEM = pyproject" in rules
    assert "$(BUILT) -m qex systemd export $(PKGDIR)/usr/lib/systemd/user" in rules
    assert "BUILT = PYTHONPATH=$(SITE) python3 -P" in rules
    # Debian 12's hatchling ignores shared-scripts: the program must still be installed.
    assert "install -D -m 0755 scripts/qex $(PKGDIR)/usr/bin/qex" in rules
    assert "packaging/build-extras.py" in rules
    for name in build_extras().COMPLETION_FILES.values():
        assert f"completions/{name}" in rules, name
    assert (PKG / "debian" / f"{DIST}.examples").read_text().split() == [
        "qex/data/systemd/qex-delegate.conf"]


def _rpm_files(spec: str) -> list[str]:
    section = spec.split("%files", 1)[1].split("%changelog", 1)[0]
    return [line.strip() for line in section.splitlines()
            if line.strip().startswith("%{_") or line.strip().startswith("%{bash")
            or line.strip().startswith("%{zsh") or line.strip().startswith("%{fish")]


def test_rpm_spec() -> None:
    spec = (PKG / "rpm" / f"{DIST}.spec").read_text()
    assert re.search(rf"^Name:\s+{DIST}$", spec, re.M)
    assert re.search(rf"^Version:\s+{re.escape(__version__)}$", spec, re.M)
    assert "%{pypi_source qex_queue}" in spec and "%autosetup -n qex_queue-%{version}" in spec
    extras = re.search(r"^%pyproject_extras_subpkg -n qex-queue (.+)$", spec, re.M)
    assert extras is not None and set(extras.group(1).split()) == USER_EXTRAS
    for macro in ("%pyproject_wheel", "%pyproject_install", "%pyproject_save_files qex",
                  "%systemd_user_post qex.socket", "%systemd_user_preun qex.socket",
                  "BuildRequires:  python3dist(click-man)"):
        assert macro in spec, macro
    files = _rpm_files(spec)
    install = spec.split("%install", 1)[1].split("%check", 1)[0]
    assert "-m qex systemd export %{buildroot}%{_userunitdir}" in install
    for unit in ("qex.socket", "qex.service"):
        assert f"%{{_userunitdir}}/{unit}" in files
    assert "%{_mandir}/man1/qex*.1*" in files and "%{_mandir}/man1" in install
    for macro, name in (("%{bash_completions_dir}", "qex"), ("%{zsh_completions_dir}", "_qex"),
                        ("%{fish_completions_dir}", "qex.fish")):
        assert f"{macro}/{name}" in files
        assert f"{macro}/{name}" in install  # every listed file is installed


def test_arch_pkgbuild() -> None:
    pkgbuild = (PKG / "arch" / "PKGBUILD").read_text()
    assert f"pkgname={DIST}\n" in pkgbuild and f"pkgver={__version__}\n" in pkgbuild
    assert "qex_queue-$pkgver.tar.gz" in pkgbuild
    depends = re.search(r"^depends=\(([^)]*)\)", pkgbuild, re.M)
    assert depends is not None
    names = {"pyyaml": "python-yaml"}
    for dep in _dependencies():
        assert f"'{names.get(dep, 'python-' + dep)}'" in depends.group(1), dep
    optdepends = re.search(r"^optdepends=\((.*?)'\)$", pkgbuild, re.M | re.S)
    assert optdepends is not None
    for extra in USER_EXTRAS:
        for dep in _extras()[extra]:
            assert f"python-{dep}:" in optdepends.group(1), dep
    assert "-m qex systemd export \"$pkgdir/usr/lib/systemd/user\"" in pkgbuild
    assert "python-click-man" in pkgbuild and "packaging/build-extras.py" in pkgbuild
    for name in build_extras().COMPLETION_FILES.values():
        assert f"completions/{name}" in pkgbuild, name


def test_homebrew_formula() -> None:
    formula = (PKG / "homebrew" / f"{DIST}.rb").read_text()
    assert "class QexQueue < Formula" in formula
    assert "virtualenv_install_with_resources" in formula
    assert f"/q/qex-queue/{SDIST}" in formula
    resources = set(re.findall(r'resource "([^"]+)"', formula))
    assert resources == set(_dependencies()) | {"click-man"}
    for sha in re.findall(r'resource "[^"]+" do\s+url "[^"]+"\s+sha256 "([^"]+)"', formula):
        assert re.fullmatch(r"[0-9a-f]{64}", sha)
    assert "packaging/build-extras.py" in formula and "man1.install" in formula


def test_no_recipe_keeps_a_copy_of_a_unit() -> None:
    for path in PKG.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not re.search(r"^(\[Socket\]|ListenStream=)", text, re.M), path


def test_export_gives_the_units_a_package_installs(tmp_path: Path) -> None:
    import configparser

    result = CliRunner().invoke(systemd_cmd.command, ["export", str(tmp_path)])
    assert result.exit_code == 0, result.output

    def unit(name: str) -> configparser.ConfigParser:
        parser = configparser.ConfigParser(strict=False, interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        parser.read(tmp_path / name)
        return parser

    socket_unit, service = unit("qex.socket"), unit("qex.service")
    assert socket_unit["Socket"]["ListenStream"] == "%h/.local/state/qex/run/qex.sock"
    assert socket_unit["Socket"]["FileDescriptorName"] == FD_NAME
    assert socket_unit["Socket"]["SocketMode"] == "0600"
    assert socket_unit["Install"]["WantedBy"] == "sockets.target"
    assert service["Service"]["Type"] == "notify"
    assert service["Service"]["ExecStart"].split() == ["/usr/bin/qex", "daemon", "--supervised"]
    assert service["Service"]["KillMode"] == "process"
    assert "Install" not in service
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qex.service", "qex.socket"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # click-man on a newer click
def test_build_extras_makes_a_page_per_command_and_three_completions(tmp_path: Path) -> None:
    pytest.importorskip("click_man")
    module = build_extras()
    assert module.main([str(tmp_path)]) == 0
    pages = {p.name for p in (tmp_path / "man" / "man1").iterdir()}
    assert {"qex.1", "qex-submit.1", "qex-systemd-install.1", "qex-config-show.1"} <= pages
    assert "qex-daemon.1" not in pages and "qex-supervise.1" not in pages  # hidden
    submit = (tmp_path / "man" / "man1" / "qex-submit.1").read_text()
    assert submit.startswith(".TH") and "\\-\\-cpu" in submit.replace("--cpu", "\\-\\-cpu")
    assert "\\b\n" not in submit
    scripts = {p.name: p.read_text() for p in (tmp_path / "completions").iterdir()}
    assert set(scripts) == {"qex.bash", "_qex", "qex.fish"}
    assert all("_QEX_COMPLETE" in text for text in scripts.values())
    assert "complete -o nosort -F" in scripts["qex.bash"]
