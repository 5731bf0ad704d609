"""Check and time the torch engine on a CUDA GPU (the lent H100/H200): one script, one table.

    PYTHONPATH=src/python python3 -m mlperf_harness.engines.torch_aot.device_check --work /tmp/tc

1. The converter against ONNX Runtime (CPU): every coverage graph (all supported operators, opsets
   8/11/13/18) and a ResNet-50 stand-in, in fp32 (TF32 off) and eager fp16/bf16.
2. AOTInductor engines through the engine cache (fp16 and bf16 at batch 256, fp32 at a small
   batch), then the same specs again, which must hit the cache.
3. Each engine in a fresh process with empty compiler caches: load time (nothing may compile),
   outputs against ONNX Runtime, throughput of plain calls and of CUDA-graph replays on a
   GPU-resident batch, and TorchRunner end to end (numpy in, numpy out: pinned staging, copies).

The ResNet-50 here is quick to make: the stand-in's architecture and seeded convolution weights,
batch-norm statistics from one pass over random images, a random 1001-way head (no image data,
no training); its cost per image is the real one. Inputs are random, never zeros.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort

from mlperf_harness.engines.torch_aot import onnx_to_torch, sample_graphs
from mlperf_harness.engines.torch_aot.torch_host import import_torch
from mlperf_harness.hashing import file_sha256

SOFTMAX = "softmax_tensor:0"
ARGMAX = "ArgMax:0"
INPUT = "input_tensor:0"
REFERENCE_BATCH = 256  # random images kept for every check; engines of this batch see all
REFERENCE_ROWS = 64  # rows ONNX Runtime computes the reference for (CPU time)
HEAD_SCALE = 0.05  # the random head's weight scale: logits of a few units
DEFAULT_VARIANTS = "fp16:256,bf16:256,fp32:8"

Floats = npt.NDArray[np.float32]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def ort_session(model: onnx.ModelProto | Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


# ---------------------------------------------------------------------------------------------------
# Inputs


def quick_resnet50(path: Path, seed: int = 0) -> None:
    """A ResNet-50 v1.5 with the official interface: stand-in weights, random head (see above)."""
    from mlperf_harness.benchmarks.resnet50 import stand_in_model as stand_in

    weights = stand_in.random_conv_weights(seed)
    rng = np.random.default_rng(seed + 1000)
    images = rng.uniform(-120.0, 130.0, (32, 3, 224, 224)).astype(np.float32)
    bn = stand_in.bn_statistics(weights, images)
    head_weight = rng.standard_normal((stand_in.NUM_OUTPUTS, stand_in.FEATURE_WIDTH)) * HEAD_SCALE
    head_bias = np.zeros(stand_in.NUM_OUTPUTS, dtype=np.float32)
    model = stand_in.classifier_graph(weights, bn, head_weight.astype(np.float32), head_bias, seed)
    onnx.save(model, str(path))


def random_images(count: int, seed: int) -> Floats:
    rng = np.random.default_rng(seed)
    return rng.uniform(-120.0, 130.0, (count, 3, 224, 224)).astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# Comparisons


def compare(
    torch_prob: npt.NDArray[Any],
    torch_label: npt.NDArray[Any],
    ref_prob: npt.NDArray[Any],
    ref_label: npt.NDArray[Any],
) -> dict[str, Any]:
    prob = np.asarray(torch_prob, dtype=np.float64)
    ref = np.asarray(ref_prob, dtype=np.float64)
    agree = int(np.sum(np.asarray(torch_label).reshape(-1) == np.asarray(ref_label).reshape(-1)))
    return {
        "softmax_max_abs": float(np.max(np.abs(prob - ref))),
        "softmax_rel_l2": float(np.linalg.norm(prob - ref) / np.linalg.norm(ref)),
        "argmax_agree": agree,
        "rows": len(ref),
        "nan": bool(np.isnan(prob).any()),
    }


def eager_checks(model_path: Path, images: Floats, ref: dict[str, Any]) -> list[dict[str, Any]]:
    torch = import_torch()

    from mlperf_harness.engines.torch_aot import torch_module

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows: list[dict[str, Any]] = []
    for opset in sample_graphs.OPSETS:
        graph = sample_graphs.coverage_graph(opset, seed=opset)
        x = sample_graphs.random_input(16, seed=opset)
        ref_prob, ref_label = ort_session(graph).run(list(sample_graphs.OUTPUTS), {"x": x})
        for rewritten in (False, True):  # as given, and as the engines build it
            model = onnx_to_torch.rewritten(graph) if rewritten else graph
            module = onnx_to_torch.to_torch_module(model).cuda().eval()
            with torch.no_grad():
                prob, label = module(torch.from_numpy(x).cuda())
            result = compare(prob.cpu().numpy(), label.cpu().numpy(), ref_prob, ref_label)
            name = f"coverage opset {opset}" + (" rewritten" if rewritten else "")
            rows.append({"check": name, "precision": "fp32", **result})
    model = onnx_to_torch.load_model(model_path)
    rows_ref = len(ref["prob"])
    x = torch.from_numpy(images[:rows_ref]).cuda()
    for precision in ("fp32", "fp16", "bf16"):
        dtype = torch_module.TORCH_DTYPES[precision]
        graph_module = onnx_to_torch.to_torch_module(model, [SOFTMAX, ARGMAX])
        module = torch_module.EngineModule(graph_module, dtype, channels_last=True).cuda().eval()
        with torch.no_grad():
            prob, label = module(x)
        result = compare(prob.cpu().numpy(), label.cpu().numpy(), ref["prob"], ref["label"])
        rows.append({"check": "resnet50 eager (channels-last)", "precision": precision, **result})
        del module, graph_module
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    return rows


# ---------------------------------------------------------------------------------------------------
# The fresh-process benchmark of one engine


def _median_ms(torch: Any, fn: Any, rounds: int, iters: int) -> float:
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / iters)
    return float(statistics.median(times))


def _count_files(path: str) -> int:
    return sum(len(files) for _, _, files in os.walk(path)) if os.path.isdir(path) else 0


def bench(engine: Path, reference: Path, cudnn_benchmark: bool) -> dict[str, Any]:
    started = time.perf_counter()
    torch = import_torch()

    import_s = time.perf_counter() - started
    torch.backends.cudnn.benchmark = cudnn_benchmark
    from mlperf_harness.backends.torch_cuda.runner import TorchRunner, load_package
    from mlperf_harness.engines.torch_aot.metadata import read_io

    io = read_io(engine)
    batch = io.batch_size
    data = np.load(reference)
    images, ref_prob, ref_label = data["images"], data["prob"], data["label"]
    rows = min(batch, len(ref_prob))
    result: dict[str, Any] = {"engine": engine.parent.name, "import_torch_s": import_s}

    t = time.perf_counter()
    model = load_package(engine)
    torch.cuda.synchronize()
    result["load_s"] = time.perf_counter() - t
    x = torch.from_numpy(np.ascontiguousarray(images[:batch])).cuda()
    torch.cuda.synchronize()
    t = time.perf_counter()
    outputs = model(x)
    torch.cuda.synchronize()
    result["first_call_s"] = time.perf_counter() - t
    i_prob, i_label = io.output_index(SOFTMAX), io.output_index(ARGMAX)
    prob, label = outputs[i_prob].cpu().numpy(), outputs[i_label].cpu().numpy()
    result["check"] = compare(prob[:rows], label[:rows], ref_prob[:rows], ref_label[:rows])

    iters = max(2, min(20, 2048 // batch))

    def plain() -> None:
        model(x)

    plain_ms = _median_ms(torch, plain, rounds=5, iters=iters)
    result["plain_img_s"] = batch / plain_ms * 1e3

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            model(x)
    torch.cuda.synchronize()
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static = model(x)
        static[i_prob].fill_(float("nan"))  # poison: the replay must write every element
        static[i_label].fill_(-1)
        graph.replay()
        torch.cuda.synchronize()
        g_prob, g_label = static[i_prob].cpu().numpy(), static[i_label].cpu().numpy()
        result["graph_matches_plain"] = bool(
            np.array_equal(g_label, label) and not np.isnan(g_prob).any()
        )
        result["graph_max_abs_vs_plain"] = float(np.max(np.abs(g_prob - prob)))
        graph_ms = _median_ms(torch, graph.replay, rounds=5, iters=iters)
        result["graph_img_s"] = batch / graph_ms * 1e3
    except Exception as error:
        result["graph_error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    torch.cuda.synchronize()

    host = np.ascontiguousarray(images[:batch])
    with TorchRunner([engine], ARGMAX) as runner:
        assert isinstance(runner, TorchRunner)
        result["runner_cuda_graph"] = runner.uses_cuda_graph
        result["runner_graph_error"] = runner.cuda_graph_error
        got = runner.infer(host)
        result["runner_argmax_agree"] = int(np.sum(got[:rows] == ref_label[:rows]))
        small = runner.infer(host[:3])  # a partial batch: padded
        result["runner_partial_ok"] = bool(np.array_equal(small, got[:3]))
        loops = max(3, min(20, 4096 // batch))
        t = time.perf_counter()
        for _ in range(loops):
            runner.infer(host)
        result["runner_img_s"] = loops * batch / (time.perf_counter() - t)

    runners = [TorchRunner([engine], ARGMAX) for _ in range(2)]
    for r in runners:
        r.activate()

    def loop(r: TorchRunner) -> None:
        for _ in range(loops):
            r.infer(host)

    threads = [threading.Thread(target=loop, args=(r,)) for r in runners]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    result["runner2_img_s"] = 2 * loops * batch / (time.perf_counter() - t)
    for r in runners:
        r.deactivate()

    result["inductor_imported"] = "torch._inductor" in sys.modules
    result["inductor_cache_files"] = _count_files(os.environ.get("TORCHINDUCTOR_CACHE_DIR", ""))
    result["triton_cache_files"] = _count_files(os.environ.get("TRITON_CACHE_DIR", ""))
    result["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
    return result


# ---------------------------------------------------------------------------------------------------
# Where a fresh process's time goes: loading a package, and feeding a batch


def probe(engine: Path, reference: Path) -> dict[str, Any]:
    """Load-time breakdown (imports, package contents, profile of the load, files the load writes)
    and the host->GPU feed of one batch, stage by stage."""
    import cProfile
    import io as text_io
    import pstats
    import zipfile

    result: dict[str, Any] = {}
    t = time.perf_counter()
    torch = import_torch()
    result["import_torch_s"] = time.perf_counter() - t
    with zipfile.ZipFile(engine) as archive:
        entries = [(info.filename, info.file_size) for info in archive.infolist()]
    suffixes: dict[str, int] = {}
    for name, _ in entries:
        suffix = name.rsplit(".", 1)[-1] if "." in name.rsplit("/", 1)[-1] else "(none)"
        suffixes[suffix] = suffixes.get(suffix, 0) + 1
    result["package_entries"] = len(entries)
    result["package_suffixes"] = suffixes
    result["package_largest"] = sorted(entries, key=lambda e: -e[1])[:6]
    cache_dirs = [
        os.environ.get("TORCHINDUCTOR_CACHE_DIR", ""),
        os.environ.get("TRITON_CACHE_DIR", ""),
    ]
    before = {d: _count_files(d) for d in cache_dirs}

    from mlperf_harness.backends.torch_cuda.runner import load_package

    profiler = cProfile.Profile()
    t = time.perf_counter()
    profiler.enable()
    model = load_package(engine)
    profiler.disable()
    torch.cuda.synchronize()
    result["load_s"] = time.perf_counter() - t
    stream = text_io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(18)
    result["load_profile"] = stream.getvalue().splitlines()[-30:]
    written = []
    for d in cache_dirs:
        for root, _, files in os.walk(d) if d else ():
            for name in files:
                full = os.path.join(root, name)
                written.append((os.path.relpath(full, d), os.path.getsize(full)))
    result["cache_files_before"] = before
    result["cache_files_written"] = sorted(written)[:40]
    t = time.perf_counter()
    load_package(engine)
    result["second_load_same_process_s"] = time.perf_counter() - t
    result["inductor_imported_by_load"] = "torch._inductor" in sys.modules
    t = time.perf_counter()
    importlib_module("torch._inductor")
    result["import_inductor_s"] = time.perf_counter() - t

    data = np.load(reference)
    batch = np.ascontiguousarray(data["images"])
    n = len(batch)
    gpu = torch.empty(batch.shape, dtype=torch.float32, device="cuda")
    pinned = torch.empty(batch.shape, dtype=torch.float32, pin_memory=True)
    source = torch.from_numpy(batch)
    result["torch_threads"] = torch.get_num_threads()

    def wall_ms(fn: Any, repeat: int = 5) -> float:
        times = []
        for _ in range(repeat):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        return float(statistics.median(times))

    stages = {
        "numpy_to_pinned_torch_copy": lambda: pinned.copy_(source),
        "numpy_to_pinned_np_copyto": lambda: np.copyto(pinned.numpy(), batch),
        "pinned_to_gpu": lambda: gpu.copy_(pinned, non_blocking=True),
        "pageable_to_gpu": lambda: gpu.copy_(source),
        "plain_call": lambda: model(gpu),
    }
    result["stage_ms"] = {name: wall_ms(fn) for name, fn in stages.items()}
    result["stage_batch"] = n
    return result


def importlib_module(name: str) -> Any:
    import importlib

    return importlib.import_module(name)


# ---------------------------------------------------------------------------------------------------
# The whole check


def environment() -> dict[str, Any]:
    torch = import_torch()

    major, minor = torch.cuda.get_device_capability()
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(),
        "sm": f"{major}{minor}",
        "onnx": onnx.__version__,
        "onnxruntime": ort.__version__,
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
    }
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        info["nvidia_smi"] = smi.stdout.strip()
    except (OSError, subprocess.SubprocessError) as error:
        info["nvidia_smi"] = f"unavailable ({error})"
    return info


def parse_variants(text: str) -> list[tuple[str, int, bool]]:
    variants = []
    for item in text.split(","):
        parts = item.split(":")
        variants.append((parts[0], int(parts[1]), len(parts) > 2 and parts[2] == "autotune"))
    return variants


def run_all(work: Path, out: Path | None, variants_text: str, cudnn_modes: list[bool]) -> int:
    from mlperf_harness.engines.cache import EngineCache
    from mlperf_harness.engines.torch_aot.engine import torch_engine, torch_engine_spec

    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"environment": environment(), "date": time.strftime("%Y-%m-%d")}
    log(f"environment: {json.dumps(report['environment'])}")

    model_path = work / "resnet50_quick.onnx"
    t = time.perf_counter()
    quick_resnet50(model_path)
    log(f"quick ResNet-50 ONNX in {time.perf_counter() - t:.1f} s")
    images = random_images(REFERENCE_BATCH, seed=7)
    t = time.perf_counter()
    prob, label = ort_session(model_path).run([SOFTMAX, ARGMAX], {INPUT: images[:REFERENCE_ROWS]})
    log(f"ONNX Runtime reference ({REFERENCE_ROWS} rows) in {time.perf_counter() - t:.1f} s")
    reference = work / "reference.npz"
    np.savez(reference, images=images, prob=prob, label=label)
    ref = {"prob": prob, "label": label}
    top = np.sort(prob, axis=1)
    log(
        f"reference softmax: top-1 mean {top[:, -1].mean():.3f}, top-1 minus top-2 mean "
        f"{(top[:, -1] - top[:, -2]).mean():.4f}, distinct argmax {len(set(label.tolist()))}"
    )

    try:
        report["eager"] = eager_checks(model_path, images, ref)
    except Exception:
        traceback.print_exc()
        report["eager"] = []
    print_eager(report["eager"])

    cache = EngineCache(work / "engines")
    model_sha = file_sha256(model_path)
    report["engines"] = []
    for precision, batch, autotune in parse_variants(variants_text):
        row: dict[str, Any] = {"precision": precision, "batch": batch, "autotune": autotune}
        report["engines"].append(row)
        try:
            spec = torch_engine_spec(
                "resnet50", model_sha, precision, batch, channels_last=True, max_autotune=autotune
            )
            t = time.perf_counter()
            path, built = torch_engine(cache, spec, model_path)
            row["build_s"] = time.perf_counter() - t
            row["built"] = built
            row["package_mib"] = path.stat().st_size / 2**20
            again, rebuilt = torch_engine(cache, spec, model_path)
            row["cache_hit"] = again == path and not rebuilt
            row["path"] = str(path)
            with (work / "engines.txt").open("a") as listing:
                listing.write(f"{path}\n")
            log(f"built {spec.name} in {row['build_s']:.1f} s ({row['package_mib']:.1f} MiB)")
        except Exception:
            traceback.print_exc()
            row["error"] = "build failed"
            continue
        for cudnn in cudnn_modes if batch == REFERENCE_BATCH else cudnn_modes[:1]:
            row.setdefault("bench", []).append(bench_in_fresh_process(path, reference, cudnn))
            if out is not None:  # after each step: a run cut short still leaves what it measured
                (out / "device_check.json").write_text(json.dumps(report, indent=2, default=str))

    if out is not None:
        (out / "device_check.json").write_text(json.dumps(report, indent=2, default=str))
    print_engines(report)
    return 0


def bench_in_fresh_process(engine: Path, reference: Path, cudnn_benchmark: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fresh-caches-") as caches:
        env = dict(os.environ)
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(caches, "inductor")
        env["TRITON_CACHE_DIR"] = os.path.join(caches, "triton")
        result_file = os.path.join(caches, "result.json")
        command = [sys.executable, "-m", __spec__.name if __spec__ else __name__]
        command += ["bench", "--engine", str(engine), "--reference", str(reference)]
        command += ["--result", result_file] + (["--cudnn-benchmark"] if cudnn_benchmark else [])
        t = time.perf_counter()
        done = subprocess.run(command, env=env, timeout=400, check=False)
        wall = time.perf_counter() - t
        if done.returncode != 0 or not os.path.isfile(result_file):
            return {"error": f"bench exited {done.returncode}", "cudnn_benchmark": cudnn_benchmark}
        result: dict[str, Any] = json.loads(Path(result_file).read_text())
        result["process_wall_s"] = wall
        result["cudnn_benchmark"] = cudnn_benchmark
        log(f"bench {engine.parent.name} cudnn_benchmark={cudnn_benchmark}: {json.dumps(result)}")
        return result


def print_eager(rows: list[dict[str, Any]]) -> None:
    print("\nConverter vs ONNX Runtime (CPU), eager torch on the GPU")
    print(f"{'check':34} {'prec':5} {'softmax max|d|':>15} {'rel L2':>9} {'argmax':>8}")
    for r in rows:
        print(
            f"{r['check']:34} {r['precision']:5} {r['softmax_max_abs']:15.2e} "
            f"{r['softmax_rel_l2']:9.1e} {r['argmax_agree']:>4}/{r['rows']:<3}"
        )


def print_engines(report: dict[str, Any]) -> None:
    env = report["environment"]
    print(
        f"\nAOTInductor engines, ResNet-50 (quick stand-in), {env['gpu']} sm_{env['sm']}, "
        f"torch {env['torch']}, {report['date']}"
    )
    header = (
        f"{'engine':14} {'build s':>7} {'MiB':>5} {'cudnn.bm':>8} {'load s':>6} {'1st s':>6} "
        f"{'sm max|d|':>9} {'argmax':>7} {'plain/s':>8} {'graph/s':>8} {'runner/s':>8} "
        f"{'2 run/s':>8} {'compiled':>8}"
    )
    print(header)
    for row in report["engines"]:
        name = f"{row['precision']} b{row['batch']}" + (" at" if row["autotune"] else "")
        if "error" in row:
            print(f"{name:14} {row['error']}")
            continue
        for b in row.get("bench", []):
            if "error" in b:
                print(f"{name:14} {row['build_s']:7.1f} bench failed: {b['error']}")
                continue
            c = b["check"]
            graph = f"{b['graph_img_s']:8.0f}" if "graph_img_s" in b else f"{'none':>8}"
            compiled = b["inductor_cache_files"] + b["triton_cache_files"]
            print(
                f"{name:14} {row['build_s']:7.1f} {row['package_mib']:5.0f} "
                f"{b['cudnn_benchmark']!s:>8} {b['load_s']:6.2f} {b['first_call_s']:6.2f} "
                f"{c['softmax_max_abs']:9.1e} {c['argmax_agree']:>3}/{c['rows']:<3} "
                f"{b['plain_img_s']:8.0f} {graph} {b['runner_img_s']:8.0f} "
                f"{b['runner2_img_s']:8.0f} {compiled:>8}"
            )
    print(
        "plain/s, graph/s: images/s on a GPU-resident batch (plain calls; CUDA-graph replays); "
        "runner/s: TorchRunner.infer numpy->numpy; 2 run/s: two runners in two threads; "
        "compiled: files in the fresh process's inductor+triton caches after load and runs "
        "(0 = nothing compiled); sm max|d|: softmax vs ONNX Runtime fp32"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("mode", nargs="?", default="all", choices=("all", "bench", "probe"))
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "torch_check")
    parser.add_argument("--out", type=Path, default=None, help="where the JSON report goes")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help="precision:batch[:autotune],…")
    parser.add_argument("--cudnn", default="off,on", help="cudnn.benchmark modes to time: off,on")
    parser.add_argument("--engine", type=Path)
    parser.add_argument("--reference", type=Path)
    parser.add_argument("--result", type=Path)
    parser.add_argument("--cudnn-benchmark", action="store_true")
    parser.add_argument("--no-bench", action="store_true", help="all: build, but time nothing")
    args = parser.parse_args(argv)
    if args.mode == "probe":
        found = probe(args.engine, args.reference)
        for key, value in found.items():
            if isinstance(value, list):
                print(f"{key}:")
                for item in value:
                    print(f"    {item}")
            else:
                print(f"{key}: {value}")
        return 0
    if args.mode == "bench":
        result = bench(args.engine, args.reference, args.cudnn_benchmark)
        args.result.write_text(json.dumps(result, default=str))
        return 0
    modes = [mode == "on" for mode in args.cudnn.split(",")]
    return run_all(args.work, args.out, args.variants, [] if args.no_bench else modes)


if __name__ == "__main__":
    sys.exit(main())
