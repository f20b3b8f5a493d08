"""Patches that run on a module right after it is first imported, whoever imports it and whenever.

The lab clock is installed before anything else in a process (the boot
folder's sitecustomize), long before Celery, kombu or redis-py are
imported; importing them then only to patch them would cost every
process their import time. `patch(name, function)` runs function(module)
once that module exists.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys


def patch(name: str, function) -> None:
    """Run function(module) on the module `name`: now if it is imported already, else right after its import."""
    if name in sys.modules:
        function(sys.modules[name])
        return
    for finder in sys.meta_path:
        if isinstance(finder, _AfterImport):
            finder.patches.setdefault(name, []).append(function)
            return
    sys.meta_path.insert(0, _AfterImport({name: [function]}))


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs a patch on a module right after it is first imported, whoever imports it."""

    def __init__(self, patches: dict):
        self.patches = patches

    def find_spec(self, name, path=None, target=None):
        if name not in self.patches:
            return None
        functions = self.patches.pop(name)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Patching(spec.loader, functions)
        return spec


class _Patching(importlib.abc.Loader):
    def __init__(self, loader, functions):
        self.loader, self.functions = loader, functions

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        for function in self.functions:
            function(module)


