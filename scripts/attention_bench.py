#!/usr/bin/env python3
"""Attention graphs for kiln beside PyTorch's scaled_dot_product_attention (the numbers in docs/PERFORMANCE.md,
session 11).

  attention_bench.py make DIR   writes DIR/attn_S.onnx and DIR/attn_mask_S.onnx for S in 128, 512, 2048, 8192:
                                Transpose(K) -> MatMul -> Mul 0.125 [-> Add mask [1,1,1,S]] -> Softmax -> MatMul,
                                inputs [1,12,S,64] fp32 (time them with `kiln run --device cuda --precision bf16`)
  attention_bench.py torch      times SDPA in bf16 on the GPU at the same shapes (an all-zero additive mask for the
                                masked ones), its default choice and each backend forced (flash, cuDNN,
                                memory-efficient; one that refuses the inputs says so): 20 calls captured in one
                                CUDA graph, median of 30 replays / 20
"""
import contextlib, os, sys
def make(d, seqs):
    import onnx
    from onnx import helper as h, TensorProto as T
    os.makedirs(d, exist_ok=True)
    for S in seqs:
        for mask in (0, 1):
            ins = [h.make_tensor_value_info(n, T.FLOAT, [1, 12, S, 64]) for n in "qkv"]
            nodes = [h.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), h.make_node("MatMul", ["q", "kt"], ["s"]),
                     h.make_node("Mul", ["s", "c"], ["ss"])]
            last = "ss"
            if mask:
                ins.append(h.make_tensor_value_info("m", T.FLOAT, [1, 1, 1, S]))
                nodes.append(h.make_node("Add", ["ss", "m"], ["sm"])); last = "sm"
            nodes += [h.make_node("Softmax", [last], ["p"], axis=-1), h.make_node("MatMul", ["p", "v"], ["y"])]
            g = h.make_graph(nodes, "attn", ins, [h.make_tensor_value_info("y", T.FLOAT, [1, 12, S, 64])],
                             [h.make_tensor("c", T.FLOAT, [], [0.125])])
            m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); onnx.checker.check_model(m)
            onnx.save(m, f"{d}/attn{'_mask' if mask else ''}_{S}.onnx")
def torch_bench(seqs):
    import torch
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    from torch.nn.attention import sdpa_kernel, SDPBackend
    backends = [("default", None), ("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    for S in seqs:
        for mask in (0, 1):
            q, k, v = (torch.randn(1, 12, S, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            am = torch.zeros(1, 1, 1, S, device="cuda", dtype=torch.bfloat16) if mask else None
            for name, backend in backends:
                f = lambda: sdpa(q, k, v, attn_mask=am)
                try:
                    with (sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()):
                        for _ in range(3): f()
                        torch.cuda.synchronize()
                        gr = torch.cuda.CUDAGraph()
                        with torch.cuda.graph(gr):
                            for _ in range(20): f()
                except Exception as e:  # a backend that does not take these inputs (flash: no mask)
                    print(f"torch sdpa S={S} mask={mask} backend={name} unavailable: {str(e).splitlines()[0][:80]}", flush=True)
                    continue
                ts = []
                for _ in range(30):
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record(); gr.replay(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) / 20)
                ts.sort(); print(f"torch sdpa S={S} mask={mask} backend={name} median_ms={ts[15]:.4f}", flush=True)
if __name__ == "__main__":
    seqs = [128, 512, 2048, 8192]
    if sys.argv[1] == "make": make(sys.argv[2], seqs)
    elif sys.argv[1] == "torch": torch_bench(seqs)
