"""The rules of a stage a workflow's source breaks, found by reading it, never by running it.

An attempt finds a broken rule only when it reaches it, after the agents before it have been
paid for; most breaks are plain in the source. Each rule has a short id, stable across releases,
that `# awf: ignore[ID]` names on the line a finding is reported at. The checks read what the
source says and guess nothing they cannot see: a name the workflow computes, or an agent it got
from elsewhere, passes unremarked.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass

from ..record.names import stage_name_problem

# Each rule's id and what it guards, in the order docs/check.md lists them.
RULES: dict[str, str] = {
    "set-in-stage": "a variable a stage's work sets, read after the stage",
    "turn-between-stages": "an agent turn outside any stage",
    "effect-between-stages": "a push, a post or a process started outside any stage",
    "write-between-stages": "a file written outside any stage",
    "computed-name": "a stage name built at run time where a literal would do",
    "bad-name": "a stage name the name rules refuse",
    "duplicate-name": "a stage name entered twice in one workflow",
    "not-awaited": "wf.stage(...) not awaited",
    "value-without-result": "a stage with no result whose work returns a value",
    "no-version": "@awf.workflow without a version",
    "not-repeatable": "prepare or id that reads the clock or randomness",
}


@dataclass(frozen=True)
class Finding:
    """One broken rule: where, which, what is wrong and what to do."""

    line: int
    rule: str
    message: str
    fix: str

    def text(self, file: str) -> str:
        return f"{file}:{self.line}: {self.rule}: {self.message}; {self.fix}"

    def data(self, file: str) -> dict[str, object]:
        return {"file": file, "line": self.line, "rule": self.rule, "message": self.message, "fix": self.fix}


def check_source(source: str | bytes, filename: str = "<workflow>") -> list[Finding]:
    """The findings of a workflow file's text, by line, less those its comments silence.

    Raises SyntaxError (or ValueError, for a NUL byte) when the text is not Python."""
    tree = ast.parse(source, filename)
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    found = _Module(tree).findings()
    # Tokenizing costs more than the parse; a file that silences nothing is never tokenized.
    silenced = _silenced(text) if "awf:" in text else {}
    kept = [
        finding
        for finding in found
        if not (finding.line in silenced and (not silenced[finding.line] or finding.rule in silenced[finding.line]))
    ]
    return sorted(set(kept), key=lambda finding: (finding.line, finding.rule))


_IGNORE = re.compile(r"#\s*awf:\s*ignore(?:\[([^\]]*)\])?")


def _silenced(text: str) -> dict[int, set[str]]:
    """Line -> the rules its comment silences (an empty set: every rule)."""
    silenced: dict[int, set[str]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.COMMENT:
                continue
            match = _IGNORE.search(token.string)
            if match:
                rules = {rule.strip() for rule in (match[1] or "").split(",") if rule.strip()}
                silenced.setdefault(token.start[0], set()).update(rules)
                if not rules:
                    silenced[token.start[0]] = set()
    except (tokenize.TokenError, SyntaxError):
        pass
    return silenced


# What reads the clock or randomness: a module's name, or a module's name and one attribute.
_UNREPEATABLE_MODULES = {"time", "random", "secrets"}
_UNREPEATABLE_CALLS = {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("uuid", "uuid1"),
    ("uuid", "uuid4"),
    ("os", "urandom"),
}
_SUBPROCESS_CALLS = {"system", "popen", "spawnl", "spawnlp", "spawnv", "spawnvp", "execv", "execvp", "execl", "execlp"}
_ASYNC_PROCESSES = {"create_subprocess_exec", "create_subprocess_shell"}
_WRITE_MODE = re.compile(r"[rbtU]*[wax+][rwaxbt+U]*")
# A lambda's body that is plainly a value; a call's or a name's may be None.
_PLAIN_VALUES = (
    ast.Constant,
    ast.Dict,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.JoinedStr,
    ast.ListComp,
    ast.DictComp,
    ast.SetComp,
    ast.BinOp,
    ast.Compare,
)
_HTTP_MODULES = {"requests", "httpx", "aiohttp"}
_HTTP_WRITES = {"put", "patch", "delete"}
_MUTATORS = {
    "append",
    "extend",
    "insert",
    "add",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "remove",
    "discard",
    "clear",
    "appendleft",
}


def _dotted(node: ast.expr) -> list[str]:
    """`a.b.c` as ["a", "b", "c"]; [] for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return []


def _scope(node: ast.AST) -> list[ast.AST]:
    """The nodes below `node` in its own scope: not inside a nested function, lambda or class."""
    found: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        found.append(child)
        if not isinstance(child, _SCOPES):
            stack.extend(ast.iter_child_nodes(child))
    return found


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _names_bound(targets: list[ast.expr]) -> set[str]:
    return {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}


def _loop_names(loop: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """The names a loop binds each time round: its target's, and those set in its body."""
    bound = _names_bound([loop.target]) if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    bound |= {node.id for node in _scope(loop) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    return bound


def _parts(statement: ast.stmt) -> tuple[list[tuple[str, ast.expr]], list[tuple[str, list[ast.stmt]]]]:
    """A statement's own expressions and its blocks, each with the name of its field (a handler's
    and a case's block numbered, as each is a branch of its own)."""
    expressions: list[tuple[str, ast.expr]] = []
    blocks: list[tuple[str, list[ast.stmt]]] = []
    for name, value in ast.iter_fields(statement):
        if isinstance(value, ast.expr):
            expressions.append((name, value))
        elif not isinstance(value, list):
            continue
        elif value and isinstance(value[0], ast.stmt):
            blocks.append((name, value))
        elif name == "handlers":
            blocks += [(f"handler{n}", handler.body) for n, handler in enumerate(value)]
        elif name == "cases":
            blocks += [(f"case{n}", case.body) for n, case in enumerate(value)]
        else:
            for item in value:
                if isinstance(item, ast.expr):
                    expressions.append((name, item))
                elif isinstance(item, ast.withitem):
                    expressions.append((name, item.context_expr))
    return expressions, blocks


class _Module:
    """What a file's top level says: how it names awf, subprocess and os, its constants and functions."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.awf_modules: set[str] = set()
        self.workflow_names: set[str] = set()
        self.process_calls: set[str] = set()  # names imported from subprocess, or os.system itself
        self.modules: dict[str, str] = {}  # a local name -> the module it stands for
        self.imported_from: dict[str, str] = {}  # a local name -> the module it was imported from
        self.constants: dict[str, str] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.nodes = list(ast.walk(tree))
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.modules[local] = alias.name if alias.asname else local
                    if alias.name == "awf":
                        self.awf_modules.add(local)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    local = alias.asname or alias.name
                    self.imported_from[local] = node.module
                    if node.module == "awf" and alias.name == "workflow":
                        self.workflow_names.add(local)
                    elif node.module == "subprocess" or (node.module == "os" and alias.name in _SUBPROCESS_CALLS):
                        self.process_calls.add(local)
                    else:
                        self.modules.setdefault(local, alias.name)
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[statement.name] = statement
            elif (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                self.constants[statement.targets[0].id] = statement.value.value

    def findings(self) -> list[Finding]:
        found: list[Finding] = []
        for node in self.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorator = self._workflow_decorator(node)
                if decorator is not None:
                    found += self._declaration(decorator)
                    found += _Workflow(self, node).findings()
        return found

    def _workflow_decorator(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Call | None:
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call):
                continue
            words = _dotted(decorator.func)
            if (len(words) == 2 and words[0] in self.awf_modules and words[1] == "workflow") or (
                len(words) == 1 and words[0] in self.workflow_names
            ):
                return decorator
        return None

    def _declaration(self, decorator: ast.Call) -> list[Finding]:
        """no-version and not-repeatable: what @awf.workflow(...) declares."""
        found: list[Finding] = []
        given = {keyword.arg: keyword.value for keyword in decorator.keywords if keyword.arg}
        if "version" not in given and not any(keyword.arg is None for keyword in decorator.keywords):
            found.append(
                Finding(
                    decorator.lineno,
                    "no-version",
                    "the workflow has no version, so a continue cannot tell records made by code that has "
                    "changed what a stage returns",
                    'give it version="1.0.0", and raise the major when a stage\'s value changes shape',
                )
            )
        for what in ("prepare", "id"):
            value = given.get(what)
            body: ast.AST | None = value
            if isinstance(value, ast.Name) and value.id in self.functions:
                body = self.functions[value.id]
            if body is None:
                continue
            reads = self._unrepeatable(body)
            if reads is not None:
                found.append(
                    Finding(
                        reads.lineno,
                        "not-repeatable",
                        f"{what} reads {ast.unparse(reads)}, which differs on every attempt, "
                        f"so a continue {'gets other arguments' if what == 'prepare' else 'names another run'}",
                        "take it from the arguments after -- (or --id), or read it inside a stage",
                    )
                )
        return found

    def _unrepeatable(self, body: ast.AST) -> ast.expr | None:
        """The first read of the clock or of randomness in `body`."""
        for node in ast.walk(body):
            if isinstance(node, ast.Name) and node.id in self.imported_from:
                module = self.imported_from[node.id].split(".")[-1]
                if module in _UNREPEATABLE_MODULES or (module, node.id) in _UNREPEATABLE_CALLS:
                    return node
            if not isinstance(node, ast.Attribute):
                continue
            words = _dotted(node)
            if len(words) < 2:
                continue
            module = self.modules.get(words[0], words[0]).split(".")[-1]
            if module in _UNREPEATABLE_MODULES or (module, words[-1]) in _UNREPEATABLE_CALLS:
                return node
            if (words[-2], words[-1]) in _UNREPEATABLE_CALLS:
                return node
        return None


class _StageCall:
    """One wf.stage(...) of the body, with where it sits."""

    def __init__(
        self,
        call: ast.Call,
        awaited: bool,
        loops: list[set[str]],  # the names each enclosing loop binds, outermost first
        frames: list[tuple[tuple[int, str], int, bool]],  # (block, index in it, a return or stop after)
    ) -> None:
        self.call = call
        self.awaited = awaited
        self.loops = loops
        self.frames = frames
        self.name: str | None = None  # the literal the stage is named, when it has one
        self.work: ast.expr | None = None
        self.has_result = False


class _Walk:
    """The workflow's own scope as read: its stages, its calls, its nested functions."""

    def __init__(self) -> None:
        self.stages: list[_StageCall] = []
        self.calls: list[ast.Call] = []
        self.defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}


class _Workflow:
    """One @awf.workflow function: its body between stages, and each stage it enters."""

    def __init__(self, module: _Module, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.module = module
        self.node = node
        params = [*node.args.posonlyargs, *node.args.args]
        self.wf = params[0].arg if params else None
        self.walk = _Walk()
        self.agents: set[str] = set()
        # Read once: every node of the function, and the names it reads, by name.
        self.nodes = list(ast.walk(node))
        self.own = list(_scope(node))
        self.reads: dict[str, list[ast.Name]] = {}
        for below in self.nodes:
            if isinstance(below, ast.Name) and isinstance(below.ctx, ast.Load):
                self.reads.setdefault(below.id, []).append(below)

    def findings(self) -> list[Finding]:
        if self.wf is None:
            return []
        self._block(self.node.body, (id(self.node), "body"), [], [])
        for stage in self.walk.stages:
            self._read_call(stage)
        self.agents = {
            name
            for node in self.nodes
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr))
            and node.value is not None
            and any(self._is_open(call) for call in ast.walk(node.value))
            for name in _names_bound(node.targets if isinstance(node, ast.Assign) else [node.target])
        }
        found: list[Finding] = []
        for stage in self.walk.stages:
            found += self._stage_findings(stage)
        found += self._duplicates()
        found += self._between_stages()
        found += self._set_in_stage()
        return found

    # Reading the body -----------------------------------------------------------------------

    def _is_stage(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and _dotted(node.func) == [self.wf, "stage"]

    def _is_open(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and _dotted(node.func) == [self.wf, "agents", "open"]

    def _ends(self, statement: ast.stmt) -> bool:
        """Whether `statement` leaves the block: a return, a raise, or wf.stop(...)."""
        if isinstance(statement, (ast.Return, ast.Raise)):
            return True
        return (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and _dotted(statement.value.func) == [self.wf, "stop"]
        )

    def _block(
        self,
        statements: list[ast.stmt],
        key: tuple[int, str],
        loops: list[set[str]],
        frames: list[tuple[tuple[int, str], int, bool]],
    ) -> None:
        for index, statement in enumerate(statements):
            here = [*frames, (key, index, any(self._ends(later) for later in statements[index:]))]
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.walk.defs[statement.name] = statement
                continue
            if isinstance(statement, ast.ClassDef):
                continue
            inner = loops
            if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
                inner = [*loops, _loop_names(statement)]
            expressions, blocks = _parts(statement)
            for name, expression in expressions:
                # A loop's iterable is read once, before the loop.
                self._expression(expression, loops if name == "iter" else inner, here)
            for name, block in blocks:
                self._block(block, (id(statement), name), inner if name == "body" else loops, here)

    def _expression(
        self, node: ast.expr, loops: list[set[str]], frames: list[tuple[tuple[int, str], int, bool]]
    ) -> None:
        nodes = [node, *_scope(node)]
        awaited = {id(inner.value) for inner in nodes if isinstance(inner, ast.Await)}
        for inner in nodes:
            if not isinstance(inner, ast.Call):
                continue
            if self._is_stage(inner):
                within = loops + [
                    _names_bound([generator.target])
                    for comprehension in nodes
                    if isinstance(comprehension, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
                    and any(inner is below for below in ast.walk(comprehension))
                    for generator in comprehension.generators
                ]
                self.walk.stages.append(_StageCall(inner, id(inner) in awaited, within, frames))
            else:
                self.walk.calls.append(inner)

    def _read_call(self, stage: _StageCall) -> None:
        call = stage.call
        keywords = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}
        named = call.args[0] if call.args else keywords.get("name")
        stage.work = call.args[1] if len(call.args) > 1 else keywords.get("work")
        result = keywords.get("result")
        stage.has_result = result is not None and not (isinstance(result, ast.Constant) and result.value is None)
        stage.has_result = stage.has_result or any(keyword.arg is None for keyword in call.keywords)
        if isinstance(named, ast.Constant) and isinstance(named.value, str):
            stage.name = named.value
        elif isinstance(named, ast.Name) and named.id in self.module.constants:
            stage.name = self.module.constants[named.id]
        elif isinstance(named, ast.JoinedStr) and all(isinstance(part, ast.Constant) for part in named.values):
            stage.name = "".join(str(part.value) for part in named.values if isinstance(part, ast.Constant))

    # The rules ------------------------------------------------------------------------------

    def _stage_findings(self, stage: _StageCall) -> list[Finding]:
        call, found = stage.call, []
        if not stage.awaited:
            found.append(
                Finding(
                    call.lineno,
                    "not-awaited",
                    "wf.stage(...) is not awaited, so the stage never runs, or runs beside another",
                    "write await wf.stage(...), one stage at a time",
                )
            )
        named = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
        if named is not None:
            found += self._name_findings(stage, named)
        if not stage.has_result and stage.work is not None:
            returned = self._returned(stage.work)
            if returned is not None:
                found.append(
                    Finding(
                        returned.lineno,
                        "value-without-result",
                        f"the work of stage {stage.name or ast.unparse(named or call)} returns a value, "
                        "but the stage has no result, so the attempt fails when it returns",
                        "give the stage result=TYPE (or a JSON Schema) to keep the value, or return nothing",
                    )
                )
        return found

    def _name_findings(self, stage: _StageCall, named: ast.expr) -> list[Finding]:
        line = named.lineno
        if stage.name is not None:
            problem = stage_name_problem(stage.name)
            if problem:
                return [Finding(line, "bad-name", problem, "rename the stage")]
            return []
        if isinstance(named, ast.JoinedStr):
            # What the fixed parts allow: a placeholder stands in for each value put in.
            shape = "".join(str(part.value) if isinstance(part, ast.Constant) else "0" for part in named.values)
            problem = stage_name_problem(shape)
            if problem:
                fixed = "".join(str(part.value) if isinstance(part, ast.Constant) else "{…}" for part in named.values)
                return [Finding(line, "bad-name", problem.replace(repr(shape), repr(fixed), 1), "rename the stage")]
        if not stage.loops:
            return [
                Finding(
                    line,
                    "computed-name",
                    f"stage name {ast.unparse(named)} is built at run time, so --from-stage, --values and "
                    "a record's file cannot be named before the run",
                    "name the stage with a literal; the run's id already tells runs apart",
                )
            ]
        used = {node.id for node in ast.walk(named) if isinstance(node, ast.Name)}
        if not used & set().union(*stage.loops):
            return [
                Finding(
                    line,
                    "computed-name",
                    f"stage name {ast.unparse(named)} does not change round its loop, so the second time round "
                    "enters the same stage again",
                    'build the name from what the loop goes through (f"review@{item}")',
                )
            ]
        return []

    def _returned(self, work: ast.expr) -> ast.expr | None:
        """What the work returns that is plainly a value, or None when it returns nothing or may not."""
        if isinstance(work, ast.Lambda):
            body = work.body
            if isinstance(body, _PLAIN_VALUES):
                return None if isinstance(body, ast.Constant) and body.value is None else body
            return None
        if isinstance(work, ast.Name):
            function = self.walk.defs.get(work.id) or self.module.functions.get(work.id)
            if function is not None:
                values = [
                    node.value
                    for node in _scope(function)
                    if isinstance(node, ast.Return)
                    and node.value is not None
                    and not (isinstance(node.value, ast.Constant) and node.value.value is None)
                ]
                return min(values, key=lambda value: (value.lineno, value.col_offset), default=None)
        return None

    def _duplicates(self) -> list[Finding]:
        found: list[Finding] = []
        named = [stage for stage in self.walk.stages if stage.name is not None]
        for later_index, later in enumerate(named):
            for earlier in named[:later_index]:
                if earlier.name == later.name and not self._exclusive(earlier, later):
                    found.append(
                        Finding(
                            later.call.args[0].lineno if later.call.args else later.call.lineno,
                            "duplicate-name",
                            f"stage {later.name} is entered again (first at line {earlier.call.lineno}), "
                            "and an attempt enters each name once",
                            "give each stage a name of its own, or put them in the branches of one if/else",
                        )
                    )
                    break
        return found

    @staticmethod
    def _exclusive(earlier: _StageCall, later: _StageCall) -> bool:
        """Whether no one pass through the body enters both: they sit in different branches of
        one if or match, or the first one's block returns or stops before the second."""
        for depth, (mine, theirs) in enumerate(zip(earlier.frames, later.frames, strict=False)):
            if mine[0] != theirs[0]:
                if mine[0][0] == theirs[0][0] and (
                    {mine[0][1], theirs[0][1]} == {"body", "orelse"} or mine[0][1].startswith("case")
                ):
                    return True
                return any(ends for _, _, ends in earlier.frames[depth:])
            if mine[1] != theirs[1]:
                return any(ends for _, _, ends in earlier.frames[depth + 1 :])
        return False

    def _works(self) -> dict[int, tuple[ast.AST, _StageCall]]:
        """Each stage's work that is a function of the body's (a def or a lambda), by its id."""
        works: dict[int, tuple[ast.AST, _StageCall]] = {}
        for stage in self.walk.stages:
            work: ast.AST | None = stage.work
            if isinstance(work, ast.Name):
                work = self.walk.defs.get(work.id)
            if isinstance(work, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                works.setdefault(id(work), (work, stage))
        return works

    def _between_stages(self) -> list[Finding]:
        """turn-, effect- and write-between-stages: in the body, or in a function of the body's it
        calls that is no stage's work."""
        works = self._works()
        calls = list(self.walk.calls)
        seen: set[str] = set()
        for call in calls:
            if isinstance(call.func, ast.Name) and call.func.id in self.walk.defs and call.func.id not in seen:
                seen.add(call.func.id)
                helper = self.walk.defs[call.func.id]
                if id(helper) not in works:
                    calls += [node for node in _scope(helper) if isinstance(node, ast.Call)]
        found = []
        for call in calls:
            finding = self._effect(call)
            if finding is not None:
                found.append(finding)
        return found

    def _effect(self, call: ast.Call) -> Finding | None:
        words = _dotted(call.func)
        attr = call.func.attr if isinstance(call.func, ast.Attribute) else None
        shown = ast.unparse(call.func)
        if attr == "run" and isinstance(call.func, ast.Attribute):
            agent = call.func.value
            agent = agent.value if isinstance(agent, ast.Await) else agent
            if (isinstance(agent, ast.Name) and agent.id in self.agents) or self._is_open(agent):
                return Finding(
                    call.lineno,
                    "turn-between-stages",
                    f"{shown}(...) asks an agent outside any stage, so every attempt asks again and pays again",
                    "put the turn in a stage's work and keep what it answers as the stage's value",
                )
        module = self.module.modules.get(words[0], words[0]) if words else ""
        process = (
            (module == "subprocess" and len(words) == 2)
            or (module == "os" and len(words) == 2 and words[1] in _SUBPROCESS_CALLS)
            or (len(words) == 2 and words[1] in _ASYNC_PROCESSES)
            or (len(words) == 1 and words[0] in self.module.process_calls)
        )
        pushed = attr in {"post", "push"} or (module in _HTTP_MODULES and attr in _HTTP_WRITES)
        if process or pushed:
            return Finding(
                call.lineno,
                "effect-between-stages",
                f"{shown}(...) runs outside any stage, so every attempt does it again",
                "put it in a stage's work; if doing it again is harmless, "
                "say so with # awf: ignore[effect-between-stages]",
            )
        if attr in {"write_text", "write_bytes"} or self._opens_to_write(call):
            return Finding(
                call.lineno,
                "write-between-stages",
                f"{shown}(...) writes a file outside any stage, so every attempt writes it again",
                "write it in a stage's work and return its path; if writing again is harmless, "
                "say so with # awf: ignore[write-between-stages]",
            )
        return None

    def _opens_to_write(self, call: ast.Call) -> bool:
        """open(path, "w"), gzip.open(path, "at") or path.open("w"): a mode that writes."""
        func = call.func
        if isinstance(func, ast.Name) and func.id == "open":
            position = 1
        elif isinstance(func, ast.Attribute) and func.attr == "open":
            # A module's open takes the path first; a path's own open, the mode.
            position = 1 if isinstance(func.value, ast.Name) and func.value.id in self.module.modules else 0
        else:
            return False
        mode = call.args[position] if len(call.args) > position else None
        mode = next((keyword.value for keyword in call.keywords if keyword.arg == "mode"), mode)
        return (
            isinstance(mode, ast.Constant)
            and isinstance(mode.value, str)
            and _WRITE_MODE.fullmatch(mode.value) is not None
        )

    def _set_in_stage(self) -> list[Finding]:
        """set-in-stage: a name of the body's a stage's work assigns (nonlocal or global) or fills
        (appends to, sets a key or attribute of), read after the stage."""
        found: list[Finding] = []
        body_names = (
            {param.arg for param in [*self.node.args.posonlyargs, *self.node.args.args]}
            | {node.id for node in self.own if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
            | set(self.walk.defs)
        )
        body_names.discard(self.wf or "")
        for work, stage in self._works().values():
            for name, where in self._set_by(work, body_names).items():
                read = self._read_after(name, stage.call, work)
                if read is not None:
                    found.append(
                        Finding(
                            where.lineno,
                            "set-in-stage",
                            f"{name} is set in the work of stage {stage.name or ast.unparse(stage.call.args[0])} "
                            f"and read after it (line {read.lineno}); a reused stage's work does not run, "
                            f"and then {name} stays as it was before",
                            "return what later code needs from the work, and take it from await wf.stage(...)",
                        )
                    )
        return found

    @staticmethod
    def _set_by(work: ast.AST, body_names: set[str]) -> dict[str, ast.expr]:
        """The body's names the work sets, each with where it first does."""
        nodes = list(ast.walk(work.body) if isinstance(work, ast.Lambda) else _scope(work))
        declared = {name for node in nodes if isinstance(node, (ast.Nonlocal, ast.Global)) for name in node.names}
        own: set[str] = set()
        if not isinstance(work, ast.Lambda):
            own = {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
            own -= declared
        if isinstance(work, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            own |= {arg.arg for arg in [*work.args.posonlyargs, *work.args.args, *work.args.kwonlyargs]}
        outer = (body_names - own) | declared
        sets: dict[str, ast.expr] = {}
        for node in nodes:
            name: str | None = None
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in declared:
                name = node.id
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
                base = node.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                name = base.id if isinstance(base, ast.Name) else None
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MUTATORS
                and isinstance(node.func.value, ast.Name)
            ):
                name = node.func.value.id
            earlier = sets.get(name or "")
            if (
                name is not None
                and name in outer
                and isinstance(node, ast.expr)
                and (earlier is None or (node.lineno, node.col_offset) < (earlier.lineno, earlier.col_offset))
            ):
                sets[name] = node
        return sets

    def _read_after(self, name: str, call: ast.Call, work: ast.AST) -> ast.Name | None:
        """The first read of `name` in the workflow after the stage `call`, outside its work."""
        inside = {id(node) for node in ast.walk(work)}
        after = (call.end_lineno or call.lineno, call.end_col_offset or 0)
        # Set again in the body from the stage on (from the stage's own value, say): what is read
        # after that is what the body set.
        again = min(
            (
                (node.lineno, node.col_offset)
                for node in self.own
                if isinstance(node, ast.Name)
                and node.id == name
                and isinstance(node.ctx, ast.Store)
                and (node.lineno, node.col_offset) >= (call.lineno, 0)
            ),
            default=None,
        )
        reads = [
            node
            for node in self.reads.get(name, [])
            if id(node) not in inside
            and (node.lineno, node.col_offset) >= after
            and (again is None or (node.lineno, node.col_offset) < again)
        ]
        return min(reads, key=lambda node: (node.lineno, node.col_offset), default=None)


@dataclass(frozen=True)
class Spelled:
    """The stage names a workflow file spells out, read from its source."""

    names: set[str]  # the literal names
    starts: set[str]  # the fixed starts of names built as f-strings (`review@` of f"review@{item}")
    without_result: set[str]  # the literal names of stages every call of which gives no result=
    fan_outs: set[str]  # the literal names given to `.each(`

    def names_it(self, name: str) -> bool:
        return name in self.names or any(name.startswith(start) for start in self.starts)


def stage_names_in(source: str | bytes) -> Spelled | None:
    """The stage names a workflow file's source spells out, given to any `.stage(` or `.each(`
    call. None when the source cannot say them all: a name held in a variable, a file that does
    not parse, or one that imports code beside it (a module not in Python's standard library and
    not awf), where more stages may be entered."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    spelled = Spelled(set(), set(), set(), set())
    with_result: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.level:
                return None
            if any(not _known_module(module) for module in modules):
                return None
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("stage", "each") or not node.args:
            continue
        named = node.args[0]
        if isinstance(named, ast.Constant) and isinstance(named.value, str):
            spelled.names.add(named.value)
            if node.func.attr == "each":
                spelled.fan_outs.add(named.value)
            result = any(keyword.arg in ("result", None) for keyword in node.keywords)
            (with_result if result or node.func.attr == "each" else spelled.without_result).add(named.value)
        elif isinstance(named, ast.JoinedStr) and named.values and isinstance(named.values[0], ast.Constant):
            spelled.starts.add(str(named.values[0].value))
        else:
            return None
    spelled.without_result.difference_update(with_result)
    return spelled


def _known_module(module: str) -> bool:
    top = module.split(".")[0]
    return top in sys.stdlib_module_names or top in ("awf", "pydantic", "typing_extensions", "__future__")
