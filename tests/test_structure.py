"""The shape of the code: no module of awf imports itself round a cycle, and each layer imports
only the layers below it (cli -> view -> engine -> agents -> record).

Every import counts: at the top of a module, inside a function (the lazy ones that keep start-up
fast), and under TYPE_CHECKING, since each is a dependency a reader has to hold."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "awf"
LAYERS = ["awf.cli", "awf.view", "awf.engine", "awf.agents", "awf.record"]  # each above the next
GENERATED = "awf.record._validators"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        if not name.startswith(GENERATED):
            found[name] = path
    return found


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """The modules of awf that one import statement reaches."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            package = ".".join([*base, node.module] if node.module else base)
        else:
            package = node.module or ""
        # `from .pkg import name` reaches pkg.name when that is a module, else pkg itself.
        targets = [f"{package}.{alias.name}" for alias in node.names]
        targets = [target if target in modules else package for target in targets]
    reached = []
    for target in targets:
        while target not in modules and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in modules and target != module:
            reached.append(target)
    return reached


def import_graph() -> dict[str, set[str]]:
    """Each module of awf, and the modules of awf it imports anywhere in its text."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        graph[module] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[module].update(_imported(module, path, node, modules))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each group of modules that import each other, as the path round it."""
    found: list[list[str]] = []
    state: dict[str, str] = {}  # "open" while on the path, "done" once every way from it is known

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                found.append([*path[path.index(imported) :], imported])
            elif imported not in state:
                visit(imported, path)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    return found


def layer(module: str) -> int | None:
    for depth, name in enumerate(LAYERS):
        if module == name or module.startswith(name + "."):
            return depth
    return None


def test_no_module_of_awf_imports_itself_round_a_cycle() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


def test_each_layer_imports_only_the_layers_below_it() -> None:
    upward = []
    for module, imported in sorted(import_graph().items()):
        here = layer(module)
        if here is None:
            continue  # the `awf` and `awf.testing` facades stand on top of every layer
        for target in sorted(imported - {"awf"}):  # the root, which any import of awf loads, keeps __version__
            there = layer(target)
            if there is None or there < here:
                upward.append(f"{module} imports {target}")
    assert not upward, "imports that go up a layer:\n" + "\n".join(upward)


def test_the_finder_sees_an_upward_import_and_a_cycle() -> None:
    # The two tests above hold only if the graph is read right: one known edge of each layer pair.
    graph = import_graph()
    assert "awf.record.files" in graph["awf.record.folder"]  # a relative import, at the top
    assert "awf.agents.agent" in graph["awf.engine.attempt_agents"]  # a lazy one, inside a function
    assert "awf.engine.start_point" in graph["awf.view.preview"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert layer("awf.cli.app") == 0 and layer("awf.record") == 4 and layer("awf.testing.runner") is None


# Where run.jsonl is read from: record/log.py's line iterator, and the few that hold one of its files.
LOG_READERS = {
    "awf.record.log",
    "awf.record.folder",
    "awf.record.summary",
    "awf.engine.cost_tally",
    "awf.engine.attempt_agents",
    "awf.view.follow",
    "awf.view.traces",  # the lines an attempt appends, read on as it goes for its spans
}


def test_the_log_is_read_only_through_record_log_and_by_its_known_readers():
    calls = re.compile(r"\b(open_log|lines_of|raw_lines|lines_at)\(")
    readers = {name for name, path in _modules().items() if calls.search(path.read_text())}
    assert readers <= LOG_READERS, f"a new reader of run.jsonl: {sorted(readers - LOG_READERS)}"


# The reading side of the record is typed a little more at each change, never less. JSON that
# comes from outside awf has no shape awf could promise, and is held as it came: an agent CLI's
# own events, reports and session files (each harness, the kit they share, the usage readers),
# and JSON Schemas. Everywhere else a dict[str, Any] is a record awf wrote and has not typed yet.
JSON_BOUNDARY = {
    "awf.agents.harness",  # the harness protocol: a runtime's options, a turn's usage as reported
    "awf.agents.kit",
    "awf.agents.headless",  # a headless agent's event stream
    "awf.agents.usage",  # token counts read from an agent's session file
    "awf.record.schemas",
    "awf.engine.schema_text",  # a JSON Schema said in words
}
LOOSE_DICTS = 149  # in all of awf
LOOSE_RECORD_DICTS = 57  # outside it; under the goal of 60


def _loose_dicts() -> tuple[int, int]:
    counts = {name: path.read_text().count("dict[str, Any]") for name, path in _modules().items()}
    outside = {
        name: count
        for name, count in counts.items()
        if name not in JSON_BOUNDARY and not name.startswith("awf.agents.harnesses.")
    }
    return sum(counts.values()), sum(outside.values())


def test_loose_dicts_do_not_grow():
    count, outside = _loose_dicts()
    assert count <= LOOSE_DICTS, f"{count} dict[str, Any] in awf (at most {LOOSE_DICTS}): type what you read"
    assert outside <= LOOSE_RECORD_DICTS, (
        f"{outside} dict[str, Any] outside the JSON boundary (at most {LOOSE_RECORD_DICTS}): type what you read"
    )


def test_every_package_of_awf_is_installed():
    """pyproject lists awf's packages one by one: a folder of modules left out is missing from a
    wheel (the README's `pip install .`), though an editable install finds it."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(PACKAGE.parent).parts) for init in PACKAGE.rglob("__init__.py")}
    assert found - listed == set(), f"packages of awf not in pyproject's [tool.setuptools] packages: {found - listed}"
