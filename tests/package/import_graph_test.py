"""The package's import graph: folders in data-flow order, no cycle.

Every `keras_elmo` import, at module level or inside a function, is an
edge from the importing folder to the imported one. The folders are
listed below in data-flow order (docs/ARCHITECTURE.md's layout map);
each may import only itself and folders before it, so the folder graph
has no cycle, and no
function-level import exists to dodge one (moving any of them to the top
of its module would create none). Inside a folder the same holds for the
module graph. Root modules (`version.py`, ...) count as folders of their
own; `__init__` is the package's `__init__.py`, the public API.
"""

import ast
import os

import keras_elmo

PACKAGE_DIR = os.path.dirname(os.path.abspath(keras_elmo.__file__))

# Data-flow order: each may import only itself and what comes before it.
LAYERS = [
    "version",
    "utils",
    "api_export",
    "testing",
    "text",
    "ops",
    "layers",
    "data",
    "config",
    "weights",
    "presets",
    "models",
    "compat",
    "export",
    "embedding",
    "training",
    "__init__",
    "integrations",
    "cli",
]


def _module_name(path):
    rel = os.path.relpath(path, PACKAGE_DIR)[: -len(".py")]
    parts = ["keras_elmo"] + rel.split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _folder(module):
    """`keras_elmo.layers.highway` -> `layers`; the root -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path):
    """`[(imported module, line, at module level)]` of one file."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    top = set(id(node) for node in tree.body)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            base = node.module or ""
            # `from keras_elmo import layers` imports keras_elmo.layers.
            names = [f"{base}.{alias.name}" for alias in node.names]
            if base != "keras_elmo":
                names = [base]
        else:
            continue
        for name in names:
            if name == "keras_elmo" or name.startswith("keras_elmo."):
                found.append((name, node.lineno, id(node) in top))
    return found


def _all_imports():
    edges = []
    for root, _, files in os.walk(PACKAGE_DIR):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                source = _module_name(path)
                for target, line, top in _imports(path):
                    edges.append((source, target, line, top))
    return edges


def test_every_folder_is_listed():
    folders = {_folder(source) for source, *_ in _all_imports()}
    folders |= {
        name[: -len(".py")] if name.endswith(".py") else name
        for name in os.listdir(PACKAGE_DIR)
        if name.endswith(".py")
        or os.path.isfile(os.path.join(PACKAGE_DIR, name, "__init__.py"))
    }
    assert sorted(folders) == sorted(LAYERS)


def test_folders_import_only_earlier_folders():
    rank = {name: i for i, name in enumerate(LAYERS)}
    backward = [
        f"{source}:{line} imports {target} "
        f"({'module level' if top else 'inside a function'})"
        for source, target, line, top in _all_imports()
        if rank[_folder(target)] > rank[_folder(source)]
    ]
    assert backward == []


def _find_cycle(graph):
    """A cycle of `graph` (`{node: set(nodes)}`) as a list, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_no_module_cycle_even_with_function_level_imports():
    graph = {}
    for source, target, _, _ in _all_imports():
        if target != source and not source.startswith(target + "."):
            graph.setdefault(source, set()).add(target)
    assert _find_cycle(graph) is None


def test_cycle_finder_finds_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [
        "a",
        "b",
        "c",
        "a",
    ]
    assert _find_cycle({"a": {"b"}, "b": {"c"}}) is None


def _readme_layout_folders():
    """The folders docs/ARCHITECTURE.md's `## Layout` table names, in its
    order."""
    readme = os.path.join(PACKAGE_DIR, "..", "docs", "ARCHITECTURE.md")
    with open(readme, encoding="utf-8") as f:
        section = f.read().split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    folders = []
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            for name in first_cell.split("`")[1::2]:
                folders.append(name.rstrip("/").removesuffix(".py"))
    return folders


def test_readme_layout_map_follows_the_import_order():
    folders = _readme_layout_folders()
    assert {"text", "layers", "models", "cli"} <= set(folders)
    assert set(folders) <= set(LAYERS)
    ranks = [LAYERS.index(name) for name in folders]
    assert ranks == sorted(ranks), folders


def test_only_the_embed_command_imports_beam_and_spark():
    """Beam and Spark sit behind one boundary: the core never imports
    them, only `keras-elmo embed`'s runners do (the deprecated
    `keras_elmo.beam` / `keras_elmo.spark` paths are
    `keras_elmo.MOVED_MODULES` entries, not modules)."""
    allowed = {
        "keras_elmo.cli._embed_beam",
        "keras_elmo.cli._embed_spark",
    }
    # The engines' log levels and failure words, which import no engine:
    # the command line tells an engine's failure by them.
    neutral = "keras_elmo.integrations.engine_logging"
    edges = _all_imports()
    importers = sorted(
        {
            source
            for source, target, _, _ in edges
            if target.startswith("keras_elmo.integrations")
            and not source.startswith("keras_elmo.integrations")
            and target != neutral
        }
    )
    assert set(importers) == allowed, importers
    assert {
        source
        for source, target, _, _ in edges
        if target == neutral
        and not source.startswith("keras_elmo.integrations")
    } <= allowed | {"keras_elmo.cli.main"}
    path = os.path.join(PACKAGE_DIR, "integrations", "engine_logging.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert "logging" in imported
    assert not imported & {"apache_beam", "pyspark", "py4j"}, imported
