"""`python -m rag_lib.experiments.leaderboard`: rewrite docs/benchmarks.md."""

from rag_lib.experiments.leaderboard.page import main

main()
