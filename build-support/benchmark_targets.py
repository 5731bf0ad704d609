# A BUILD-file prelude (pants.toml: build_file_prelude_globs): the targets every benchmark declares,
# so that a benchmark's BUILD file says only what is its own. Prelude code runs in Pants' BUILD
# dialect: target types are in scope, and nothing may be imported.

SCENARIOS = ("Offline", "Server", "SingleStream", "MultiStream")


def mlperf_benchmark(
    module, scenarios=SCENARIOS, actions=None, gpu_actions=None, host_packages=True, triton=True
):
    """One PEX per scenario (`pants run benchmarks/<name>:offline`; flags after `--` are appended to
    the frozen `--scenario`), one per action, and `:serve`, its Triton server. A benchmark that has
    MLPerf's Interactive scenario lists "Interactive" in `scenarios` and gets `:interactive`.

    module: the package under mlperf_harness.benchmarks; its `main:main` runs a scenario.
    actions: {target name: "module:function"} under that package (download_model, ...).
    gpu_actions: the same, for steps that run on the GPU host with the host's torch (and TensorRT).
    host_packages: scenario PEXes use the host's own torch after their bundled packages
        (inherit_path="fallback"), rather than carrying gigabytes of CUDA libraries (docs/deploy.md).
    triton: declare `:serve` (a benchmark whose model Triton cannot serve as a batch model, GPT-J's
        generation, has none).
    """
    base = "mlperf_harness.benchmarks." + module
    for scenario in scenarios:
        pex_binary(
            name=scenario.lower(),
            entry_point=base + ".main:main",
            args=["--scenario", scenario],
            inherit_path="fallback" if host_packages else None,
        )
    # `pants package benchmarks/<name>:serve`: a Triton server of the benchmark's model
    # (mlperf_harness/triton/serve.py, docs/triton.md), with the same flags as a run.
    if triton:
        pex_binary(
            name="serve",
            entry_point="mlperf_harness.triton.serve:main",
            args=["--benchmark_module", base + ".benchmark"],
            dependencies=["src/python/mlperf_harness/benchmarks/" + module + "/benchmark.py"],
            inherit_path="fallback" if host_packages else None,
        )
    for name, entry in (actions or {}).items():
        pex_binary(name=name, entry_point=base + "." + entry)
    for name, entry in (gpu_actions or {}).items():
        pex_binary(name=name, entry_point=base + "." + entry, inherit_path="fallback")
