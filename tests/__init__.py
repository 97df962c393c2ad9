"""payemu's test suite.

The suite starts a few hundred interpreters (test workers, ``payemu serve`` processes, the
command line). Where the environment turns bytecode writing off (``PYTHONDONTWRITEBYTECODE``)
each of them would compile payemu and the test modules afresh, about a fifth of the suite's
time on a 2-core machine, so the suite writes bytecode (into ``__pycache__`` folders, which
git ignores) for itself and the processes it starts. This runs before any test module.
"""

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
