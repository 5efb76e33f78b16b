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
