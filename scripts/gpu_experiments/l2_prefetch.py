# Experiment for the GPU machine (session 23; docs/plans/cuda_small_m_products.md, section 2c): do
# bert-sized M = 128 products run faster with their weights in L2, and when the next layer's weights are
# pulled into L2 on a side stream while the current layer computes? torch, bf16, one CUDA graph a side.
#   python3 scripts/gpu_experiments/l2_prefetch.py
import torch
torch.manual_seed(0)
dev, dt = 'cuda', torch.bfloat16
L, M, D, F = 12, 128, 768, 3072
def W(n, k): return torch.randn(n, k, device=dev, dtype=dt) * 0.02
layers = [dict(qkv=W(3 * D, D), o=W(D, D), f1=W(F, D), f2=W(D, F)) for _ in range(L)]
shared = [layers[0]] * L  # one layer's weights 12 times: warm L2, the upper bound
x0 = torch.randn(M, D, device=dev, dtype=dt)
lin = torch.nn.functional.linear

def layer(x, w):
    q = lin(x, w['qkv'])
    a = lin(q[:, :D], w['o']) + x
    h = torch.nn.functional.gelu(lin(a, w['f1']))
    return lin(h, w['f2']) + a

side = torch.cuda.Stream()
def prefetch(w, step):
    # touch one element of every 32-byte sector: the whole tensor comes into L2
    for t in w.values():
        t.view(-1)[::step].float().sum()

def model(ws, mode, step=16):
    x = x0
    main = torch.cuda.current_stream()
    for i, w in enumerate(ws):
        if mode == 'prefetch' and i + 1 < len(ws):
            ev = torch.cuda.Event(); ev.record(main)
            side.wait_event(ev)
            with torch.cuda.stream(side):
                prefetch(ws[i + 1], step)
            done = torch.cuda.Event(); done.record(side)
        x = layer(x, w)
        if mode == 'prefetch' and i + 1 < len(ws):
            main.wait_event(done)
    return x

def timed(ws, mode, step=16, reps=200):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): model(ws, mode, step)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(ws, mode, step)
    for _ in range(20): g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2] * 1000, out

print(torch.cuda.get_device_name(), torch.__version__)
for rnd in range(2):
    base, y0 = timed(layers, 'plain')
    warm, _ = timed(shared, 'plain')
    pre16, y1 = timed(layers, 'prefetch', 16)
    pre64, _ = timed(layers, 'prefetch', 64)
    print(f"round {rnd}: 12 layers x 4 products, us per run (median of 200 replays): cold weights {base:.1f}, "
          f"one layer's weights reused (warm L2) {warm:.1f}, next layer prefetched on a side stream (every 32 B) {pre16:.1f}, "
          f"(every 128 B) {pre64:.1f}; same output: {torch.equal(y0, y1)}")
