#!/usr/bin/env python3
# Random-weight GGUF files of real model shapes, typed as llama.cpp's Q4_K_M would type them, for speed
# measurements only (llama-bench and rdrr read the same file). A measurement aid, not part of the product:
# standard library only (runs on the 2-core box and the device machine, where neither numpy nor gguf-py is
# needed).
#
#   bench/random_gguf.py --shape qwen3-30b-a3b OUT.gguf [--layers N]
#   shapes: llama-3.2-1b, llama-3.1-8b, qwen3-30b-a3b, mixtral-8x7b, tiny-llama, tiny-qwen3-moe, tiny-mixtral
#
# Tensor types (llama.cpp src/llama-quant.cpp, LLAMA_FTYPE_MOSTLY_Q4_K_M): Q4_K by default; output (or tied
# token_embd) Q6_K; attn_v and ffn_down(_exps) Q6_K on use_more_bits layers (i < n/8, i >= 7n/8, (i - n/8) % 3
# == 2); with exactly 8 experts attn_k and attn_v Q8_0 and attn_output Q5_K; norms and ffn_gate_inp F32.
# Block bytes are random (one 64 MiB pool, deterministic) with every block scale set to a small positive f16
# (about 1e-3), so values are finite and of a weight's magnitude. No rope scaling (no rope_freqs tensor).
# Tokenizer: byte-level BPE ("gpt2", pre "qwen2"): GPT-2's 256 byte symbols, then "t<i>" names, one merge,
# BOS / EOS the last two ids (control).
import argparse
import random
import struct
import sys

SHAPES = {
    # arch, hidden, layers, heads, kv heads, head_dim, ffn (dense or per expert), experts, used, vocab, tied
    "llama-3.2-1b": ("llama", 2048, 16, 32, 8, 64, 8192, 0, 0, 128256, True),
    "llama-3.1-8b": ("llama", 4096, 32, 32, 8, 128, 14336, 0, 0, 128256, False),
    "qwen3-30b-a3b": ("qwen3moe", 2048, 48, 32, 4, 128, 768, 128, 8, 151936, False),
    "mixtral-8x7b": ("llama", 4096, 32, 32, 8, 128, 14336, 8, 2, 32000, False),
    "tiny-llama": ("llama", 256, 2, 4, 2, 64, 512, 0, 0, 1024, False),
    "tiny-qwen3-moe": ("qwen3moe", 256, 2, 4, 2, 64, 256, 8, 2, 1024, False),
    "tiny-mixtral": ("llama", 256, 2, 4, 2, 64, 512, 8, 2, 1024, False),
}

F32, F16, Q8_0, Q4_K, Q5_K, Q6_K = 0, 1, 8, 12, 13, 14
# type -> (values per block, bytes per block, byte offsets of the high bytes of the block's f16 scales)
BLOCK = {F32: (1, 4, ()), Q8_0: (32, 34, (1,)), Q4_K: (256, 144, (1, 3)), Q5_K: (256, 176, (1, 3)),
         Q6_K: (256, 210, (209,))}
SCALE_HIGH_BYTE = 0x14  # f16 exponent 5: 2^-10 .. 2^-9
POOL = random.Random(20261128).randbytes(64 << 20)
CHUNK_BYTES = 32 << 20


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensors(shape, n_layers):
    arch, d, _, nh, nkv, hd, ff, ne, _, vocab, tied = shape
    out = [("token_embd.weight", [d, vocab], Q6_K if tied else Q4_K), ("output_norm.weight", [d], F32)]
    if not tied:
        out.append(("output.weight", [d, vocab], Q6_K))
    for i in range(n_layers):
        more = use_more_bits(i, n_layers)
        p = f"blk.{i}."
        out += [(p + "attn_norm.weight", [d], F32), (p + "ffn_norm.weight", [d], F32),
                (p + "attn_q.weight", [d, nh * hd], Q4_K),
                (p + "attn_k.weight", [d, nkv * hd], Q8_0 if ne == 8 else Q4_K),
                (p + "attn_v.weight", [d, nkv * hd], Q8_0 if ne == 8 else (Q6_K if more else Q4_K)),
                (p + "attn_output.weight", [nh * hd, d], Q5_K if ne == 8 else Q4_K)]
        if arch == "qwen3moe":
            out += [(p + "attn_q_norm.weight", [hd], F32), (p + "attn_k_norm.weight", [hd], F32)]
        down = Q6_K if more else Q4_K
        if ne:
            out += [(p + "ffn_gate_inp.weight", [d, ne], F32), (p + "ffn_gate_exps.weight", [d, ff, ne], Q4_K),
                    (p + "ffn_up_exps.weight", [d, ff, ne], Q4_K), (p + "ffn_down_exps.weight", [ff, d, ne], down)]
        else:
            out += [(p + "ffn_gate.weight", [d, ff], Q4_K), (p + "ffn_up.weight", [d, ff], Q4_K),
                    (p + "ffn_down.weight", [ff, d], down)]
    return out


def nbytes(ne, t):
    n = 1
    for x in ne:
        n *= x
    per, size, _ = BLOCK[t]
    assert n % per == 0, (ne, t)
    return n // per * size


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    out = gstr(key) + struct.pack("<I", vtype)
    if vtype == 4:
        return out + struct.pack("<I", value)
    if vtype == 6:
        return out + struct.pack("<f", value)
    if vtype == 8:
        return out + gstr(value)
    elem, items = value  # array
    out += struct.pack("<IQ", elem, len(items))
    if elem == 8:
        return out + b"".join(gstr(x) for x in items)
    return out + b"".join(struct.pack("<i", x) for x in items)


def byte_symbols():  # GPT-2's bytes_to_unicode
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    sym, extra = {}, 0
    for b in range(256):
        if b in keep:
            sym[b] = chr(b)
        else:
            sym[b] = chr(256 + extra)
            extra += 1
    return [sym[b] for b in range(256)]


def metadata(name, shape, n_layers):
    arch, d, _, nh, nkv, hd, ff, ne, used, vocab, _ = shape
    toks = byte_symbols() + ["\u0120t"] + [f"t{i}" for i in range(257, vocab - 2)] + ["<|bos|>", "<|eos|>"]
    types = [1] * (vocab - 2) + [3, 3]
    a = arch + "."
    kvs = [kv("general.architecture", 8, arch), kv("general.name", 8, "random " + name),
           kv("general.file_type", 4, 15), kv("general.alignment", 4, 32),
           kv(a + "context_length", 4, 32768), kv(a + "embedding_length", 4, d), kv(a + "block_count", 4, n_layers),
           kv(a + "attention.head_count", 4, nh), kv(a + "attention.head_count_kv", 4, nkv),
           kv(a + "attention.key_length", 4, hd), kv(a + "attention.value_length", 4, hd),
           kv(a + "rope.dimension_count", 4, hd), kv(a + "rope.freq_base", 6, 1e6 if ne else 5e5),
           kv(a + "attention.layer_norm_rms_epsilon", 6, 1e-6 if arch == "qwen3moe" else 1e-5),
           kv(a + "vocab_size", 4, vocab)]
    if ne:
        kvs += [kv(a + "expert_count", 4, ne), kv(a + "expert_used_count", 4, used)]
    if arch == "qwen3moe":
        kvs += [kv(a + "expert_feed_forward_length", 4, ff), kv(a + "feed_forward_length", 4, 6144)]
    else:
        kvs.append(kv(a + "feed_forward_length", 4, ff))
    kvs += [kv("tokenizer.ggml.model", 8, "gpt2"), kv("tokenizer.ggml.pre", 8, "qwen2"),
            kv("tokenizer.ggml.tokens", 9, (8, toks)), kv("tokenizer.ggml.token_type", 9, (5, types)),
            kv("tokenizer.ggml.merges", 9, (8, ["\u0120 t"])),
            kv("tokenizer.ggml.bos_token_id", 4, vocab - 2), kv("tokenizer.ggml.eos_token_id", 4, vocab - 1)]
    return kvs


def write_data(f, name, ne, t, pool_pos):
    total = nbytes(ne, t)
    if t == F32:
        if "ffn_gate_inp" in name:  # router: small random values
            r = random.Random(name)
            vals = [r.uniform(-0.05, 0.05) for _ in range(total // 4)]
        else:  # norms
            vals = [1.0] * (total // 4)
        f.write(struct.pack(f"<{len(vals)}f", *vals))
        return pool_pos
    _, size, highs = BLOCK[t]
    chunk = CHUNK_BYTES // size * size
    done = 0
    while done < total:
        n = min(chunk, total - done)
        start = pool_pos % (len(POOL) - n + 1)
        buf = bytearray(POOL[start:start + n])
        for h in highs:
            buf[h::size] = bytes([SCALE_HIGH_BYTE]) * (n // size)
        f.write(buf)
        done += n
        pool_pos += 7919 * 144 + n
    return pool_pos


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else None)
    ap.add_argument("--shape", required=True, choices=sorted(SHAPES))
    ap.add_argument("--layers", type=int, help="override the layer count")
    ap.add_argument("out")
    args = ap.parse_args()
    shape = SHAPES[args.shape]
    n_layers = args.layers or shape[2]
    ts = tensors(shape, n_layers)
    kvs = metadata(args.shape, shape, n_layers)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(ts), len(kvs)) + b"".join(kvs)
    off = 0
    for name, ne, t in ts:
        head += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", x) for x in ne)
        head += struct.pack("<IQ", t, off)
        off = (off + nbytes(ne, t) + 31) // 32 * 32
    head += b"\0" * (-len(head) % 32)
    pos = 0
    with open(args.out, "wb") as f:
        f.write(head)
        for name, ne, t in ts:
            pos = write_data(f, name, ne, t, pos)
            f.write(b"\0" * (-f.tell() % 32))
    print(f"{args.out}: {args.shape}, {n_layers} layers, {len(ts)} tensors, {off + len(head)} bytes")


if __name__ == "__main__":
    sys.exit(main())
