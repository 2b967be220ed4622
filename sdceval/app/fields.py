"""Errors of a form, each beside its field (the app's pages, issue 31)."""
from __future__ import annotations

from sdceval.core.errors import SdcevalError


class FieldErrors(SdcevalError):
    """`SdcevalError`\\ s of a form, each beside its field: ``errors`` maps a field's
    name to the message."""

    def __init__(self, errors: dict):
        self.errors = dict(errors)
        super().__init__("; ".join(self.errors.values()))
