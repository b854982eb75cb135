#!/usr/bin/env python3
"""PyTorch peer for kiln's GPU benchmark: batch-1 end-to-end latency of the zoo's architectures in torch.

Runs on the GPU machine only (needs CUDA torch and transformers; torchvision is optional). It builds the
architectures of tests/data/zoo (the configs of /work/shared/lab/gpu/export_zoo.py, random weights, seed 0)
and times each (model, dtype) in eager and then in each torch.compile mode, under model.eval() and
torch.no_grad(), with seeded random inputs of the zoo's shapes (bert/distilbert/gpt2: ids [1,128] with an
all-ones attention_mask, as kiln feeds masks; vit/resnet18: [1,3,224,224]; trocr_small: pixels
[1,3,224,224] and decoder ids [1,32]). Timing as lab/gpu/models.py: WARMUP untimed calls, then ITERS calls,
each bracketed by torch.cuda.synchronize() and timed with perf_counter (host wall time, launch overhead
included); median and min in ms. compile_s is the first compiled call (compile + one run). TF32 is off
(IEEE fp32, as kiln). One JSON line per measurement goes to DIR/torch_peer.jsonl and stdout; a failure, a
skip or a blown per-job deadline is a line with "error". No job starts when the budget is nearly spent.

usage: python3 scripts/torch_peer.py --models bert,gpt2 --dtypes fp32,bf16 \
           --modes eager,default,reduce-overhead --budget 300 --out DIR
"""
import argparse, gc, json, os, signal, statistics, sys, time, traceback

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--models", default="bert,distilbert,gpt2,vit,resnet18,trocr_small")
ap.add_argument("--dtypes", default="fp32,bf16")
ap.add_argument("--modes", default="eager,default,reduce-overhead")
ap.add_argument("--budget", type=float, default=300.0, help="seconds for the whole script")
ap.add_argument("--job-timeout", type=float, default=90.0, help="per-job cap, seconds")
ap.add_argument("--warmup", type=int, default=10)
ap.add_argument("--iters", type=int, default=30)
ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/torch_peer"))
A = ap.parse_args()
sys.argv = sys.argv[:1]  # export_zoo.py saw an HF build parse argv; keep it clean before transformers loads
T0 = time.time()
DEADLINE = T0 + A.budget

import torch

torch.backends.cuda.matmul.allow_tf32 = False  # IEEE fp32, like kiln (bf16 matmuls are unaffected)
torch.backends.cudnn.allow_tf32 = False
dyn = torch._dynamo.config
for k in ("cache_size_limit", "recompile_limit"):
    if hasattr(dyn, k):
        setattr(dyn, k, 64)
if hasattr(dyn, "automatic_dynamic_shapes"):
    dyn.automatic_dynamic_shapes = False

DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
EST = {"eager": 15, "default": 30, "reduce-overhead": 30, "max-autotune-no-cudagraphs": 150}  # s, to start
ZOO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "zoo", "manifest.json")
os.makedirs(A.out, exist_ok=True)
RES = open(os.path.join(A.out, "torch_peer.jsonl"), "w")
BASE = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if torch.cuda.is_available() else None}


class Deadline(Exception):
    pass


def _alarm(sig, frm):
    raise Deadline("per-job deadline reached")


signal.signal(signal.SIGALRM, _alarm)


def left():
    return DEADLINE - time.time()


def emit(rec):
    rec = {**rec, **BASE}
    RES.write(json.dumps(rec) + "\n")
    RES.flush()
    print(json.dumps(rec), flush=True)


def first_tensor(o):
    for k in ("logits", "last_hidden_state"):
        if hasattr(o, k):
            return getattr(o, k)
    return o[0] if isinstance(o, (tuple, list)) else o


def build(name):
    """-> (module, args, kwargs, info) on CPU in fp32; the zoo's configs (export_zoo.py)."""
    import transformers as T
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    ids = lambda vocab, n: torch.randint(0, vocab, (1, n), generator=g)
    ones = torch.ones(1, 128, dtype=torch.long)
    px = lambda: torch.randn(1, 3, 224, 224, generator=g)
    info = {}
    if name == "bert":
        m = T.BertForMaskedLM(T.BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                                           num_attention_heads=12, intermediate_size=3072))
        args, kw = (), dict(input_ids=ids(30522, 128), attention_mask=ones)
    elif name == "distilbert":
        m = T.DistilBertForMaskedLM(T.DistilBertConfig())
        args, kw = (), dict(input_ids=ids(30522, 128), attention_mask=ones)
    elif name == "gpt2":  # the zoo's GPT2Wrap: all-ones mask, no cache
        m = T.GPT2LMHeadModel(T.GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12,
                                           n_head=12, use_cache=False))
        args, kw = (), dict(input_ids=ids(50257, 128), attention_mask=ones, use_cache=False)
    elif name == "vit":
        m = T.ViTForImageClassification(T.ViTConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                                    intermediate_size=3072, image_size=224, patch_size=16,
                                                    num_labels=1000))
        args, kw = (), dict(pixel_values=px())
    elif name == "resnet18":
        try:
            import torchvision
            m, args, kw, info["impl"] = torchvision.models.resnet18(weights=None), (px(),), {}, "torchvision"
        except ImportError:  # same layers and parameter count in transformers
            m = T.ResNetForImageClassification(T.ResNetConfig(
                embedding_size=64, hidden_sizes=[64, 128, 256, 512], depths=[2, 2, 2, 2], layer_type="basic",
                downsample_in_first_stage=False, num_labels=1000))
            args, kw, info["impl"] = (), dict(pixel_values=px()), "transformers"
    elif name == "trocr_small":  # the zoo's model is ViT-small encoder + BERT decoder (decoder_kind "bert")
        enc = T.ViTConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=6, intermediate_size=1536,
                          image_size=224, patch_size=16)
        dec = T.BertConfig(vocab_size=8000, hidden_size=256, num_hidden_layers=6, num_attention_heads=8,
                           intermediate_size=1024, is_decoder=True, add_cross_attention=True)
        cfg = T.VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
        cfg.decoder_start_token_id, cfg.pad_token_id = 2, 1
        m = T.VisionEncoderDecoderModel(config=cfg)
        args, kw = (), dict(pixel_values=px(), decoder_input_ids=ids(8000, 32), use_cache=False)
    else:
        raise ValueError("unknown model " + name)
    info["n_params"] = int(sum(p.numel() for p in m.parameters()))
    try:
        want = json.load(open(ZOO))["models"][name]["n_params"]
        info["zoo_params_match"] = want == info["n_params"]
    except Exception:
        pass
    return m.eval(), args, kw, info


def to_dev(x, dtype):
    if isinstance(x, torch.Tensor):
        x = x.to("cuda")
        return x.to(dtype) if x.is_floating_point() else x
    return x


def timeit(fn):
    for _ in range(A.warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(A.iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": round(statistics.median(ts), 4), "min_ms": round(min(ts), 4)}


def run_model(name, dts, modes, table):
    """Eager first (it builds the model), then each compiled mode. Every job emits exactly one line."""
    state = {}
    for mode in modes:
        rec = {"model": name, "dtype": dts, "mode": mode, "median_ms": None, "min_ms": None, "compile_s": None}
        need = EST.get(mode, 60)
        if left() < need:
            rec["error"] = "skipped: budget (%.0f s left, ~%d s needed)" % (left(), need)
        elif mode != "eager" and "m" not in state:
            rec["error"] = "skipped: eager failed"
        if "error" in rec:
            emit(rec); table[(name, dts, mode)] = "skip"
            continue
        signal.alarm(max(1, int(min(left() - 3, max(A.job_timeout, 2 * need)))))
        try:
            with torch.no_grad():
                if mode == "eager":
                    m, args, kw, info = build(name)
                    m = m.to("cuda", dtype=DT[dts])
                    args = tuple(to_dev(a, DT[dts]) for a in args)
                    kw = {k: to_dev(v, DT[dts]) for k, v in kw.items()}
                    ref = first_tensor(m(*args, **kw)).float().clone()
                    state.update(m=m, args=args, kw=kw, ref=ref)
                    rec.update(info)
                    rec.update(timeit(lambda: m(*args, **kw)))
                else:
                    m, args, kw, ref = state["m"], state["args"], state["kw"], state["ref"]
                    torch._dynamo.reset()
                    cm = torch.compile(m, mode=mode)
                    t0 = time.perf_counter()
                    out = first_tensor(cm(*args, **kw)).float()
                    torch.cuda.synchronize()
                    rec["compile_s"] = round(time.perf_counter() - t0, 2)
                    # before the next call: reduce-overhead's CUDA graphs reuse the output buffer
                    err = float((out - ref).norm() / (ref.norm() + 1e-30))
                    rec["rel_err_vs_eager"] = err if err == err and err != float("inf") else str(err)
                    del out
                    rec.update(timeit(lambda: cm(*args, **kw)))
                    del cm
        except Deadline:
            rec["error"] = "deadline: per-job or budget limit hit"
        except Exception as e:
            rec["error"] = "%s: %s" % (type(e).__name__, str(e)[:500])
            rec["tb"] = traceback.format_exc()[-1200:]
        finally:
            signal.alarm(0)
        emit(rec)
        table[(name, dts, mode)] = "%.3f" % rec["median_ms"] if rec.get("median_ms") is not None else "err"
    state.clear()
    torch._dynamo.reset()
    gc.collect()
    torch.cuda.empty_cache()


def main():
    models, dtypes = A.models.split(","), A.dtypes.split(",")
    modes = ["eager"] + [m for m in A.modes.split(",") if m and m != "eager"]
    try:  # start the compiler stack once, so the first model's compile_s is not the stack's start-up
        signal.alarm(max(1, int(min(60, left() - 3))))
        f = torch.compile(lambda t: torch.relu(t) + 1)
        f(torch.randn(1024, device="cuda"))
        torch.cuda.synchronize()
    except BaseException as e:
        print("compiler warm-up failed: %r" % (e,), file=sys.stderr, flush=True)
    finally:
        signal.alarm(0)
    table = {}
    for name in models:
        for dts in dtypes:
            try:
                run_model(name, dts, modes, table)
            except Exception as e:  # never let one model end the run
                emit({"model": name, "dtype": dts, "mode": "*", "error": "%s: %s" % (type(e).__name__, e)})
    w = max([len(m) for m in modes] + [9])
    print("\n%-12s %-5s " % ("model", "dtype") + " ".join("%*s" % (w, m) for m in modes))
    for name in models:
        for dts in dtypes:
            print("%-12s %-5s " % (name, dts) + " ".join("%*s" % (w, table.get((name, dts, m), "-")) for m in modes))
    print("(median ms, %d iters after %d warmup; torch %s on %s; %.0f s total)" % (
        A.iters, A.warmup, BASE["torch"], BASE["device"], time.time() - T0), flush=True)


if __name__ == "__main__":
    main()
