"""ARX's own Adult hierarchies and roles (package data; provenance in README.md here)."""
