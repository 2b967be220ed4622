"""The generalization lattice (SPEC §1 layer ``lattice``; issue 7): `Lattice` (nodes,
ids, neighbours) and `NodeEngine` (equivalence classes of nodes on integer codes, with
roll-up).  Imports only `sdceval.core` and `sdceval.privacy`."""
from sdceval.lattice.engine import ClassTable, NodeEngine
from sdceval.lattice.lattice import Lattice

__all__ = ["ClassTable", "Lattice", "NodeEngine"]
