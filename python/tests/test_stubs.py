"""The type stubs and docstrings cover what the module really has."""
import ast
import inspect
import os

import bloomkit
import bloomkit.compat

PKG = os.path.dirname(bloomkit.__file__)


def _stub_classes(name):
    tree = ast.parse(open(os.path.join(PKG, name), encoding="utf-8").read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            members |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            out[node.name] = (members, bases)
        elif isinstance(node, ast.FunctionDef):
            out[node.name] = (set(), [])
    return out


def _all_members(stubs, cls):
    members, bases = stubs.get(cls, (set(), []))
    for b in bases:
        members = members | _all_members(stubs, b)
    return members


def test_every_public_name_and_method_is_in_the_stubs():
    stubs = _stub_classes("__init__.pyi")
    for name in bloomkit.__all__:
        assert name in stubs, name
    for cls in (bloomkit.Bloom, bloomkit.Blocked, bloomkit.Counting, bloomkit.Scalable, bloomkit.Cuckoo,
                bloomkit.Fuse, bloomkit.Aging, bloomkit.Quotient, bloomkit.Ribbon):
        real = {m for m in dir(cls) if not m.startswith("_") or m in ("__contains__", "__len__", "__bytes__")}
        documented = _all_members(stubs, cls.__name__) | _all_members(stubs, "Filter")
        assert real <= documented, (cls.__name__, real - documented)
        assert cls.__doc__ and "seed" in str(inspect.signature(cls))
        for m in real:
            assert getattr(cls, m).__doc__, (cls.__name__, m)


def test_compat_stubs():
    stubs = _stub_classes("compat.pyi")
    for cls in (bloomkit.compat.BloomFilter, bloomkit.compat.ScalableBloomFilter):
        real = {m for m, _ in inspect.getmembers(cls) if not m.startswith("_")} - {"filter"}
        assert real <= _all_members(stubs, cls.__name__), real - _all_members(stubs, cls.__name__)


def _stub_defaults(name="__init__.pyi"):
    """{callable name: {parameter: default}} for every class __init__ and function of a stub, the
    defaults that are literals (a default written `...` is left out)."""
    tree = ast.parse(open(os.path.join(PKG, name), encoding="utf-8").read())
    out = {}

    def defaults(fn):
        a = fn.args
        pos = a.posonlyargs + a.args
        got = {}
        for arg, d in list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + \
                [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]:
            if isinstance(d, ast.Constant) and d.value is not Ellipsis:
                got[arg.arg] = d.value
            elif isinstance(d, ast.UnaryOp):
                got[arg.arg] = ast.literal_eval(d)
        return got

    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for n in node.body:
                if isinstance(n, ast.FunctionDef) and n.name == "__init__":
                    out[node.name] = defaults(n)
        elif isinstance(node, ast.FunctionDef):
            out[node.name] = defaults(node)
    return out


def test_stub_defaults_are_the_modules():
    """Every default the stub states is the default of the real signature."""
    stubs = _stub_defaults()
    checked = 0
    for name, stated in stubs.items():
        obj = getattr(bloomkit, name, None)
        if obj is None or not stated:
            continue
        real = inspect.signature(obj).parameters
        for param, value in stated.items():
            assert param in real, (name, param)
            assert real[param].default == value, (name, param, value, real[param].default)
            checked += 1
    assert checked >= 30, checked


def test_stated_defaults_are_what_a_filter_gets():
    """A filter made with defaults reports the values the stub (and so the docs) state: the code's
    defaults, not the text's (Scalable's tightening is the library's BK_SCALABLE_DEFAULT_TIGHTENING)."""
    stubs = _stub_defaults()
    made = {
        "Bloom": bloomkit.Bloom(1000), "Blocked": bloomkit.Blocked(1000), "Counting": bloomkit.Counting(1000),
        "Scalable": bloomkit.Scalable(), "Cuckoo": bloomkit.Cuckoo(1000), "Fuse": bloomkit.Fuse(["a", "b"]),
        "Aging": bloomkit.Aging(1000), "Quotient": bloomkit.Quotient(1000),
    }
    compared = set()
    for cls, f in made.items():
        for param, value in stubs[cls].items():
            if value is None or not hasattr(f, param):
                continue
            got = getattr(f, param)
            assert got == value, (cls, param, value, got)
            compared.add((cls, param))
    for must in (("Scalable", "tightening"), ("Scalable", "growth"), ("Scalable", "capacity"),
                 ("Scalable", "error_rate"), ("Counting", "counter_bits"), ("Blocked", "block_bits"),
                 ("Aging", "generations")):
        assert must in compared, must


def test_star_import_keeps_the_builtin_open():
    ns = {}
    exec("from bloomkit import *", ns)
    assert "open" not in ns and "Bloom" in ns and "load" in ns
    exec("with open(%r, 'rb') as fh: head = fh.read(4)" % bloomkit.__file__, ns)   # the builtin open
    assert ns["head"]
    tree = ast.parse(open(os.path.join(PKG, "__init__.pyi"), encoding="utf-8").read())
    stub_all = [ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    assert stub_all == [bloomkit.__all__], "the stub's __all__ is the module's"
    assert bloomkit.open is not None     # still there as bloomkit.open


def test_stubs_import_only_what_every_type_checker_has():
    """No typing_extensions (Debian 12 ships 4.4, older than its Buffer): only the standard library's
    typing modules and typeshed's own _typeshed."""
    allowed = {"os", "sys", "typing", "collections.abc", "_typeshed", "bloomkit", "."}
    for name in ("__init__.pyi", "compat.pyi"):
        tree = ast.parse(open(os.path.join(PKG, name), encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or "."]
            else:
                continue
            for m in mods:
                assert m in allowed, (name, m)


def test_the_stubs_check_with_the_systems_mypy(tmp_path):
    """When a mypy is installed (Debian 12: python3-mypy 1.0.1, whose typeshed predates PEP 688's
    Buffer), a small program using the package type-checks against the stubs."""
    import shutil
    import subprocess
    import sys
    try:
        import mypy  # noqa: F401
    except ImportError:
        import pytest
        pytest.skip("mypy is not installed (Debian: python3-mypy)")
    prog = tmp_path / "use.py"
    prog.write_text("import bloomkit\nfrom bloomkit import *\n"
                    "f = bloomkit.Blocked(1000, 0.01)\nf.add('x')\nok: bool = 'x' in f\n"
                    "f.add_many([b'a', b'b'])\nf.contains_many(bytearray(8))\n"
                    "s = bloomkit.Scalable(tightening=0.5)\ng = load('x.bf')\n"
                    "with open('use.py') as fh:\n    fh.read()\n")
    stubs = tmp_path / "stubs"
    shutil.copytree(PKG, stubs / "bloomkit", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    p = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "c"),
                        str(prog)], capture_output=True, text=True, cwd=tmp_path,
                       env=dict(os.environ, MYPYPATH=str(stubs)), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
