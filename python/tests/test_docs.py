"""The examples of docs/PYTHON.md run and do what the page says."""
import io
import os
import re
import sys

import pytest

from conftest import ROOT

DOC = os.path.join(ROOT, "docs", "PYTHON.md")


def _block(title):
    text = open(DOC, encoding="utf-8").read()
    section = text.split("### " + title, 1)[1]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_streaming_dedup(tmp_path, monkeypatch):
    first, batched = _block("Streaming dedup")[:2]
    lines = ["a\n", "b\n", "a\n", "c\n", "b\n", "d\n"] * 3
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(lines)))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    exec(compile(first, "PYTHON.md", "exec"), {})
    assert out.getvalue() == "a\nb\nc\nd\n"
    assert (tmp_path / "seen.bf").exists()
    ns = {}
    exec(compile(batched, "PYTHON.md", "exec"), ns)
    import bloomkit
    seen = bloomkit.Bloom(1000, 0.001)
    assert list(ns["dedup"](iter(["x", "y", "z"] * 50), seen, block=3)) == ["x", "y", "z"]
    # the caveat the page states: a new key repeated within one block passes twice
    assert list(ns["dedup"](iter(["n", "n", "x"]), seen, block=3)) == ["n", "n"]


def test_join_prefilter():
    pytest.importorskip("pandas", reason="the example needs pandas (python3-pandas), not installed here")
    code = _block("numpy and pandas: a join prefilter")[0]
    code = code.replace("5_000_000", "300_000").replace("2_000_000", "200_000")    # the same, smaller
    ns = {}
    exec(compile(code, "PYTHON.md", "exec"), ns)
    events, customers, maybe, joined = ns["events"], ns["customers"], ns["maybe"], ns["joined"]
    exact = events.merge(customers, left_on="customer", right_on="id")
    assert len(joined) == len(exact)            # no row with a match was dropped
    assert maybe.sum() < len(exact) + 0.02 * len(events)


def test_join_prefilter_numpy_part():
    """The same prefilter without pandas: the numpy arrays the example hands over."""
    import numpy as np

    import bloomkit
    ids = np.arange(0, 2_000_000, 7, dtype=np.int64)
    events = np.random.default_rng(1).integers(0, 10_000_000, 1_000_000)
    f = bloomkit.Blocked(len(ids), 0.01)
    f.add_many(ids)
    maybe = np.frombuffer(f.contains_many(events), dtype=bool)
    truth = np.isin(events, ids)
    assert not (truth & ~maybe).any()
    assert (maybe & ~truth).sum() < 0.015 * (~truth).sum()


def test_constructor_table_states_the_code_defaults():
    """The "The types" table of docs/PYTHON.md: every `name=value` default it shows is the default of
    the real constructor (inspect.signature) and what a filter made with defaults reports."""
    import ast
    import inspect

    import bloomkit
    text = open(DOC, encoding="utf-8").read().split("## The types", 1)[1].split("\n## ", 1)[0]
    rows = [l for l in text.splitlines() if l.startswith("| `")]
    classes = [n for n in bloomkit.__all__ if n != "Filter" and isinstance(getattr(bloomkit, n), type)
               and issubclass(getattr(bloomkit, n), bloomkit.Filter)]
    for cls in classes:             # every filter class of the module has its row
        assert any(r.startswith("| `%s`" % cls) for r in rows), cls
    checked = 0
    for row in rows:
        for cls, args in re.findall(r"`([A-Z][a-z]+)\((.*?)\)`", row):
            real = inspect.signature(getattr(bloomkit, cls)).parameters
            for name, value in re.findall(r"(\w+)=([^,]+)", args):
                value = value.split(" \\|")[0].strip()
                if re.fullmatch(r"[A-Za-z]", value):
                    continue        # a placeholder of a call shown with arguments (window_ms=T)
                got = real[name].default
                assert got == ast.literal_eval(value), (cls, name, value, got)
                checked += 1
    assert checked >= 20, checked
    assert bloomkit.Scalable().tightening == ast.literal_eval(
        re.search(r"Scalable\(.*?tightening=([0-9.]+)", text).group(1))
def test_sketches_example():
    code = _block("Sketches")[0]  # the section's own block (the later ones belong to other sections)
    assert "TopK" in code and "CountMinSketch" in code
    exec(compile(code, "PYTHON.md", "exec"), {})
