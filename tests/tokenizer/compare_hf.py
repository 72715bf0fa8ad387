#!/usr/bin/env python3
"""`tempo tokenize` against Hugging Face's `tokenizers` on random text over all Unicode categories.

Trains two small byte-level BPE tokenizer.json files with `tokenizers` itself (the real Llama-3
file is not downloadable here): one with Llama-3's exact pre-tokenizer (Split on its regex, then
ByteLevel without regex) and a post-processor template that adds a BOS token, one GPT-2 style
(ByteLevel with its regex, no post-processor); both with added special tokens. Then 3,000 random
strings are encoded by both, and Tempo's ids must equal HF's for every string, and Tempo's
decoding of them must equal HF's and give the string back.

usage: compare_hf.py TEMPO [--count N] [--seed S] [--keep DIR]
Exit status 77 (skipped) when `tokenizers` is not importable.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import unicodedata

try:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
except ImportError:
    print("SKIP: the `tokenizers` package is not importable (scripts/setup.sh installs it)")
    sys.exit(77)

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>"]
ADDED = ["<tool>"]  # an added token that is not special

# Letters of many scripts: (first, last) code points.
SCRIPTS = [(0x61, 0x7A), (0x41, 0x5A), (0xE0, 0xFF), (0x3B1, 0x3C9), (0x430, 0x44F),
           (0x5D0, 0x5EA), (0x627, 0x64A), (0x905, 0x939), (0xE01, 0xE2E), (0x3041, 0x3096),
           (0x4E00, 0x4FFF), (0xAC00, 0xAD00), (0x10D0, 0x10F0), (0x1200, 0x1250)]
DIGITS = "0123456789" + "०१२३४५६७८९" + "٠١٢٣٤٥٦٧٨٩" + "²³¹¼½⅓ⅷ①⑳" + "０１２３"
PUNCT = "！？。，、…—–«»“”‘’¿¡·•§¶†‡‰′″‹›「」『』【】〈〉!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'"
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\n\n", "\r", "\u00a0", "\u3000", "\u2028", "\u2029",
          "\x85", "\x0b", "\x0c", "\u2003", "\u200b", "\u180e", "\ufeff", " \n ", "   "]
CONTRACTIONS = ["'ll", "'S", "'s", "'t", "'RE", "'re", "'Ve", "'m", "'D", "'d", "'LL", "'x"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "☕", "🚀", "∑", "∞", "€", "¥", "©", "™", "°"]
MARKS = ["\u0301", "\u0308", "\u093f", "\u0e31", "\u20dd", "\u302a"]


def category_pools():
    pools = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        cat = unicodedata.category(chr(cp))
        if cat in ("Cn", "Cs"):
            continue
        pools.setdefault(cat, []).append(chr(cp))
    return pools


def word(rng):
    lo, hi = rng.choice(SCRIPTS)
    return "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 8)))


def piece(rng, pools, cats, specials):
    r = rng.random()
    if r < 0.30:
        return word(rng) + (rng.choice(MARKS) if rng.random() < 0.1 else "")
    if r < 0.42:
        return "".join(rng.choice(DIGITS) for _ in range(rng.randint(1, 6)))
    if r < 0.52:
        return rng.choice(PUNCT) * rng.randint(1, 2)
    if r < 0.66:
        return rng.choice(SPACES)
    if r < 0.72:
        return rng.choice(CONTRACTIONS)
    if r < 0.78:
        return rng.choice(EMOJI)
    if r < 0.81:
        return rng.choice(specials)
    return rng.choice(pools[rng.choice(cats)])  # any character of any category


def random_strings(rng, n, specials):
    pools = category_pools()
    cats = sorted(pools)
    return ["".join(piece(rng, pools, cats, specials) for _ in range(rng.randint(1, 24)))
            for _ in range(n)]


def corpus(rng):
    lines = []
    for _ in range(3000):
        parts = []
        for _ in range(rng.randint(4, 16)):
            r = rng.random()
            parts.append(word(rng) if r < 0.6 else
                         "".join(rng.choice(DIGITS) for _ in range(rng.randint(1, 4))) if r < 0.75
                         else rng.choice(PUNCT) if r < 0.85 else rng.choice(CONTRACTIONS))
        lines.append(" ".join(parts))
    return lines


def train(rng, llama3):
    tok = Tokenizer(models.BPE())
    if llama3:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=256 + 3000, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=SPECIALS[:2])
    tok.train_from_iterator(corpus(rng), trainer)
    tok.add_special_tokens(SPECIALS[2:])
    tok.add_tokens(ADDED)
    if llama3:
        bos = tok.token_to_id(SPECIALS[0])
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{SPECIALS[0]} $A",
                                          pair=f"{SPECIALS[0]} $A {SPECIALS[0]} $B:1",
                                          special_tokens=[(SPECIALS[0], bos)])])
    return tok


def tempo_lines(tempo, tokenizer, lines, *extra):
    cmd = [tempo, "tokenize", "--tokenizer", tokenizer, "--json-lines", "-", *extra]
    proc = subprocess.run(cmd, input="".join(line + "\n" for line in lines).encode(),
                          capture_output=True, timeout=300)
    if proc.returncode != 0:
        sys.exit(f"FAIL: tempo tokenize: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode().split("\n")[:-1]  # not splitlines: \u2028 is text


def compare(tempo, name, tok, path, strings, round_trip=True):
    """Tempo's ids for the strings against HF's; with round_trip also the decodings: of HF's ids
    (as HF decodes them) and of Tempo's ids without the post-processor's (the strings back)."""
    hf = [e.ids for e in tok.encode_batch(strings)]
    lines = [json.dumps(s, ensure_ascii=False) for s in strings]
    ours = [json.loads(x) for x in tempo_lines(tempo, path, lines)]
    bad = [k for k in range(len(strings)) if k >= len(ours) or ours[k] != hf[k]]
    for k in bad[:8]:
        print(f"  {name}: {strings[k]!r}\n    hf    {hf[k]}\n"
              f"    tempo {ours[k] if k < len(ours) else None}")
    bad_decode = []
    if round_trip:
        n = len(strings)
        plain = tempo_lines(tempo, path, lines, "--no-special")
        decoded = [json.loads(x) for x in tempo_lines(tempo, path, [json.dumps(i) for i in hf] +
                                                      plain, "--decode")]
        hf_decoded = tok.decode_batch(hf, skip_special_tokens=False)
        bad_decode = [k for k in range(n)
                      if decoded[k] != hf_decoded[k] or decoded[n + k] != strings[k]]
        for k in bad_decode[:4]:
            print(f"  {name} decode: {strings[k]!r}: tempo {decoded[k]!r} and "
                  f"{decoded[n + k]!r}, hf {hf_decoded[k]!r}")
    print(f"{name}: {len(bad)} of {len(strings)} strings encode differently"
          + (f", {len(bad_decode)} decode differently" if round_trip else ""))
    return len(bad) + len(bad_decode)


def variants(path):
    """The Llama-3 file with its Split's other behaviours, inverted, on other and literal patterns,
    and with ByteLevel's prefix space and regex: (name, tokenizer.json text). Few, since each
    costs a start of `tempo`."""
    base = json.load(open(path, encoding="utf-8"))
    other = {"Regex": r"\s+|\d"}
    out = []
    for behavior, invert, pattern in (("Removed", False, {"Regex": LLAMA3}),
                                      ("MergedWithPrevious", False, other),
                                      ("MergedWithNext", True, {"Regex": LLAMA3}),
                                      ("Contiguous", False, other),
                                      ("Contiguous", True, {"Regex": LLAMA3}),
                                      ("Isolated", False, {"String": "ab"})):
        j = json.loads(json.dumps(base))
        split, byte_level = j["pre_tokenizer"]["pretokenizers"]
        split.update(behavior=behavior, invert=invert, pattern=pattern)
        literal = "String" in pattern
        byte_level.update(add_prefix_space=literal or invert, use_regex=literal)
        out.append((f"{behavior}{' inverted' if invert else ''} {pattern}", json.dumps(j)))
    return out


def compare_variants(tempo, path, strings, out):
    bad = 0
    for k, (name, text) in enumerate(variants(path)):
        tok = Tokenizer.from_str(text)
        vpath = os.path.join(out, f"variant{k}.json")
        with open(vpath, "w", encoding="utf-8") as f:
            f.write(text)
        hf = [e.ids for e in tok.encode_batch(strings)]
        ours = [json.loads(x) for x in tempo_lines(tempo, vpath, [json.dumps(s, ensure_ascii=False)
                                                                   for s in strings])]
        diff = [i for i in range(len(strings)) if ours[i] != hf[i]]
        for i in diff[:2]:
            print(f"  {name}: {strings[i]!r}\n    hf    {hf[i]}\n    tempo {ours[i]}")
        bad += len(diff)
    print(f"pre-tokenizer variants: {bad} of {len(variants(path)) * len(strings)} encodings differ")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tempo")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="write the tokenizer.json files and strings here")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = a.keep or tmp
        os.makedirs(out, exist_ok=True)
        strings = random_strings(rng, a.count, SPECIALS + ADDED)
        with open(os.path.join(out, "strings.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(s, ensure_ascii=False) + "\n" for s in strings)
        for name, llama3 in (("llama3", True), ("gpt2", False)):
            tok = train(rng, llama3)
            path = os.path.join(out, f"{name}.json")
            tok.save(path)
            failures += compare(a.tempo, name, tok, path, strings)
            if llama3:
                failures += compare_variants(a.tempo, path, strings[:500], out)
            else:  # post-processors around the ids: Roberta's, then a template's suffix
                eot = tok.token_to_id(SPECIALS[2])
                tok.post_processor = processors.Sequence([
                    processors.RobertaProcessing(sep=(SPECIALS[1], tok.token_to_id(SPECIALS[1])),
                                                 cls=(SPECIALS[0], tok.token_to_id(SPECIALS[0]))),
                    processors.TemplateProcessing(single=f"$A {SPECIALS[2]}",
                                                  special_tokens=[(SPECIALS[2], eot)])])
                path = os.path.join(out, "gpt2_post.json")
                tok.save(path)
                failures += compare(a.tempo, "gpt2 post-processors", tok, path, strings[:300],
                                    round_trip=False)
    if failures:
        sys.exit(f"FAIL: {failures} differences from Hugging Face tokenizers")
    print("ok")


if __name__ == "__main__":
    main()
