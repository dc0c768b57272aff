"""`<package> gpu-bench`: the seed's GPU claims, measured on the machine it runs on.

reference holds the claims and NVIDIA's published figures (data, with their source); measure runs
one measurement in its own process; verdicts compares measured figures with the claims; bench
plans the measurements, runs them one process each, and writes metrics/gpu_bench.json.
"""
