"""The subprocess that imports and runs user code: `python -m bufferlint.verify.worker
REQUEST.json RESULTS.jsonl [PROGRESS_FD]`.

Each job's record is appended to RESULTS as one JSON line as soon as it is done, so when a later
job hangs and the parent kills us at the timeout, the finished ones are not lost. Before each
job its index is written to PROGRESS_FD (a pipe) for the parent's progress display.
"""
from __future__ import annotations

import json
import os
import sys
import time
import tokenize
from pathlib import Path
from typing import Any, TextIO

import torch

from bufferlint.verify import config
from bufferlint.verify.against import compare
from bufferlint.verify.check import check_module, choose_target
from bufferlint.verify.creation import CreationSites
from bufferlint.verify.light_build import LayerWeightsOnMeta
from bufferlint.verify.errors import UsageError
from bufferlint.verify.inputs import BuildError, build, make_input, missing_arguments
from bufferlint.verify.location import one_line
from bufferlint.verify.old_source import read_old_source
from bufferlint.verify.result import VerifyResult, overall_status
from bufferlint.verify.target import Target, exec_old_source, get_class, import_target_module, package_root, parse_target


def _peak_rss_mb() -> float:
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _module_file(target: Target, module: Any) -> Path | None:
    if target.file is not None:
        return target.file
    return Path(module.__file__).resolve() if getattr(module, "__file__", None) else None


def _import_name(target: Target, module: Any) -> str:
    if target.file is not None:
        return package_root(target.file)[1]
    return module.__name__


_OLD_MODULES: dict[tuple[str, str, str], Any] = {}  # one execution of the old text per file


def _old_class(source: str, label: str, module: Any, class_name: str) -> type:
    key = (source, module.__name__, label)
    if key not in _OLD_MODULES:
        _OLD_MODULES[key] = exec_old_source(source, module.__name__, label)
    old_module = _OLD_MODULES[key]
    old_target = Target(raw=f"{label}::{class_name}", class_name=class_name, file=None, module=label)
    return get_class(old_module, old_target)


def _resolve(target: Target, job: dict[str, Any]) -> tuple[Any, type, config.ClassConfig]:
    """Import the class and gather its kwargs/input; every problem here is a usage error."""
    module = import_target_module(target)
    cls = get_class(module, target)
    file = _module_file(target, module)
    found = config.lookup(file, _import_name(target, module), target.class_name)
    cfg = config.merge(found, job.get("kwargs"), job.get("input"), job.get("build"))
    missing = [] if cfg.build else missing_arguments(cls, cfg.kwargs)
    if missing:
        raise UsageError(
            f"{target.class_name}() needs argument(s) {', '.join(missing)}: pass --kwargs '{{...}}' or add "
            f'[tool.bufferlint.verify."{target.raw}"] kwargs to pyproject.toml'
        )
    return module, cls, cfg


def run_verify(job: dict[str, Any]) -> VerifyResult:
    """`bufferlint verify`: device check of one class, and `--against` when asked."""
    target = parse_target(job["target"])
    choose_target(job.get("device", "auto"))  # `--device cuda` without a GPU: say so before any work
    started = time.perf_counter()
    module, cls, cfg = _resolve(target, job)
    old_cls = None
    if job.get("against"):
        file = _module_file(target, module)
        if file is None:
            raise UsageError(f"--against: {target.raw} has no source file")
        source, label = read_old_source(job["against"], file)
        old_cls = _old_class(source, label, module, target.class_name)
    inputs = make_input(cfg.input) if cfg.input else None
    result = VerifyResult(target=target.raw)
    timings = {"import_s": time.perf_counter() - started}
    if cfg.origin:
        result.messages.append(f"kwargs/input from {cfg.origin}")
    if old_cls is not None:
        t0 = time.perf_counter()
        result.against = compare(old_cls, cls, cfg.kwargs, inputs, label, cfg.build, bool(job.get("train")))
        timings["against_s"] = time.perf_counter() - t0
    _device_check(result, cls, cfg, inputs, job.get("device", "auto"), timings, bool(job.get("train")))
    result.status = overall_status(result.stray_tensors, result.device_errors, result.forward, result.against)
    timings["peak_rss_mb"] = _peak_rss_mb()
    result.timings = timings
    return result


def _device_check(
    result: VerifyResult, cls: type, cfg: config.ClassConfig, inputs: tuple | None, device: str,
    timings: dict[str, float], train: bool = False,
) -> None:
    t0 = time.perf_counter()
    sites = CreationSites()  # so that each stray names the line that made it
    light = LayerWeightsOnMeta() if choose_target(device)[1] == "meta-emulated" else None
    try:
        module = _built(cls, cfg, sites, light)
    except BuildError as exc:
        result.forward = "crashed"
        result.messages.append(f"could not build the module: {exc}")
        return
    timings["build_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    outcome = check_module(module, inputs, None, device, sites.site, train)
    timings["check_s"] = time.perf_counter() - t0
    if light is not None:
        for stray in outcome.strays:
            if stray.device == "meta":  # only the light build made it there: the program keeps it on the host
                stray.device = "cpu"
    result.mode, result.stray_tensors, result.device_errors = outcome.mode, outcome.strays, outcome.errors
    result.forward = outcome.forward
    result.messages.extend(outcome.messages)


def _built(cls: type, cfg: config.ClassConfig, sites: CreationSites, light: LayerWeightsOnMeta | None) -> Any:
    """The module, with torch.nn layers' weights on meta when only the emulated check needs it;
    a constructor that needs their values is built again, on the CPU."""
    if light is not None:
        try:
            with sites, light:
                return build(cls, cfg.kwargs, cfg.build)
        except BuildError:
            pass
    with sites:
        return build(cls, cfg.kwargs, cfg.build)


def run_against(job: dict[str, Any]) -> dict[str, Any]:
    """`--fix --verify`: one class of a rewritten file against its pre-fix text."""
    name = job["class_name"]
    file = Path(job["file"]).resolve()
    target = Target(raw=f"{file}::{name}", class_name=name, file=file)
    import_name = package_root(file)[1]
    old_label = f"{file} (before the fix)"
    try:
        module = import_target_module(target)
    except UsageError as exc:
        try:  # when the original does not import either, the fix is not to blame
            exec_old_source(job["old_source"], import_name, old_label)
        except UsageError:
            return _class_record(name, "unverified", [f"neither version imports: {exc}"])
        try:  # the rewritten text, run the way the original just was: the package may be what fails
            with tokenize.open(file) as text:  # decoded as Python would (coding cookie, BOM)
                exec_old_source(text.read(), import_name, f"{file} (after the fix)")
        except UsageError as rewritten:
            return _class_record(name, "fail", [f"the rewritten file does not import: {rewritten}"])
        return _class_record(name, "unverified", [f"the package does not import here, though both versions of the file run: {exc}"])
    try:
        old_cls = _old_class(job["old_source"], old_label, module, name)
    except UsageError as exc:
        return _class_record(name, "unverified", [f"the original version cannot be used: {exc}"])
    try:
        cls = get_class(module, target)
    except UsageError:
        return _class_record(name, "fail", [f"class {name} is missing from the rewritten file"])
    cfg = _against_config(job.get("config"), file, import_name, name)
    missing = [] if cfg.build else missing_arguments(cls, cfg.kwargs)
    if missing:
        return _class_record(name, "unverified", [
            f"cannot build {name}: it needs argument(s) {', '.join(missing)}; add "
            f'[tool.bufferlint.verify."{import_name}:{name}"] kwargs (or build) to pyproject.toml'
        ])
    try:
        inputs = make_input(cfg.input) if cfg.input else None
    except UsageError as exc:
        return _class_record(name, "unverified", [str(exc)])
    outcome = compare(old_cls, cls, cfg.kwargs, inputs, "before the fix", cfg.build)
    return _class_record(name, outcome.status, outcome.messages)


def _against_config(given: dict[str, Any] | None, file: Path, import_name: str, name: str) -> config.ClassConfig:
    """The caller's config for the class wins; otherwise pyproject.toml's; otherwise none."""
    if given:
        return config.ClassConfig(dict(given.get("kwargs") or {}), given.get("input"), "the caller", given.get("build"))
    return config.lookup(file, import_name, name) or config.ClassConfig()


def _class_record(name: str, status: str, reasons: list[str]) -> dict[str, Any]:
    return {"class_name": name, "status": status, "reasons": reasons}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One job to one JSON-able record; user-code failures become records, never tracebacks."""
    try:
        if job["kind"] == "against":
            return {"result": run_against(job)}
        return {"result": run_verify(job).to_dict()}
    except UsageError as exc:
        return {"usage_error": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - SystemExit etc. from user code must be reported
        return {"error": f"verification crashed: {one_line(exc)}"}


def _open_progress(argv: list[str]) -> TextIO | None:
    if len(argv) < 3:
        return None
    return os.fdopen(int(argv[2]), "w", buffering=1)


def main(argv: list[str]) -> int:
    request_path, results_path = argv[0], argv[1]
    jobs = json.loads(Path(request_path).read_text(encoding="utf-8"))
    progress = _open_progress(argv)
    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))  # small CPU checks; don't hog CI
    with open(results_path, "a", encoding="utf-8") as results:
        for index, job in enumerate(jobs):
            if progress is not None:
                progress.write(f"{index}\n")
            record = run_job(job)
            results.write(json.dumps({"index": index, **record}, default=str) + "\n")
            results.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
