"""Greedy decoding, Tempo against llama.cpp and PyTorch eager, with the same random weights.

Writes a Llama checkpoint with random weights in Hugging Face's layout (config.json and
model.safetensors), converts it to GGUF (F32, and F16 for the 2-D weights) with the `gguf`
package, and decodes B sequences of T positions from token 1 with each system on 1 thread:
  tempo      `tempo generate --checkpoint DIR --batch B` (its "ms between tokens"), with the
             matmul weights as float32 and kept as float16 (--weights-dtype f16), the K/V cache
             as --kv-dtype says (default f16, as llama.cpp keeps it);
  llama.cpp  llama-cpp-python's bindings to llama.cpp's C API: one llama_decode of B tokens, one
             per sequence, a step;
  torch      a Llama decoder written in PyTorch with a K/V cache, the math of Hugging Face's
             LlamaForCausalLM (eager, no_grad).
With --attention window:W every system attends to the last W positions; llama.cpp has no such
pattern for Llama models and is not run, and the ratios are to PyTorch. Prints one Markdown
table: ms per decoding step (B tokens), the ratio to llama.cpp at F32, and how many of the first
sequence's tokens equal Tempo F32's. Run by bench/decode_peers.sh, which installs the peers.
"""

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

SHAPES = {
    # name: (vocab, dim, layers, heads, kv_heads, ffn)
    "d768": (4096, 768, 6, 12, 4, 2048),
    "1b": (128256, 2048, 16, 32, 8, 8192),  # Llama-3.2-1B's shape
}
TIED = {"1b"}  # the head is the embedding
ROPE_THETA = 500000.0
NORM_EPS = 1e-5


def hf_tensors(name, seed):
    """HF-named float32 weights: N(0, 0.02) matrices, norm gains near 1."""
    vocab, dim, layers, heads, kv, ffn = SHAPES[name]
    hd = dim // heads
    rng = np.random.default_rng(seed)

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float32)

    def gain(n):
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    t = {"model.embed_tokens.weight": mat(vocab, dim)}
    for l in range(layers):
        p = f"model.layers.{l}."
        t[p + "input_layernorm.weight"] = gain(dim)
        t[p + "self_attn.q_proj.weight"] = mat(heads * hd, dim)
        t[p + "self_attn.k_proj.weight"] = mat(kv * hd, dim)
        t[p + "self_attn.v_proj.weight"] = mat(kv * hd, dim)
        t[p + "self_attn.o_proj.weight"] = mat(dim, heads * hd)
        t[p + "post_attention_layernorm.weight"] = gain(dim)
        t[p + "mlp.gate_proj.weight"] = mat(ffn, dim)
        t[p + "mlp.up_proj.weight"] = mat(ffn, dim)
        t[p + "mlp.down_proj.weight"] = mat(dim, ffn)
    t["model.norm.weight"] = gain(dim)
    if name not in TIED:
        t["lm_head.weight"] = mat(vocab, dim)
    return t


def write_checkpoint(folder, shape, tensors):
    vocab, dim, layers, heads, kv, ffn = shape
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": dim,
        "intermediate_size": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv, "vocab_size": vocab, "rms_norm_eps": NORM_EPS,
        "rope_theta": ROPE_THETA, "max_position_embeddings": 131072,
        "tie_word_embeddings": "lm_head.weight" not in tensors, "torch_dtype": "float32",
    }
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    header, offset = {}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for a in tensors.values():
            f.write(a.tobytes())


def rope_interleaved(w, heads):
    """HF's rotary layout (the two halves of each head) to GGUF's (interleaved pairs)."""
    rows, cols = w.shape
    return w.reshape(heads, 2, rows // heads // 2, cols).swapaxes(1, 2).reshape(rows, cols)


def write_gguf(path, shape, tensors, f16):
    import gguf  # noqa: PLC0415 (installed by decode_peers.sh)

    vocab, dim, layers, heads, kv, ffn = shape
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(131072)
    w.add_embedding_length(dim)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_rope_dimension_count(dim // heads)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_layer_norm_rms_eps(NORM_EPS)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32)
    # A SentencePiece-style vocabulary of placeholders: decoding here feeds token ids directly.
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    tokens += [f"\u2581t{k}" for k in range(vocab - len(tokens))]
    types += [1] * (vocab - len(types))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * vocab)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def add(name, a):
        w.add_tensor(name, a.astype(np.float16) if f16 and a.ndim == 2 else a)

    add("token_embd.weight", tensors["model.embed_tokens.weight"])
    for l in range(layers):
        p, b = f"model.layers.{l}.", f"blk.{l}."
        add(b + "attn_norm.weight", tensors[p + "input_layernorm.weight"])
        add(b + "attn_q.weight", rope_interleaved(tensors[p + "self_attn.q_proj.weight"], heads))
        add(b + "attn_k.weight", rope_interleaved(tensors[p + "self_attn.k_proj.weight"], kv))
        add(b + "attn_v.weight", tensors[p + "self_attn.v_proj.weight"])
        add(b + "attn_output.weight", tensors[p + "self_attn.o_proj.weight"])
        add(b + "ffn_norm.weight", tensors[p + "post_attention_layernorm.weight"])
        add(b + "ffn_gate.weight", tensors[p + "mlp.gate_proj.weight"])
        add(b + "ffn_up.weight", tensors[p + "mlp.up_proj.weight"])
        add(b + "ffn_down.weight", tensors[p + "mlp.down_proj.weight"])
    add("output_norm.weight", tensors["model.norm.weight"])
    if "lm_head.weight" in tensors:
        add("output.weight", tensors["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def run_tempo(tempo, folder, T, B, opts, dtype="f32"):
    out = subprocess.run([tempo, "generate", "--checkpoint", folder, "--tokens", str(T),
                          "--prompt-tokens", "1", "--batch", str(B), "--weights-dtype", dtype,
                          "--kv-dtype", opts.kv_dtype, "--attention", opts.attention],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"tempo generate failed: {out.stderr.strip()}")
    ms = float(re.search(r"([0-9.]+) ms between tokens", out.stdout + out.stderr).group(1))
    tokens = [int(x) for x in re.search(r"sequence 0: ([0-9 ]+)", out.stdout).group(1).split()]
    return ms, tokens


QUIET = None  # llama.cpp's log callback, kept alive while llama.cpp may call it


def run_llama_cpp(path, T, B):
    """B sequences decoded together: one llama_decode of B tokens (one per sequence) a step."""
    import llama_cpp  # noqa: PLC0415

    global QUIET  # noqa: PLW0603
    QUIET = QUIET or llama_cpp.llama_log_callback(lambda level, text, data: None)
    llama_cpp.llama_log_set(QUIET, None)
    llama_cpp.llama_backend_init()
    model = llama_cpp.llama_model_load_from_file(path.encode(),
                                                 llama_cpp.llama_model_default_params())
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = B * T, B, B, B
    params.n_threads = params.n_threads_batch = 1
    params.kv_unified = False  # a cache of T cells per sequence
    ctx = llama_cpp.llama_init_from_model(model, params)
    vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    batch = llama_cpp.llama_batch_init(B, 0, 1)
    last, first_seq, times = [1] * B, [1], []
    for pos in range(T - 1):
        start = time.perf_counter()
        batch.n_tokens = B
        for b in range(B):
            batch.token[b], batch.pos[b], batch.n_seq_id[b] = last[b], pos, 1
            batch.seq_id[b][0], batch.logits[b] = b, 1
        if llama_cpp.llama_decode(ctx, batch) != 0:
            sys.exit(f"llama_decode failed at position {pos}")
        for b in range(B):
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, b), (vocab,))
            last[b] = int(np.argmax(logits))
        first_seq.append(last[0])
        times.append(time.perf_counter() - start)
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    return 1e3 * float(np.mean(times[1:])), first_seq


def run_torch(tensors, shape, T, B, window):
    """window > 0: each query attends to the last `window` positions (itself included)."""
    import torch  # noqa: PLC0415

    torch.set_num_threads(1)
    vocab, dim, layers, heads, kv, ffn = shape
    hd, group = dim // heads, heads // kv
    W = {k: torch.from_numpy(v) for k, v in tensors.items()}
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    inv = 1.0 / (ROPE_THETA ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))

    def rms(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + NORM_EPS) * g

    def rotate(x, pos):  # x (B, heads, hd): HF's rotate_half form
        angle = pos * inv
        cos, sin = torch.cat([angle.cos()] * 2), torch.cat([angle.sin()] * 2)
        half = torch.cat([-x[..., hd // 2:], x[..., :hd // 2]], -1)
        return x * cos + half * sin

    def linear(name, x):  # x (B, in) @ W^T, as torch.nn.Linear
        return x @ W[name].t()

    cache_k = [torch.zeros(B, kv, T, hd) for _ in range(layers)]
    cache_v = [torch.zeros(B, kv, T, hd) for _ in range(layers)]
    last, first_seq, times = torch.ones(B, dtype=torch.long), [1], []
    with torch.no_grad():
        for pos in range(T - 1):
            start = time.perf_counter()
            x = W["model.embed_tokens.weight"][last]
            for l in range(layers):
                p = f"model.layers.{l}."
                h = rms(x, W[p + "input_layernorm.weight"])
                q = rotate(linear(p + "self_attn.q_proj.weight", h).view(B, heads, hd), pos)
                k_new = linear(p + "self_attn.k_proj.weight", h).view(B, kv, hd)
                cache_k[l][:, :, pos] = rotate(k_new, pos)
                cache_v[l][:, :, pos] = linear(p + "self_attn.v_proj.weight", h).view(B, kv, hd)
                first = max(0, pos + 1 - window) if window else 0
                k = cache_k[l][:, :, first : pos + 1].repeat_interleave(group, 1)
                v = cache_v[l][:, :, first : pos + 1].repeat_interleave(group, 1)
                scores = (k @ q.unsqueeze(-1)).squeeze(-1) / hd ** 0.5  # (B, heads, pos + 1)
                att = (torch.softmax(scores, -1).unsqueeze(2) @ v).reshape(B, dim)
                x = x + linear(p + "self_attn.o_proj.weight", att)
                h = rms(x, W[p + "post_attention_layernorm.weight"])
                gate = torch.nn.functional.silu(linear(p + "mlp.gate_proj.weight", h))
                up = linear(p + "mlp.up_proj.weight", h)
                x = x + linear(p + "mlp.down_proj.weight", gate * up)
            last = (rms(x, W["model.norm.weight"]) @ head.t()).argmax(-1)
            first_seq.append(int(last[0]))
            times.append(time.perf_counter() - start)
    return 1e3 * float(np.mean(times[1:])), first_seq


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tempo", default="build/tempo")
    ap.add_argument("--shapes", default="d768", help="comma-separated: d768, 1b")
    ap.add_argument("--tokens", default="512,4096", help="comma-separated sequence lengths T")
    ap.add_argument("--batches", default="1,4,16", help="comma-separated batch sizes B")
    ap.add_argument("--peers", default="llama.cpp,torch", help="the peers to run besides Tempo")
    ap.add_argument("--work", default=None, help="folder for the checkpoints (default: temporary)")
    ap.add_argument("--attention", default="causal",
                    help="causal or window:W (llama.cpp has no window pattern for Llama: not run)")
    ap.add_argument("--kv-dtype", default="f16",
                    help="Tempo's K/V cache: f16 (llama.cpp's default cache type) or f32")
    args = ap.parse_args()
    if args.attention != "causal" and not re.fullmatch(r"window:[1-9][0-9]*", args.attention):
        sys.exit(f"--attention: expected causal or window:W, got '{args.attention}'")
    work = args.work or tempfile.mkdtemp(prefix="tempo-decode-peers-")
    print(f"| model | attention | T | B | system | ms/step | / {baseline(args)} | "
          "tokens = Tempo F32's |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.shapes.split(","):
        shape = SHAPES[name]
        folder = os.path.join(work, name)
        os.makedirs(folder, exist_ok=True)
        tensors = hf_tensors(name, seed=1)
        write_checkpoint(folder, shape, tensors)
        peers = args.peers.split(",")
        ggufs = {}  # llama.cpp's files, written only when it runs (7.4 GB for the 1B shape)
        for dtype in ("F32", "F16") if baseline(args) == "llama.cpp F32" else ():
            ggufs[dtype] = os.path.join(folder, f"model-{dtype}.gguf")
            write_gguf(ggufs[dtype], shape, tensors, dtype == "F16")
        for T in (int(t) for t in args.tokens.split(",")):
            for B in (int(b) for b in args.batches.split(",")):
                table(name, T, B, args, folder, ggufs, tensors, peers)


def baseline(args):
    """The system the ratios are to: llama.cpp F32 where it runs (causal attention), else PyTorch."""
    runs_llama = "llama.cpp" in args.peers.split(",") and args.attention == "causal"
    return "llama.cpp F32" if runs_llama else "PyTorch eager F32"


def table(name, T, B, args, folder, ggufs, tensors, peers):
    """One row per system: ms per decoding step of B tokens and the first sequence's tokens."""
    tempo_ms, tempo_tokens = run_tempo(args.tempo, folder, T, B, args)
    rows = [("Tempo F32", tempo_ms, tempo_tokens)]
    ms, toks = run_tempo(args.tempo, folder, T, B, args, "f16")  # matmul weights as float16
    rows.append(("Tempo F16", ms, toks))
    for dtype, path in ggufs.items():
        ms, toks = run_llama_cpp(path, T, B)
        rows.append((f"llama.cpp {dtype}", ms, toks))
    if "torch" in peers:
        window = int(args.attention.split(":")[1]) if args.attention != "causal" else 0
        ms, toks = run_torch(tensors, SHAPES[name], T, B, window)
        rows.append(("PyTorch eager F32", ms, toks))
    base = next((ms for system, ms, _ in rows if system == baseline(args)), float("nan"))
    for system, ms, toks in rows:
        same = sum(a == b for a, b in zip(toks, tempo_tokens))
        print(f"| {name} | {args.attention} | {T} | {B} | {system} | {ms:.2f} | {ms / base:.2f} | "
              f"{same}/{len(tempo_tokens)} |", flush=True)


if __name__ == "__main__":
    main()
