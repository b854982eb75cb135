# Experiment for the GPU machine (session 23; docs/plans/cuda_small_m_products.md, section 2c): what two
# LayerNorm kernels a layer cost in a CUDA graph of bert-sized layers (torch, bf16, batch 1).
#   python3 scripts/gpu_experiments/layernorm_cost.py
import torch
torch.manual_seed(0)
dev, dt = 'cuda', torch.bfloat16
L, M, D, F = 12, 128, 768, 3072
def W(n, k): return torch.randn(n, k, device=dev, dtype=dt) * 0.02
layers = [dict(qkv=W(3 * D, D), o=W(D, D), f1=W(F, D), f2=W(D, F), g1=torch.ones(D, device=dev, dtype=dt),
               b1=torch.zeros(D, device=dev, dtype=dt), g2=torch.ones(D, device=dev, dtype=dt),
               b2=torch.zeros(D, device=dev, dtype=dt)) for _ in range(L)]
x0 = torch.randn(M, D, device=dev, dtype=dt)
lin, ln = torch.nn.functional.linear, torch.nn.functional.layer_norm
def layer(x, w, norms):
    q = lin(x, w['qkv'])
    a = lin(q[:, :D], w['o']) + x
    if norms: a = ln(a, (D,), w['g1'], w['b1'])
    h = torch.nn.functional.gelu(lin(a, w['f1']))
    y = lin(h, w['f2']) + a
    if norms: y = ln(y, (D,), w['g2'], w['b2'])
    return y
def timed(norms, reps=300):
    def model():
        x = x0
        for w in layers: x = layer(x, w, norms)
        return x
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): model()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g): model()
    for _ in range(20): g.replay()
    torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2] * 1000
print(torch.cuda.get_device_name(), torch.__version__)
for r in range(3):
    with_ln, without = timed(True), timed(False)
    print(f"round {r}: 12 layers, us per run: with 2 LayerNorms a layer {with_ln:.1f}, without {without:.1f}: "
          f"{(with_ln - without) / 24:.2f} us a LayerNorm kernel")
