# SPDX-License-Identifier: GPL-2.0-or-later
"""Load a repository script without a .py suffix (bench/*, docs/regen,
docs/tutorial/check, ...) as a module, so tests can call its functions."""
import importlib.machinery
import importlib.util
import os


def load(path, name=None):
    """The module made from the Python script at PATH (run once, as an import)."""
    name = name or os.path.basename(path).replace('-', '_').replace('.', '_')
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod
