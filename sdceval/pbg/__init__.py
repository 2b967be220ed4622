"""Property-based generalizations (Dewri et al. 2010): node quality vectors, minimal
PBGs, box-dominance and the archive updater (Algorithm 1), PBG-EA (Algorithm 2) and
its metrics."""
