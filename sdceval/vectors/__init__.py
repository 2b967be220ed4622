"""Property vectors and quality indices (Dewri et al. 2009): per-record properties of
a release, the indices that summarize or compare them, dominance, and the
multi-property comparators WTD, LEX and GOAL."""
