"""evalcore's own plumbing, below everything else and used by it: lazy imports, pausing the garbage collector,
the command line's progress bar, output files written whole or not at all, and forked worker processes.

Private: nothing here is part of the library's API.
"""
