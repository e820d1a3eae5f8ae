"""The package's layers, read from the source with `ast`: imports only ever point down.

Every `import msops...` / `from msops... import` anywhere in a module counts, including
lazy imports inside functions, so a layer cannot reach upward even at call time.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1] / "msops"

#: bottom to top: a layer may import itself and the layers before it
LAYERS = ["common", "context", "device", "communication", "primitives", "ops", "graph", "mint",
          "parallel", "pipeline", "vmap", "autodiff", "derivatives", "jit", "nn", "dataset", "train"]
#: modules whose MindSpore spelling puts them in a lower package than their layer
RELOCATED = {"msops.parallel._cell_wrapper": "train",   # its cells are nn.Cells
             "msops.parallel.auto_parallel": "nn", "msops.parallel.nn": "nn",
             # functional collectives over the primitives (mindspore.communication.comm_func)
             "msops.communication.comm_func": "ops", "msops.communication._comm_call": "ops",
             # mindspore.ops.communication is mint.distributed's functions
             "msops.ops.communication": "mint",
             "msops.amp": "train",
             # mint's layers and optimizer are over msops.nn (mint imports them lazily);
             # mint's functions (and mint.nn.functional) stay in the mint layer, over ops
             "msops.mint.nn": "nn", "msops.mint.nn.layers": "nn",
             "msops.mint.optim": "nn"}      # mindspore.amp: the loss-scale managers
#: the package's face and entry points sit above every layer
TOP = {"__init__", "__main__", "cli"}


def _layer(module: str) -> str:
    """`msops.graph.ir` -> "graph"; `msops` (the package itself) -> "__init__"."""
    if module in RELOCATED:
        return RELOCATED[module]
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every msops module `path` (a file of the package at `root`) imports, relative
    imports resolved."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from msops import ops` imports the module msops.ops
            found.update(f"{base}.{a.name}" if base == "msops" else base for a in node.names)
    return {m for m in found if m == "msops" or m.startswith("msops.")}


def _edges() -> list[tuple[str, str]]:
    return [(_module_name(p), m) for p in sorted(ROOT.rglob("*.py")) for m in _imports(p)]


def test_the_layers_cover_every_module():
    layers = {_layer(_module_name(p)) for p in ROOT.rglob("*.py")}
    assert layers <= set(LAYERS) | TOP, layers - set(LAYERS) - TOP


def test_imports_only_point_down():
    upward = []
    for src, dst in _edges():
        a, b = _layer(src), _layer(dst)
        if a in TOP:
            continue
        if b in TOP or LAYERS.index(b) > LAYERS.index(a):
            upward.append(f"{src} imports {dst} ({a}/ may import only "
                          f"{', '.join(LAYERS[:LAYERS.index(a) + 1])})")
    assert upward == []


@pytest.mark.parametrize("layer,never", [
    ("graph", {"parallel", "pipeline", "nn"}),
    ("parallel", {"pipeline", "autodiff", "nn"}),
    ("primitives", {"graph", "parallel", "pipeline", "nn", "ops"}),
    ("communication", {"primitives", "graph", "parallel", "nn"}),
    ("common", set(LAYERS) - {"common"}),
])
def test_named_boundaries(layer, never):
    crossing = [(s, d) for s, d in _edges() if _layer(s) == layer and _layer(d) in never]
    assert crossing == []


def test_a_lazy_upward_import_is_caught(tmp_path):
    bad = tmp_path / "msops" / "graph" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("def f():\n    from msops.parallel.partition import apply_parallel\n"
                   "    from ..parallel import context\n")
    assert _imports(bad, tmp_path / "msops") == {"msops.parallel.partition", "msops.parallel"}
