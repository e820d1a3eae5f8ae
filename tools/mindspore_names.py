"""The MindSpore-names table: which of MindSpore's public names msops provides.

    python tools/mindspore_names.py            # rewrite docs/mindspore_names.md
    python tools/mindspore_names.py --check    # exit 1 when docs/mindspore_names.md is stale
    python tools/mindspore_names.py --extract  # with mindspore installed: rewrite the lists

The reference lists (docs/mindspore_names/<namespace>.txt) are facts about MindSpore's
API, read once from an installed MindSpore by `--extract` and committed; the table is
rendered from them and from what msops exports, so it changes when msops gains a name.
`notes.txt` there holds a few words for the most used missing names. tests/
test_mindspore_names.py checks that the committed table is what `render()` writes.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
LISTS = ROOT / "docs" / "mindspore_names"
TABLE = ROOT / "docs" / "mindspore_names.md"
NOTES = LISTS / "notes.txt"


class Namespace(NamedTuple):
    """One MindSpore namespace msops mirrors: its reference list's file stem, MindSpore's
    module and msops's."""
    stem: str
    mindspore: str
    msops: str


NAMESPACES = (
    Namespace("mindspore", "mindspore", "msops"),
    Namespace("ops", "mindspore.ops", "msops.ops"),
    Namespace("nn", "mindspore.nn", "msops.nn"),
    Namespace("communication", "mindspore.communication", "msops.communication"),
    Namespace("parallel", "mindspore.parallel", "msops.parallel"),
    Namespace("parallel_cell_wrapper", "mindspore.parallel._cell_wrapper",
              "msops.parallel._cell_wrapper"),
    Namespace("train", "mindspore.train", "msops.train"),
    Namespace("dataset", "mindspore.dataset", "msops.dataset"),
    Namespace("initializer", "mindspore.common.initializer", "msops.common.initializer"),
)


# -- reading the lists --------------------------------------------------------------------
class Reference(NamedTuple):
    """A parsed reference list: its header comment lines and (group, names) in file order."""
    header: list
    groups: list

    @property
    def names(self) -> list:
        return [name for _, names in self.groups for name in names]


def read_reference(stem: str) -> Reference:
    """Parse docs/mindspore_names/<stem>.txt: '#' lines are the header, '[group]' starts a
    group, every other non-blank line is one name."""
    header: list = []
    groups: list = []
    for line in (LISTS / f"{stem}.txt").read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            header.append(line.lstrip("# ").rstrip())
        elif line.startswith("[") and line.endswith("]"):
            groups.append((line[1:-1], []))
        else:
            if not groups:
                raise ValueError(f"{stem}.txt: the name {line!r} comes before any [group].")
            groups[-1][1].append(line)
    return Reference(header, groups)


def read_notes() -> dict:
    """notes.txt: '<mindspore namespace>.<Name>: a few words' a line -> {(ns, name): words}."""
    notes = {}
    for line in NOTES.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        qualified, words = line.split(": ", 1)
        ns, name = qualified.rsplit(".", 1)
        notes[(ns, name)] = words
    return notes


# -- what msops provides -----------------------------------------------------------------
def provides(module: ModuleType, name: str) -> bool:
    """msops's namespace has `name`; a submodule counts only where MindSpore's name is a
    module too (`mindspore.dtype`), not a module merely imported into a package."""
    if not hasattr(module, name):
        return False
    value = getattr(module, name)
    return not inspect.ismodule(value) or module.__name__ == "msops"


def exports(module: ModuleType) -> list:
    """The public names an msops namespace declares: its `__all__`, or without one its
    public non-module attributes less what it imports from `typing` and `__future__`."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    names = []
    for name in dir(module):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        if inspect.ismodule(value) or getattr(value, "__module__", "") in ("typing",
                                                                             "__future__"):
            continue
        names.append(name)
    return names


# -- rendering ---------------------------------------------------------------------------
def _codes(names: list) -> str:
    return ", ".join(f"`{n}`" for n in names)


def render() -> str:
    """The text of docs/mindspore_names.md for the committed lists and the importable msops."""
    notes = read_notes()
    sections = []
    summary = []
    for ns in NAMESPACES:
        ref = read_reference(ns.stem)
        module = importlib.import_module(ns.msops)
        names = ref.names
        have = sorted((n for n in names if provides(module, n)), key=str.lower)
        missing_groups = [(group, [n for n in group_names if not provides(module, n)])
                          for group, group_names in ref.groups]
        missing_groups = [(g, ns_) for g, ns_ in missing_groups if ns_]
        n_missing = sum(len(g[1]) for g in missing_groups)
        summary.append(f"| [`{ns.mindspore}`](#{_anchor(ns.mindspore)}) | `{ns.msops}` | "
                       f"{len(names)} | {len(have)} | {n_missing} |")
        lines = [f"## {ns.mindspore}", "",
                 f"msops namespace: `{ns.msops}`. Reference: `docs/mindspore_names/"
                 f"{ns.stem}.txt` ({ref.header[0] if ref.header else ''})", "",
                 f"**Provided ({len(have)} of {len(names)}):** {_codes(have) or 'none'}", ""]
        noted = [(n, notes[(ns.mindspore, n)]) for g in missing_groups for n in g[1]
                 if (ns.mindspore, n) in notes]
        if noted:
            lines += ["**Missing, most used (what to do instead):**", ""]
            lines += [f"* `{n}`: {words}" for n, words in noted]
            lines.append("")
        if missing_groups:
            lines += [f"**Missing ({n_missing}), by MindSpore module:**", ""]
            lines += [f"* *{group}* ({len(g_names)}): {_codes(g_names)}"
                      for group, g_names in missing_groups]
            lines.append("")
        extra = sorted(set(exports(module)) - set(names))
        if extra:
            lines += [f"**msops names outside this reference list** (msops additions, or "
                      f"MindSpore names its `__all__` leaves out): {_codes(extra)}", ""]
        sections.append("\n".join(lines))
    head = [
        "# MindSpore names in msops",
        "",
        "Every public name of the MindSpore namespaces msops mirrors, and whether msops "
        "provides it (same name, same namespace; behaviour as described in "
        "[api.md](api.md)). Generated by `python tools/mindspore_names.py` from MindSpore's "
        "name lists in `docs/mindspore_names/` and from what msops exports: do not edit by "
        "hand. `tests/test_mindspore_names.py` fails when this file is stale, when a name "
        "marked provided does not import or is a stub, or when msops exports a MindSpore "
        "name the table calls missing. A few words on the most used missing names come from "
        "`docs/mindspore_names/notes.txt`.",
        "",
        "| MindSpore namespace | msops namespace | MindSpore names | provided | missing |",
        "| --- | --- | --- | --- | --- |",
        *summary,
        "",
    ]
    return "\n".join(head) + "\n" + "\n".join(sections)


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, '.' dropped, spaces to '-'."""
    return "".join(c for c in title.lower() if c.isalnum() or c in "-_ ").replace(" ", "-")


# -- extracting the lists from an installed MindSpore ------------------------------------
#: families of `mindspore.ops.operations` / `mindspore.ops.function`, searched in order
#: for the group of an ops name (a generated primitive is re-exported by its family)
_PRIM_FAMILIES = ("comm_ops", "nn_ops", "math_ops", "array_ops", "random_ops", "image_ops",
                  "debug_ops", "control_ops", "sparse_ops", "linalg_ops", "spectral_ops",
                  "other_ops", "custom_ops", "inner_ops", "reshard_ops")
_FUNC_FAMILIES = ("comm_func", "nn_func", "math_func", "array_func", "random_func",
                  "clip_func", "linalg_func", "image_func", "spectral_func", "fft_func",
                  "sparse_func", "sparse_unary_func", "debug_func", "reshard_func",
                  "parameter_func", "vmap_func", "other_func")
#: packages with one file per class: names are grouped by the package
_COLLAPSE = ("nn.optim", "train.metrics", "train.callback", "nn.probability")


def _group(ns: Namespace, value: object, name: str) -> str:
    import mindspore  # only --extract runs this
    if isinstance(value, mindspore.dtype.Type):
        return "common.dtype"
    if ns.stem == "ops":
        families = ((_PRIM_FAMILIES, "mindspore.ops.operations", "primitives")
                    if inspect.isclass(value) else
                    (_FUNC_FAMILIES, "mindspore.ops.function", "functional")
                    if inspect.isfunction(value) or inspect.isbuiltin(value) else None)
        if families is not None:
            fams, package, label = families
            for fam in fams:
                mod = importlib.import_module(f"{package}.{fam}")
                if name in getattr(mod, "__all__", ()) or (
                        inspect.isclass(value) and getattr(mod, name, None) is value):
                    return f"{label}: {fam}"
    module = getattr(value, "__module__", None)
    if not isinstance(module, str) or not (inspect.isclass(value) or callable(value)):
        return "values"
    module = module.removeprefix("mindspore.")
    for prefix in _COLLAPSE:
        if module.startswith(prefix + "."):
            return prefix
    return module


def extract() -> None:
    """Rewrite docs/mindspore_names/<stem>.txt from the installed MindSpore: each namespace's
    `__all__` (duplicates, names it lists but does not define, the characters of the
    version string that `mindspore.__all__` extends itself with, private `_names`, and
    submodules other than
    `mindspore.dtype` dropped); `_cell_wrapper`, which has no `__all__`, gives the public
    names it defines itself."""
    import mindspore
    source = (f"MindSpore {mindspore.__version__}, read from the installed PyPI package "
              f"`mindspore=={mindspore.__version__}` by `tools/mindspore_names.py --extract`")
    LISTS.mkdir(parents=True, exist_ok=True)
    for ns in NAMESPACES:
        module = importlib.import_module(ns.mindspore)
        if hasattr(module, "__all__"):
            raw = list(dict.fromkeys(module.__all__))
            what = f"`{ns.mindspore}.__all__`"
        else:
            raw = [n for n in dir(module) if not n.startswith("_")
                   and getattr(getattr(module, n), "__module__", None) == ns.mindspore]
            what = f"the public names `{ns.mindspore}` defines"
        groups: dict = {}
        for name in raw:
            if not name.isidentifier() or name.startswith("_") or not hasattr(module, name):
                continue
            value = getattr(module, name)
            if inspect.ismodule(value) and not (ns.stem == "mindspore" and name == "dtype"):
                continue
            groups.setdefault(_group(ns, value, name), []).append(name)
        lines = [f"# {source}", f"# {ns.mindspore}: {what}",
                 "# format: one name a line; '[group]' starts the group of the names below "
                 "(the MindSpore module defining them)"]
        for group in sorted(groups):
            lines += ["", f"[{group}]", *sorted(groups[group])]
        (LISTS / f"{ns.stem}.txt").write_text("\n".join(lines) + "\n")


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when docs/mindspore_names.md is not what would be written")
    parser.add_argument("--extract", action="store_true",
                        help="rewrite the reference lists from an installed MindSpore")
    args = parser.parse_args(argv)
    if args.extract:
        extract()
        return 0
    sys.path.insert(0, str(ROOT))      # this checkout's msops, wherever the tool runs from
    text = render()
    if args.check:
        if TABLE.read_text() != text:
            print(f"{TABLE.relative_to(ROOT)} is stale: run python tools/mindspore_names.py")
            return 1
        return 0
    TABLE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
