"""Runtime verifier: build a module, find tensors `.to()` would leave behind, and run forward
on CUDA (or on the meta device under a device-checking dispatch mode when no GPU is present).

This package must stay importable without torch: only the modules that run inside the worker
subprocess (walk, device_check, forward, check, against, worker) and the pytest helper import it.
Entry points: `bufferlint.verify.cli.main(argv)` for `bufferlint verify`, and
`bufferlint.verify.api.verify_against(...)` for `bufferlint --fix --verify`.
"""
