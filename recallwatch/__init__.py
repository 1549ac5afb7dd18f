"""recallwatch: does your vector search still find what it must?"""

from recallwatch._version import __version__

__all__ = ["__version__"]
