"""sdceval's version, in a module of its own: the package root re-exports it, and
modules the root imports (the results store) read it here, not through the root (no
import cycle; issue 27 item 22)."""
__version__ = "0.1.0"
