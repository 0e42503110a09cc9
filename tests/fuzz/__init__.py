"""The fuzz suite: hostile versions of every sample file through the real command line.

``cases.py`` makes the cases (deterministic, from a seed), ``harness.py`` runs one through
``validate``, ``convert`` to every writable format and ``import``, and checks it against an oracle
that reads every record on its own; ``test_fuzz.py`` runs a budget of them (see its docstring).
"""
