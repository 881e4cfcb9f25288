"""Reports built from the committed benchmark results in bench_results/ (no model, no database)."""
