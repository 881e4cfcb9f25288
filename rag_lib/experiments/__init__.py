"""Course experiments the notebooks run and a project would not copy: fusion variants, ANN sweeps, drawings."""
