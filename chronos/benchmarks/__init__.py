"""Figures of the benchmarks in bench/: pure, so a test can check them and a saved run can be re-read."""
