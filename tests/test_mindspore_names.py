"""docs/mindspore_names.md tells the truth: every name it marks provided imports from the
matching msops namespace and is not a stub; every MindSpore name msops exports is marked
provided; the file is what tools/mindspore_names.py writes; the notes name missing names."""
import ast
import functools
import importlib
import importlib.util
import inspect
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_tool():
    spec = importlib.util.spec_from_file_location("mindspore_names",
                                                  ROOT / "tools" / "mindspore_names.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _load_tool()
TABLE = (ROOT / "docs" / "mindspore_names.md").read_text()
NAMESPACES = {ns.mindspore: ns for ns in TOOL.NAMESPACES}


def _sections() -> dict:
    """{MindSpore namespace: its section's text}, read from the table itself."""
    parts = re.split(r"^## (\S+)\n", TABLE, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


SECTIONS = _sections()


def _provided(section: str) -> list:
    line = re.search(r"^\*\*Provided \((\d+) of (\d+)\):\*\* (.*)$", section, flags=re.M)
    names = re.findall(r"`([^`]+)`", line.group(3))
    assert len(names) == int(line.group(1))
    return names


def _missing(section: str) -> list:
    return [n for line in re.findall(r"^\* \*[^*]+\* \(\d+\): (.*)$", section, flags=re.M)
            for n in re.findall(r"`([^`]+)`", line)]


# -- stubs ---------------------------------------------------------------------------------
def _is_stub_body(fn) -> bool:
    """A body of nothing but a docstring, `pass`, `...` or `raise NotImplementedError`."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return False
    node = ast.parse(source).body[0]
    body = [s for s in node.body if not (isinstance(s, ast.Expr)
                                         and isinstance(s.value, ast.Constant))]
    if not body:
        return True
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


@functools.lru_cache(maxsize=None)
def _msops_classes() -> frozenset:
    """Every class defined in msops (to tell abstract bases, which msops subclasses)."""
    import msops
    seen, todo = set(), [msops]
    classes = set()
    while todo:
        mod = todo.pop()
        if mod.__name__ in seen:
            continue
        seen.add(mod.__name__)
        for value in vars(mod).values():
            if inspect.ismodule(value) and value.__name__.startswith("msops."):
                todo.append(value)
            elif inspect.isclass(value) and (value.__module__ or "").startswith("msops"):
                classes.add(value)
    return frozenset(classes)


def is_stub(value, classes: set) -> bool:
    """A function whose body does nothing (or raises NotImplementedError); a class one of
    whose own methods is such a body, unless msops subclasses it (an abstract base); a
    primitive class that cannot infer or run (the base's NotImplementedError methods)."""
    from msops.primitives.primitive import Primitive
    if inspect.isfunction(value):
        return _is_stub_body(value)
    if not inspect.isclass(value):
        return False
    subclassed = any(c is not value and issubclass(c, value) for c in classes)
    if issubclass(value, Primitive) and not subclassed:
        no_kernel = value.kernel is Primitive.kernel and value.lower is Primitive.lower
        no_infer = value.infer is Primitive.infer and (
            value.infer_shape is Primitive.infer_shape or value.infer_dtype is Primitive.infer_dtype)
        if no_kernel or no_infer:
            return True
    own = [v for v in vars(value).values() if inspect.isfunction(v)]
    return not subclassed and any(_is_stub_body(fn) for fn in own)


def test_the_stub_check_catches_stubs():
    def stub(x):
        """Does nothing yet."""
        raise NotImplementedError("later")

    def real(x):
        return x

    class Half:
        def construct(self, x):
            pass
    assert is_stub(stub, set()) and not is_stub(real, set()) and is_stub(Half, set())


# -- the table -----------------------------------------------------------------------------
def test_the_table_is_what_the_generator_writes():
    assert TABLE == TOOL.render(), "run: python tools/mindspore_names.py"


def test_every_namespace_has_a_section():
    assert list(SECTIONS) == list(NAMESPACES)


@pytest.mark.parametrize("namespace", list(NAMESPACES))
def test_provided_names_import_and_are_not_stubs(namespace):
    module = importlib.import_module(NAMESPACES[namespace].msops)
    classes = _msops_classes()
    provided = _provided(SECTIONS[namespace])
    absent = [n for n in provided if not hasattr(module, n)]
    assert absent == []
    stubs = [n for n in provided if is_stub(getattr(module, n), classes)]
    assert stubs == []


@pytest.mark.parametrize("namespace", list(NAMESPACES))
def test_every_mindspore_name_msops_exports_is_marked_provided(namespace):
    ns = NAMESPACES[namespace]
    module = importlib.import_module(ns.msops)
    reference = set(TOOL.read_reference(ns.stem).names)
    exported = set(getattr(module, "__all__", ())) | {
        n for n in dir(module) if not n.startswith("_")
        and not inspect.ismodule(getattr(module, n))}
    section = SECTIONS[namespace]
    assert sorted((exported & reference) - set(_provided(section))) == []
    # and the table's two lists split the reference list exactly
    assert sorted(_provided(section) + _missing(section)) == sorted(reference)


def test_reference_lists_say_where_they_come_from_and_hold_each_name_once():
    for ns in TOOL.NAMESPACES:
        ref = TOOL.read_reference(ns.stem)
        assert re.match(r"MindSpore \d+\.\d+\.\d+, ", ref.header[0]), ns.stem
        assert len(ref.names) == len(set(ref.names)), ns.stem
        assert all(n.isidentifier() for n in ref.names), ns.stem


def test_notes_are_about_missing_mindspore_names():
    notes = TOOL.read_notes()
    assert notes
    for (namespace, name) in notes:
        assert namespace in NAMESPACES, namespace
        assert name in _missing(SECTIONS[namespace]), f"{namespace}.{name} is not missing"


def test_api_md_links_the_table():
    assert "(mindspore_names.md)" in (ROOT / "docs" / "api.md").read_text()
