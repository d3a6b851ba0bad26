"""daliaug's version (``daliaug.__version__``; pyproject.toml holds the same): a state of a data
stream names it, and takes only its own version's."""

__version__ = "0.2.0"
