"""The packaging recipes agree with pyproject.toml, the version and the systemd units.

Distribution recipes are not built in CI, so these checks are what keeps them from
drifting: a dependency added to pyproject.toml must reach every recipe, and the units
they install must be the repository's templates with /usr/bin/qex.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from pathlib import Path

import pytest

from qex import __version__
from qex.platform.activation import FD_NAME

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "packaging"


def _pyproject() -> dict[str, object]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)


def _dependencies() -> list[str]:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    return [re.split(r"[<>=!~ ;\[]", dep, maxsplit=1)[0].lower() for dep in project["dependencies"]]


def _unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(path)
    return parser


def test_the_project_is_what_the_recipes_assume() -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert project["name"] == "qex"
    # The program is a wheel script (no entry-point wrapper, which imports `re` first).
    assert "scripts" not in project
    wheel = _pyproject()["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["shared-scripts"] == {"scripts/qex": "qex"}
    script = PKG.parent / "scripts" / "qex"
    assert script.stat().st_mode & 0o111, "scripts/qex must be executable"
    lines = script.read_text().splitlines()
    assert lines[0].startswith("#!") and "python" in lines[0]
    assert "from qex.cli.main import main" in lines
    assert not any(line.startswith(("import re", "from re ")) for line in lines)
    assert set(_dependencies()) == {"click", "psutil", "pyyaml", "tomli-w"}
    assert set(project["optional-dependencies"]) >= {"systemd", "udev"}


def test_debian_control_and_changelog() -> None:
    control = (PKG / "debian" / "control").read_text()
    assert "pybuild-plugin-pyproject" in control
    assert re.search(r"^Package: qex$", control, re.M)
    runtime = control.split("Package: qex", 1)[1]
    names = {"pyyaml": "python3-yaml"}
    for dep in _dependencies():
        assert names.get(dep, f"python3-{dep}") in runtime, dep
    changelog = (PKG / "debian" / "changelog").read_text()
    assert changelog.startswith(f"qex ({__version__}-")
    rules = (PKG / "debian" / "rules").read_text()
    assert "--buildsystem=pybuild" in rules
    assert "PYBUILD_SYSTEM = pyproject" in rules


def test_rpm_spec() -> None:
    spec = (PKG / "rpm" / "qex.spec").read_text()
    assert re.search(rf"^Version:\s+{re.escape(__version__)}$", spec, re.M)
    for macro in ("%pyproject_wheel", "%pyproject_install", "%pyproject_save_files qex",
                  "%{_userunitdir}/qex.socket", "%systemd_user_post qex.socket"):
        assert macro in spec, macro
    assert "%pyproject_extras_subpkg -n qex systemd udev" in spec


def test_arch_pkgbuild() -> None:
    pkgbuild = (PKG / "arch" / "PKGBUILD").read_text()
    assert f"pkgver={__version__}\n" in pkgbuild
    depends = re.search(r"^depends=\(([^)]*)\)", pkgbuild, re.M)
    assert depends is not None
    names = {"pyyaml": "python-yaml"}
    for dep in _dependencies():
        assert f"'{names.get(dep, 'python-' + dep)}'" in depends.group(1), dep


def test_homebrew_formula() -> None:
    formula = (PKG / "homebrew" / "qex.rb").read_text()
    assert "virtualenv_install_with_resources" in formula
    assert f"qex-{__version__}.tar.gz" in formula
    resources = set(re.findall(r'resource "([^"]+)"', formula))
    assert resources == set(_dependencies())
    for sha in re.findall(r'resource "[^"]+" do\s+url "[^"]+"\s+sha256 "([^"]+)"', formula):
        assert re.fullmatch(r"[0-9a-f]{64}", sha)


@pytest.mark.parametrize("folder", ["rpm", "arch"])
def test_rpm_and_arch_use_the_debian_units(folder: str) -> None:
    for name, target in (("qex.socket", "qex.user.socket"), ("qex.service", "qex.user.service")):
        link = PKG / folder / name
        assert link.resolve() == (PKG / "debian" / target).resolve()


def test_the_packaged_units() -> None:
    socket_unit = _unit(PKG / "debian" / "qex.user.socket")
    service = _unit(PKG / "debian" / "qex.user.service")
    assert socket_unit["Socket"]["ListenStream"] == "%h/.local/state/qex/run/qex.sock"
    assert socket_unit["Socket"]["FileDescriptorName"] == FD_NAME
    assert socket_unit["Socket"]["SocketMode"] == "0600"
    assert socket_unit["Install"]["WantedBy"] == "sockets.target"
    assert service["Service"]["Type"] == "notify"
    assert service["Service"]["ExecStart"].split()[:2] == ["/usr/bin/qex", "daemon"]
    assert "Install" not in service


#: What a package puts where the repository's templates have a placeholder.
PACKAGED_VALUES = {
    "@EXEC_START@": "/usr/bin/qex",
    "@SOCKET_PATH@": "%h/.local/state/qex/run/qex.sock",
}


def _template(path: Path) -> configparser.ConfigParser:
    """A template unit with its placeholders filled in as a package fills them.

    A line that is only a placeholder (extra `Environment=` lines) becomes nothing: a
    package adds no environment.
    """
    lines = []
    for line in path.read_text().splitlines():
        if re.fullmatch(r"\s*@[A-Z_]+@\s*", line):
            continue
        for placeholder, value in PACKAGED_VALUES.items():
            line = line.replace(placeholder, value)
        assert "@" not in line.split("#", 1)[0], f"an unknown placeholder: {line}"
        lines.append(line)
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string("\n".join(lines))
    return parser


def _compare(template: Path, packaged: Path) -> None:
    ours, theirs = _unit(packaged), _template(template)
    assert set(ours.sections()) == set(theirs.sections())
    for section in theirs.sections():
        mine = {k: v for k, v in ours[section].items() if k != "Documentation"}
        wanted = {k: v for k, v in theirs[section].items() if k != "Documentation"}
        assert mine == wanted, section


@pytest.mark.parametrize("name", ["qex.socket", "qex.service"])
def test_the_packaged_units_mirror_the_repository_templates(name: str) -> None:
    template = ROOT / "systemd" / name
    if not template.is_file():
        pytest.skip(f"systemd/{name} is not in this checkout")
    _compare(template, PKG / "debian" / name.replace("qex.", "qex.user."))
