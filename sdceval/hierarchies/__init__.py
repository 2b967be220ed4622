"""Bundled generalization hierarchies (ARX layout); see README.md here."""
