"""The equivalence classes of one lattice node, as the node engine computes them
(`sdceval.lattice.engine`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from sdceval.core.errors import SdcevalError


@dataclass(frozen=True, eq=False)
class ClassTable:
    """The equivalence classes of one lattice node (before any suppression).

    Classes are numbered ``0..C-1`` in increasing order of their node ids (QI by QI).

    Attributes
    ----------
    levels : tuple of int
    node_ids : ndarray of int32 (int64 for hierarchies of 2**31 leaves), shape (d, C)
        Node id, at the node's level of each QI, of every class (local ids of
        `Hierarchy.labels[level]`); the generalized values the class publishes.
    sizes : ndarray of int64, shape (C,)
        Records per class.
    row_class : ndarray of int64, shape (n_distinct,)
        Class of each distinct QI row of the engine (records: ``row_class[engine.
        row_of_record]``, see `NodeEngine.record_classes`).  Computed on first access
        (one key per distinct row, located among the sorted class keys), so that the
        many nodes of a search that never need it do not pay for it.
    pair_class, pair_value, pair_count : ndarray of int64, shape (P,) or None
        Sensitive counts in CSR-like form: one entry per (class, sensitive code) present,
        sorted by class then code; ``pair_count`` records of class ``pair_class`` have
        sensitive code ``pair_value``.  ``None`` without a sensitive attribute.
    n_sensitive : int
        Number of sensitive codes S (0 without a sensitive attribute).
    label_class, label_value, label_count : ndarray of int64, shape (Q,) or None
        The same for the class label (`Schema.label`, role ``label``; the CM metric):
        ``label_count`` records of class ``label_class`` have label code ``label_value``.
        ``None`` when the engine does not track a label (`NodeEngine` ``label``).
    n_labels : int
        Number of label codes L (0 without label tracking).
    """

    levels: tuple
    sizes: np.ndarray
    pair_class: np.ndarray | None
    pair_value: np.ndarray | None
    pair_count: np.ndarray | None
    n_sensitive: int
    #: packed class keys Σ node_id_q · W_q (fixed strides W of the engine), increasing
    keys: np.ndarray | None = None
    _ids: np.ndarray = field(default=None, repr=False)
    _engine: object = field(default=None, repr=False)
    label_class: np.ndarray | None = None
    label_value: np.ndarray | None = None
    label_count: np.ndarray | None = None
    n_labels: int = 0
    #: the counts the engine rolls up: (class, value, count) per (class, combined code)
    #: present, combined code ``s · L + l`` (sensitive and label), ``s`` or ``l``; the
    #: sensitive or label pairs themselves when only one of them is tracked
    _values: tuple | None = field(default=None, repr=False)

    @property
    def node_ids(self) -> np.ndarray:
        if self._ids is None and self.keys is not None:
            # tables of `NodeEngine._rollup_merged` read their node ids off the packed
            # keys when first asked (a search's roll-up needs only the lifted QIs')
            object.__setattr__(self, "_ids", self._engine._ids_of_keys(self.keys))
        return self._ids

    @cached_property
    def row_class(self) -> np.ndarray:
        out = self._engine._row_class(self)
        out.setflags(write=False)
        return out

    @property
    def n_classes(self) -> int:
        return len(self.sizes)

    @property
    def nbytes(self) -> int:
        arrays = [self.keys, self._ids, self.sizes, self.pair_class, self.pair_value,
                  self.pair_count, self.label_class, self.label_value, self.label_count,
                  self.__dict__.get("row_class"), *(self._values or ())]
        seen = set()
        total = 0
        for a in arrays:
            if a is not None and id(a) not in seen:  # the value pairs may be the pairs
                seen.add(id(a))
                total += a.nbytes
        return total

    @property
    def pair_offsets(self) -> np.ndarray:
        """CSR row pointer: the pairs of class ``c`` are ``offsets[c]:offsets[c+1]``."""
        self._need_sensitive()
        return np.r_[0, np.cumsum(np.bincount(self.pair_class, minlength=self.n_classes))]

    def sensitive_matrix(self) -> np.ndarray:
        """Dense ``(C, S)`` int64 counts of each sensitive code in each class."""
        self._need_sensitive()
        out = np.zeros((self.n_classes, self.n_sensitive), dtype=np.int64)
        out[self.pair_class, self.pair_value] = self.pair_count
        return out

    def label_matrix(self) -> np.ndarray:
        """Dense ``(C, L)`` int64 counts of each class-label code in each class."""
        if self.label_class is None:
            raise SdcevalError(
                "class table: no class-label counts; give one column role 'label' (and "
                "leave NodeEngine's label=True) for the CM metric")
        out = np.zeros((self.n_classes, self.n_labels), dtype=np.int64)
        out[self.label_class, self.label_value] = self.label_count
        return out

    def _need_sensitive(self) -> None:
        if self.pair_class is None:
            raise SdcevalError(
                "class table: the data set has no sensitive attribute, so there are no "
                "sensitive counts; give one column role 'sensitive'")
