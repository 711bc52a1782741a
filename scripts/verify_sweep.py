"""The real-model sweep of `bufferlint verify`: library models as a user would check them.

Each target is checked with the CLI (a fresh worker per run, as users get it), emulated on meta
and, where a GPU is, on CUDA too; the table gives the verdict, whether it is right (a correct
library model must pass; a known stray must fail; "inconclusive" is never wrong, never a pass),
wall seconds and the worker's peak memory. Targets whose package is not installed are listed as
skipped. Reproducible: the classes, build expressions and inputs are below.

    python scripts/verify_sweep.py [--jobs 4] [--out sweep.json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMM = "__import__('timm').create_model"


@dataclass(frozen=True)
class Case:
    target: str
    build: str
    input: str
    expected: str = "pass"  # "pass" for correct code (a stray forward re-homes included), "fail" for a known stray

    @property
    def package(self) -> str:
        return self.target.split(":")[0].split(".")[0] if "::" not in self.target else ""


def _timm(cls: str, module: str, name: str, size: int = 224) -> Case:
    return Case(f"timm.models.{module}:{cls}", f"{TIMM}({name!r}, pretrained=False, num_classes=10)",
                f"torch.randn(1, 3, {size}, {size})")


CASES = [
    _timm("VisionTransformer", "vision_transformer", "vit_tiny_patch16_224"),
    _timm("ConVit", "convit", "convit_tiny"),
    _timm("SwinTransformer", "swin_transformer", "swin_tiny_patch4_window7_224"),
    _timm("ResNet", "resnet", "resnet18"),
    _timm("EfficientNet", "efficientnet", "efficientnet_b0"),
    _timm("Levit", "levit", "levit_128s"),
    _timm("Xcit", "xcit", "xcit_nano_12_p16_224"),
    _timm("CoaT", "coat", "coat_lite_tiny"),
    _timm("MaxxVit", "maxxvit", "maxvit_nano_rw_256", 256),
    _timm("Hiera", "hiera", "hiera_tiny_224"),
    _timm("DaVit", "davit", "davit_tiny"),
    Case("torchvision.models.resnet:ResNet", "resnet18(num_classes=10)", "torch.randn(1, 3, 64, 64)"),
    Case("torchvision.models.vision_transformer:VisionTransformer", "vit_b_16(num_classes=10)", "torch.randn(1, 3, 224, 224)"),
    Case("torchvision.models.detection.faster_rcnn:FasterRCNN",
         "fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=3)",
         "[torch.rand(3, 128, 128)]"),
    Case("torchaudio.models.wav2letter:Wav2Letter", "Wav2Letter(num_classes=10)", "torch.randn(1, 1, 1000)"),
    Case("torchaudio.models.conformer:Conformer",
         "Conformer(input_dim=16, num_heads=2, ffn_dim=32, num_layers=2, depthwise_conv_kernel_size=3)",
         "(torch.randn(2, 10, 16), torch.tensor([10, 8]))"),
    Case("transformers.models.bert.modeling_bert:BertModel",
         "BertModel(BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=100))",
         "torch.randint(0, 100, (2, 8))"),
    Case("transformers.models.gpt2.modeling_gpt2:GPT2Model",
         "GPT2Model(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100))", "torch.randint(0, 100, (2, 8))"),
    Case("transformers.models.llama.modeling_llama:LlamaModel",
         "LlamaModel(LlamaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, "
         "intermediate_size=64, vocab_size=100))", "torch.randint(0, 100, (2, 8))"),
    Case("torch.nn.modules.transformer:Transformer",
         "Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32)",
         "(torch.randn(4, 2, 16), torch.randn(3, 2, 16))"),
    Case("fixtures/verify/verify_models.py::TinyGPT", "TinyGPT()", "torch.randn(2, 5, 8)", expected="fail"),
]


@dataclass
class Run:
    target: str
    device: str
    status: str
    right: str  # "right" | "wrong" | "not a proof" | "skipped"
    seconds: float
    peak_mb: float
    strays: list[str]
    errors: list[str]
    note: str


def _available(case: Case) -> bool:
    return not case.package or importlib.util.find_spec(case.package) is not None


def run(case: Case, device: str) -> Run:
    if not _available(case):
        return Run(case.target, device, "-", "skipped", 0.0, 0.0, [], [], f"{case.package} is not installed")
    command = [sys.executable, "-m", "bufferlint", "verify", case.target, "--build", case.build, "--input", case.input,
               "--device", device, "--output-format", "json", "--timeout", "300"]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURED, *command], cwd=ROOT, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    stdout, stderr = done.stdout, done.stderr
    peak_mb = _peak_mb(stderr)
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        return Run(case.target, device, "error", "wrong", seconds, peak_mb, [], [], (stderr or stdout).strip()[-300:])
    status = report["status"]
    right = "not a proof" if status == "inconclusive" else "right" if status == case.expected else "wrong"
    return Run(
        case.target, device, status, right, round(seconds, 1), peak_mb,
        [f"{s['path']} ({s['created']})" for s in report["stray_tensors"] if s["fatal"]],
        [f"{e['op']} @ {e['location']}" for e in report["device_errors"]],
        "; ".join(report["messages"])[:300],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--devices", nargs="+", default=None, help="default: meta, and cuda where available")
    options = parser.parse_args()
    devices = options.devices or (["meta", "cuda"] if _has_cuda() else ["meta"])
    pairs = [(case, device) for case in CASES for device in devices]
    with ThreadPoolExecutor(options.jobs) as pool:
        runs = list(pool.map(lambda pair: run(*pair), pairs))
    print("| class | device | verdict | right? | seconds | peak MB | strays / mixed ops / note |")
    print("|---|---|---|---|---|---|---|")
    for r in runs:
        detail = "; ".join(r.strays + r.errors) or r.note
        print(f"| {r.target} | {r.device} | {r.status} | {r.right} | {r.seconds} | {r.peak_mb} | {detail[:160]} |")
    if options.out:
        options.out.write_text(json.dumps([asdict(r) for r in runs], indent=1) + "\n")
    return 1 if any(r.right == "wrong" for r in runs) else 0


# Runs the CLI and prints the largest resident set among it and its worker (both waited for).
_MEASURED = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print('PEAK_KB=%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _peak_mb(stderr: str) -> float:
    marks = [line for line in stderr.splitlines() if line.startswith("PEAK_KB=")]
    return round(int(marks[-1].partition("=")[2]) / 1024) if marks else 0.0


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    raise SystemExit(main())
