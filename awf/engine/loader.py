"""Loading a workflow file as a module and finding its workflow."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import LoadError, WorkflowError
from .frames import line_in, user_traceback
from .workflow import Workflow


def split_target(target: str) -> tuple[Path, str | None]:
    """`FILE` or `FILE:NAME`: the name picks one workflow of a file that holds several."""
    if not Path(target).exists() and ":" in target:
        file, _, name = target.rpartition(":")
        if file and name:
            return Path(file), name
    return Path(target), None


def _frames_below(error: BaseException) -> str:
    """The user's frames that led to the error, for under its one line (which says the error)."""
    lines = user_traceback(error).rstrip("\n").splitlines()
    if lines and lines[0].startswith("Traceback"):
        lines = lines[1:]
    # The last line repeats the error the one line above already says.
    return "\n".join(lines[:-1])


def load_workflow(target: str) -> Workflow[Any]:
    """The one workflow of the file `target` names, or a LoadError that says what to do."""
    path, wanted = split_target(target)
    if not path.exists():
        raise LoadError(f"workflow file {path} does not exist")
    if path.is_dir():
        raise LoadError(f"{path} is a folder; give the workflow's .py file")
    return _choose(path, wanted, _execute(path))


def _execute(path: Path) -> ModuleType:
    """The workflow file, run as a module of its own."""
    resolved = path.resolve()
    # A name of its own for each file, the same in every process; crc32, as hashlib costs a
    # millisecond to import.
    module_name = f"awf_workflow_{zlib.crc32(str(resolved).encode()):08x}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise LoadError(f"{path} cannot be loaded as Python; a workflow file is a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        # Compiled from the source each time, never from __pycache__: a workflow edited between
        # two attempts within one second, to a text of the same size, would otherwise run as it was.
        code = compile(resolved.read_bytes(), str(resolved), "exec", dont_inherit=True)
        with neighbours(resolved.parent):
            exec(code, module.__dict__)
    except SystemExit as error:
        raise LoadError(f"{path} exited while it was loaded (SystemExit {error.code})", raised=True) from None
    except WorkflowError as error:
        # A rule of the author API the file breaks (a workflow named 'a/b'): refused, in one line.
        line = line_in(error, resolved)
        raise LoadError(f"{path}{f':{line}' if line else ''}: {error}") from None
    except BaseException as error:
        line = line_in(error, resolved)
        what = f"{type(error).__name__}: {error.msg if isinstance(error, SyntaxError) else error}"
        raise LoadError(
            f"{path}{f':{line}' if line else ''}: {what}", raised=True, detail=_frames_below(error)
        ) from None
    return module


class _SourceOnly(importlib.machinery.SourceFileLoader):
    """A module beside a workflow, compiled from its source every time, as the workflow is: never
    from __pycache__, where an agent that writes the folder could leave bytecode of its own."""

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        return compile(self.get_data(path), path, "exec", dont_inherit=True)


# Folders of workflows loaded in this process: what is below one is imported from source only.
_NEIGHBOURHOODS: set[str] = set()


def _source_only_finder(path: str) -> importlib.machinery.FileFinder:
    """sys.path_hooks' first say: a folder of a workflow's (or of a package in one) gets a finder of
    Python source only; no other folder is this hook's."""
    if not any(path == folder or path.startswith(folder + os.sep) for folder in _NEIGHBOURHOODS):
        raise ImportError(path)
    return importlib.machinery.FileFinder(path, (_SourceOnly, importlib.machinery.SOURCE_SUFFIXES))


@contextmanager
def neighbours(folder: Path) -> Iterator[None]:
    """While a workflow file loads, it imports its neighbours (shared schemas, helpers) as a script
    would, from `folder`: after everything installed (a file an agent left there, named as a module
    of the standard library, never takes its place) and from Python source only. Once it has loaded,
    the folder is off the import path again: awf's own later imports find nothing there."""
    entry = str(folder)
    if not _NEIGHBOURHOODS:
        sys.path_hooks.insert(0, _source_only_finder)
    _NEIGHBOURHOODS.add(entry)
    sys.path_importer_cache.pop(entry, None)
    added = entry not in sys.path  # a folder the operator put on the path stays as they put it
    if added:
        sys.path.append(entry)
    try:
        yield
    finally:
        if added:
            del sys.path[len(sys.path) - 1 - sys.path[::-1].index(entry)]


def neighbour_files(folder: Path) -> list[str]:
    """The files of the modules loaded from `folder` (the workflow's neighbours), for the sandbox to
    keep read-only: they run outside it, at every attempt."""
    within = str(folder) + os.sep
    found = []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and file.startswith(within):
            found.append(file)
    return sorted(set(found))


def _choose(path: Path, wanted: str | None, module: ModuleType) -> Workflow[Any]:
    """The workflow `wanted` names (by its name or the name it is bound to), or the file's only one."""
    found: dict[str, Workflow[Any]] = {}
    attributes: dict[str, Workflow[Any]] = {}
    for attribute, value in vars(module).items():
        if isinstance(value, Workflow):
            found.setdefault(value.name, value)
            attributes[attribute] = value
    if wanted is not None:
        chosen = found.get(wanted) or attributes.get(wanted)
        if chosen is None:
            names = ", ".join(sorted(found)) or "none"
            raise LoadError(f"{path} has no workflow named {wanted!r}; it has: {names}")
        return chosen
    if not found:
        raise LoadError(f"{path} defines no workflow: decorate an async def with @awf.workflow(name=..., ...)")
    if len(found) > 1:
        names = ", ".join(sorted(found))
        raise LoadError(f"{path} holds several workflows ({names}); name one as {path}:NAME")
    return next(iter(found.values()))
