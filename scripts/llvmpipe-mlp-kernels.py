#!/usr/bin/env python3
"""How fast can an MLP gradient kernel be on Mesa's software Vulkan (llvmpipe)?

A measurement, not part of the app: it generates WGSL gradient kernels specialised to one
architecture (every loop over units and inputs written out, so activations, errors, θ and the
per-invocation gradient sums are SSA values, not arrays) and times them on whatever Vulkan
adapter wgpu-py finds. It answers the questions behind issue 27's GPU goal on llvmpipe:
where the time of `shaders/mlp.wgsl` goes, and what a kernel that avoids it would cost to
compile. Results of 2026-12-02 are in docs/performance.md ("The MLP engine").

    python3 -m venv /tmp/wgpu && /tmp/wgpu/bin/pip install wgpu numpy
    /tmp/wgpu/bin/python scripts/llvmpipe-mlp-kernels.py --hidden 16,16 --lanes 32

Each kernel computes Σ over a full batch of 256 two-class points of ∇CE for one network per
workgroup of `--lanes` invocations; invocation r takes the examples r, r + lanes, … and keeps
its own partial sums, which are then added across the workgroup (`--reduction`):
  none      no reduction (each invocation writes one checksum): the arithmetic alone;
  loop      partial sums staged in workgroup memory, each parameter's summed by one owner;
  subgroup  subgroupAdd over each subgroup first, then the subgroups' sums by an owner.
`--theta` says where the forward and backward passes read θ from: `registers` (copied once
into SSA values before the example loop), `workgroup` or `storage` (read at every use, inside
the loop), or `constant` (literals: the arithmetic without any θ load). The first timed
dispatch includes the driver's compile (Mesa caches it on disk: clear
~/.cache/mesa_shader_cache to see it again).
"""
import argparse
import json
import pathlib
import re
import time

import numpy as np
import wgpu

# The rational tanh of the shaders, read from shaders/common.wgsl (one copy of its constants).
_COMMON = pathlib.Path(__file__).resolve().parent.parent / "shaders" / "common.wgsl"
TANH = re.search(r"fn tanh_rational\(.*?\n}\n", _COMMON.read_text(), re.S).group(0)


def layers_of(sizes):
    """(weights offset, biases offset, inputs, outputs) per weight layer, and P."""
    offset, out = 0, []
    for n_in, n_out in zip(sizes, sizes[1:]):
        out.append((offset, offset + n_in * n_out, n_in, n_out))
        offset += (n_in + 1) * n_out
    return out, offset


def kernel(sizes, lanes, theta, reduction, chunk):
    layers, params = layers_of(sizes)
    depth, classes = len(layers), sizes[-1]
    subgroups = max(1, lanes // 8)
    w = [
        "@group(0) @binding(0) var<storage, read_write> state: array<f32>;",
        "@group(0) @binding(1) var<storage, read> data: array<vec4<f32>>;",
        "struct Params { chains: u32, n: u32, pad0: u32, pad1: u32 }",
        "@group(0) @binding(2) var<uniform> params: Params;",
        TANH,
        f"var<workgroup> net_theta: array<f32, {params}>;",
        f"var<workgroup> staged: array<f32, {chunk * lanes}>;",
        f"@compute @workgroup_size({lanes})",
        "fn main(@builtin(workgroup_id) group: vec3<u32>,",
        "        @builtin(local_invocation_index) lane: u32) {",
        "  let net = group.x;",
        "  let chains = params.chains;",
    ]
    if theta in ("registers", "workgroup"):
        w.append(f"  for (var i = lane; i < {params}u; i += {lanes}u) {{")
        w.append("    net_theta[i] = state[i * chains + net];")
        w.append("  }")
        w.append("  workgroupBarrier();")
    if theta == "registers":
        w += [f"  let t{k} = net_theta[{k}];" for k in range(params)]

    def th(k):
        return {
            "registers": f"t{k}",
            "workgroup": f"net_theta[{k}]",
            "storage": f"state[{k}u * chains + net]",
            "constant": f"{0.01 * (k % 13) - 0.06:.3f}",
        }[theta]

    w += [f"  var g{k} = 0.0;" for k in range(params)]
    w.append(f"  for (var j = lane; j < params.n; j += {lanes}u) {{")
    w.append("    let point = data[j];")
    w.append("    let a0_0 = point.x;")
    w.append("    let a0_1 = point.y;")
    for l, (weights, biases, n_in, n_out) in enumerate(layers):
        for o in range(n_out):
            w.append(f"    var z{l + 1}_{o} = {th(biases + o)};")
            for i in range(n_in):
                w.append(f"    z{l + 1}_{o} += {th(weights + o * n_in + i)} * a{l}_{i};")
            f = "tanh_rational" if l + 1 < depth else ""
            w.append(f"    let a{l + 1}_{o} = {f}(z{l + 1}_{o});")
    w.append(f"    var top = a{depth}_0;")
    w += [f"    top = max(top, a{depth}_{c});" for c in range(1, classes)]
    w += [f"    let e{c} = exp(a{depth}_{c} - top);" for c in range(classes)]
    w.append("    var total = e0;")
    w += [f"    total += e{c};" for c in range(1, classes)]
    w.append("    let label = u32(point.z);")
    for c in range(classes):
        w.append(f"    let d{depth}_{c} = e{c} / total - select(0.0, 1.0, label == {c}u);")
    for l in reversed(range(depth)):
        weights, biases, n_in, n_out = layers[l]
        for o in range(n_out):
            w.append(f"    g{biases + o} += d{l + 1}_{o};")
            for i in range(n_in):
                w.append(f"    g{weights + o * n_in + i} += d{l + 1}_{o} * a{l}_{i};")
        if l > 0:
            for i in range(n_in):
                w.append(f"    var back{l}_{i} = 0.0;")
                for o in range(n_out):
                    w.append(f"    back{l}_{i} += {th(weights + o * n_in + i)} * d{l + 1}_{o};")
                w.append(f"    let d{l}_{i} = back{l}_{i} * (1.0 - a{l}_{i} * a{l}_{i});")
    w.append("  }")
    if reduction == "none":
        checksum = " + ".join(f"g{k}" for k in range(params))
        w.append(f"  state[({2 * params}u + lane) * chains + net] = {checksum};")
    for first in range(0, params, chunk) if reduction != "none" else []:
        end = min(params, first + chunk)
        if first > 0:
            w.append("  workgroupBarrier();")
        slots = lanes if reduction == "loop" else subgroups
        for k in range(first, end):
            if reduction == "loop":
                w.append(f"  staged[{k - first}u * {lanes}u + lane] = g{k};")
            else:
                w.append(f"  staged[{k - first}u * {subgroups}u + lane / 8u] = subgroupAdd(g{k});")
        w.append("  workgroupBarrier();")
        w.append(f"  for (var k = lane; k < {end - first}u; k += {lanes}u) {{")
        w.append(f"    var sum = staged[k * {slots}u];")
        w.append(f"    for (var r = 1u; r < {slots}u; r++) {{ sum += staged[k * {slots}u + r]; }}")
        w.append(f"    state[({params}u + {first}u + k) * chains + net] = sum;")
        w.append("  }")
    w.append("}")
    return "\n".join(w), params


def reference(sizes, theta, data):
    """Σ over the points of ∇CE in numpy (f64), θ laid out as the kernel reads it."""
    layers, _ = layers_of(sizes)
    theta = theta.astype(np.float64)
    acts = [data[:, :2].astype(np.float64)]
    for l, (weights, biases, n_in, n_out) in enumerate(layers):
        z = acts[-1] @ theta[weights:biases].reshape(n_out, n_in).T + theta[biases : biases + n_out]
        acts.append(np.tanh(z) if l + 1 < len(layers) else z)
    e = np.exp(acts[-1] - acts[-1].max(axis=1, keepdims=True))
    delta = e / e.sum(axis=1, keepdims=True)
    delta[np.arange(len(data)), data[:, 2].astype(int)] -= 1.0
    grad = np.zeros_like(theta)
    for l in reversed(range(len(layers))):
        weights, biases, n_in, n_out = layers[l]
        grad[weights:biases] = (delta.T @ acts[l]).reshape(-1)
        grad[biases : biases + n_out] = delta.sum(axis=0)
        w = theta[weights:biases].reshape(n_out, n_in)
        delta = (delta @ w) * (1.0 - acts[l] ** 2)
    return grad


def measure(sizes, lanes, theta, reduction, networks, points, repeats):
    chunk = max(lanes, (2048 // lanes) // lanes * lanes)  # 8 KiB staged
    source, params = kernel(sizes, lanes, theta, reduction, chunk)
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    features = ["subgroup"] if reduction == "subgroup" else []
    # θ and the staged sums together pass wgpu's default 16 KiB for the deeper networks.
    storage = "max-compute-workgroup-storage-size"
    device = adapter.request_device_sync(
        required_features=features, required_limits={storage: adapter.limits[storage]}
    )
    started = time.time()
    module = device.create_shader_module(code=source)
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )
    rng = np.random.default_rng(1)
    # θ, the gradient, and one checksum row per invocation for `--reduction none`.
    state = (rng.standard_normal((2 * params + lanes) * networks) * 0.5).astype(np.float32)
    data = np.zeros((points, 4), np.float32)
    data[:, :2] = rng.standard_normal((points, 2))
    data[:, 2] = rng.integers(0, sizes[-1], points)
    usage = wgpu.BufferUsage
    state_buffer = device.create_buffer_with_data(data=state, usage=usage.STORAGE | usage.COPY_SRC)
    data_buffer = device.create_buffer_with_data(data=data, usage=usage.STORAGE)
    params_buffer = device.create_buffer_with_data(
        data=np.array([networks, points, 0, 0], np.uint32), usage=usage.UNIFORM
    )
    bind_group = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": state_buffer}},
            {"binding": 1, "resource": {"buffer": data_buffer}},
            {"binding": 2, "resource": {"buffer": params_buffer}},
        ],
    )

    def dispatch(times):
        encoder = device.create_command_encoder()
        for _ in range(times):
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind_group)
            compute.dispatch_workgroups(networks, 1, 1)
            compute.end()
        device.queue.submit([encoder.finish()])
        device.queue.read_buffer(state_buffer, 0, 16)

    dispatch(1)
    compiled = time.time()
    worst = None
    if reduction != "none":
        # Network 0's gradient against numpy (np.tanh: the rational tanh is within 1e-6).
        out = np.frombuffer(device.queue.read_buffer(state_buffer), np.float32)
        theta0 = state[: params * networks].reshape(params, networks)[:, 0]
        got = out[params * networks : 2 * params * networks].reshape(params, networks)[:, 0]
        worst = float(np.max(np.abs(got - reference(sizes, theta0, data))))
    dispatch(repeats)
    seconds = time.time() - compiled
    return {
        "adapter": adapter.info["description"],
        "network": "-".join(map(str, sizes)),
        "parameters": params,
        "lanes": lanes,
        "theta": theta,
        "reduction": reduction,
        "wgsl_lines": source.count("\n") + 1,
        "max_abs_error_vs_numpy": worst,
        "compile_and_first_s": round(compiled - started, 2),
        "network_gradients_per_s": networks * repeats / seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hidden", default="16,16", help="hidden widths, e.g. 32,32,32")
    parser.add_argument("--lanes", type=int, default=32, help="invocations per network")
    parser.add_argument(
        "--theta", choices=["registers", "workgroup", "storage", "constant"], default="registers"
    )
    parser.add_argument("--reduction", choices=["loop", "subgroup", "none"], default="loop")
    parser.add_argument("--networks", type=int, default=1024)
    parser.add_argument("--points", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    a = parser.parse_args()
    sizes = [2] + [int(h) for h in a.hidden.split(",")] + [2]
    result = measure(sizes, a.lanes, a.theta, a.reduction, a.networks, a.points, a.repeats)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
