"""The package builds offline with the system's own build tools: pyproject.toml names a backend that
is installed, and every requirement it lists for a wheel is importable here, so
`pip install --no-build-isolation ./python` needs no download (tests/deb also runs that install)."""
import importlib
import os
import subprocess
import sys

from conftest import ROOT

PY = os.path.join(ROOT, "python")


def test_pyproject_names_an_installed_backend():
    import tomllib  # Python 3.11+
    with open(os.path.join(PY, "pyproject.toml"), "rb") as f:
        meta = tomllib.load(f)
    system = meta["build-system"]
    backend = importlib.import_module(system["build-backend"])
    assert hasattr(backend, "build_wheel")
    for req in system["requires"]:
        name = req.split(">")[0].split("=")[0].split("<")[0].strip()
        importlib.import_module(name)       # setuptools, wheel: Debian's python3-setuptools, python3-wheel


def test_the_backend_asks_for_nothing_more():
    """The backend's own list of what a wheel build needs (PEP 517 hook, run in python/ as pip runs it)
    holds only installed modules: nothing for pip to fetch."""
    code = ("import setuptools.build_meta as b, json; "
            "print(json.dumps(b.get_requires_for_build_wheel()))")
    p = subprocess.run([sys.executable, "-c", code], cwd=PY, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    import json
    for req in json.loads(p.stdout.strip().splitlines()[-1]):
        importlib.import_module(req.split(">")[0].split("=")[0].strip())
