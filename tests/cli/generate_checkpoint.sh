# Sourced by run.sh (uses $tempo, expect_out, expect_error, failures): `tempo generate` with a
# Hugging Face checkpoint and a tokenizer.json.
ckpt="$(mktemp -d)"

# Random weights saved by --save-checkpoint decode to the same tokens when loaded back.
saved="$("$tempo" generate --tokens 8 --batch 2 --prompt-tokens 5,7 --seed 4 --save-checkpoint "$ckpt" | head -2)"
loaded="$("$tempo" generate --tokens 8 --batch 2 --prompt-tokens 5,7 --checkpoint "$ckpt" | head -2)"
if [[ ! -f "$ckpt/config.json" || ! -f "$ckpt/model.safetensors" || "$saved" != "sequence 0: 5 7 "* || "$saved" != "$loaded" ]]; then
  echo "FAIL: generate --save-checkpoint then --checkpoint: '$saved' vs '$loaded'"
  failures=$((failures + 1))
fi

# A checkpoint published in bfloat16 (config.json's torch_dtype) keeps its matmul weights in
# bfloat16 unless --weights-dtype says otherwise.
half="$(mktemp -d)"
sed 's/"torch_dtype": "float32"/"torch_dtype": "bfloat16"/' "$ckpt/config.json" >"$half/config.json"
ln -s "$ckpt/model.safetensors" "$half/model.safetensors"
bf16="$("$tempo" generate --tokens 8 --batch 2 --prompt-tokens 5,7 --checkpoint "$half")"
asked="$("$tempo" generate --tokens 8 --batch 2 --prompt-tokens 5,7 --checkpoint "$ckpt" --weights-dtype bf16)"
f32="$("$tempo" generate --tokens 8 --batch 2 --prompt-tokens 5,7 --checkpoint "$half" --weights-dtype f32 | tail -1)"
if [[ "$bf16" != *"bf16 matmul weights, f32 K/V cache)" || "$(head -2 <<<"$bf16")" != "$(head -2 <<<"$asked")" ||
  "$f32" != *"f32 matmul weights, f32 K/V cache)" ]]; then
  echo "FAIL: generate with a bfloat16 checkpoint: '$bf16' vs '$asked', '$f32'"
  failures=$((failures + 1))
fi
expect_error "--weights-dtype expects f32, f16 or bf16, got 'f8'" generate --weights-dtype f8
expect_error "--kv-dtype expects f32, f16 or bf16, got 'f8'" generate --kv-dtype f8
sed -i 's/"torch_dtype": "bfloat16"/"torch_dtype": "int8"/' "$half/config.json"
expect_error "torch_dtype 'int8' is not supported (float32, float16, bfloat16 or float64)" generate --checkpoint "$half"
rm -rf "$half"

# A byte-level tokenizer with the tiny model's 96 ids: the printable ASCII bytes (0..93), the
# space's symbol U+0120 (94) and <|begin_of_text|> (95), which its post-processor puts first.
vocab=""
for b in $(seq 33 126); do
  ch="$(printf "\\$(printf %03o "$b")")"
  [[ "$ch" == '"' || "$ch" == '\' ]] && ch="\\$ch"
  vocab+="\"$ch\":$((b - 33)),"
done
bos='{"SpecialToken":{"id":"<|begin_of_text|>","type_id":0}}'
template='{"type":"TemplateProcessing","single":['"$bos"',{"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<|begin_of_text|>":{"id":"<|begin_of_text|>","ids":[95],"tokens":["<|begin_of_text|>"]}}}'
model="{\"type\":\"BPE\",\"vocab\":{$vocab\"\\u0120\":94},\"merges\":[]}"
added='[{"id":95,"content":"<|begin_of_text|>","special":true}]'
printf '{"added_tokens":%s,"post_processor":%s,"model":%s}' "$added" "$template" "$model" >"$ckpt/tokenizer.json"
# Without a post-processor nothing is added; an id past the model's vocabulary is an error.
printf '{"added_tokens":%s,"model":%s}' "$added" "$model" >"$ckpt/plain.json"
printf '{"added_tokens":[{"id":96,"content":"<x>","special":true}],"model":%s}' "$model" >"$ckpt/big.json"
text="$("$tempo" generate --tokens 12 --prompt "Hi there" --checkpoint "$ckpt" | head -1)"
if [[ "$text" != "sequence 0: <|begin_of_text|>Hi there"* ]]; then
  echo "FAIL: generate --prompt with the checkpoint's tokenizer.json: '$text'"
  failures=$((failures + 1))
fi
ids="$("$tempo" generate --tokens 12 --prompt-tokens 95,39,72,94 --checkpoint "$ckpt" --tokenizer "$ckpt/tokenizer.json" | head -1)"
[[ "$ids" == "sequence 0: <|begin_of_text|>Hi "* ]] || { echo "FAIL: generate --tokenizer: '$ids'"; failures=$((failures + 1)); }

# tempo tokenize: one JSON array of ids per JSON string line, and back with --decode.
printf '"Hi there"\n"<|begin_of_text|>a b"\n' >"$ckpt/lines.jsonl"
expect_out $'[95,39,72,94,83,71,68,81,68]\n[95,95,64,94,65]' tokenize --tokenizer "$ckpt/tokenizer.json" --json-lines "$ckpt/lines.jsonl"
expect_out $'[39,72,94,83,71,68,81,68]' tokenize --tokenizer "$ckpt/plain.json" --json-lines <(echo '"Hi there"')
expect_out '"<|begin_of_text|>Hi"' tokenize --tokenizer "$ckpt/plain.json" --decode --json-lines <(echo '[95,39,72]')
expect_out '"Hi"' tokenize --tokenizer "$ckpt/plain.json" --decode --no-special --json-lines <(echo '[95,39,72]')
expect_error "line 2 is not a JSON string" tokenize --tokenizer "$ckpt/plain.json" --json-lines <(printf '"a"\n[1]\n')
expect_error "malformed" tokenize --tokenizer "$ckpt/plain.json" --json-lines <(echo 'Hi')
expect_error "is not a JSON array of token ids" tokenize --tokenizer "$ckpt/plain.json" --decode --json-lines <(echo '"a"')
expect_error "needs --json-lines" tokenize --tokenizer "$ckpt/plain.json"
expect_error "has 97 token ids but the model (--config tiny) a vocabulary of 96" generate --tokenizer "$ckpt/big.json" --prompt hi
text="$("$tempo" generate --tokens 12 --prompt "Hi there" --tokenizer "$ckpt/plain.json" | head -1)"
[[ "$text" == "sequence 0: Hi there"* ]] || { echo "FAIL: generate --prompt without a post-processor: '$text'"; failures=$((failures + 1)); }

printf '{"model": ' >"$ckpt/bad.json"
mkdir -p "$ckpt/empty"
cp "$ckpt/config.json" "$ckpt/empty/"
expect_error "--prompt needs a tokenizer" generate --prompt hi
expect_error "exclude each other" generate --prompt hi --prompt-tokens 1
expect_error "exclude each other" generate --checkpoint "$ckpt" --config tiny
expect_error "--prompt: the prompt (9 tokens) is longer than --tokens 4" generate --checkpoint "$ckpt" --prompt "Hi there" --tokens 4
expect_error "malformed tokenizer" generate --checkpoint "$ckpt" --tokenizer "$ckpt/bad.json"
expect_error "no such file" generate --tokenizer "$ckpt/none.json"
expect_error "no config.json" generate --checkpoint "$ckpt/none"
expect_error "neither model.safetensors nor" generate --checkpoint "$ckpt/empty"
# A checkpoint whose config.json asks for a layer the file does not hold: a missing tensor.
mkdir -p "$ckpt/deeper"
cp "$ckpt/model.safetensors" "$ckpt/deeper/"
sed 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' "$ckpt/config.json" >"$ckpt/deeper/config.json"
expect_error "no tensor 'model.layers.2.input_layernorm.weight' in model.safetensors" generate --checkpoint "$ckpt/deeper"
# A context of 10 positions (config.json's max_position_embeddings).
mkdir -p "$ckpt/short"
cp "$ckpt/model.safetensors" "$ckpt/short/"
sed 's/"max_position_embeddings": [0-9]*/"max_position_embeddings": 10/' "$ckpt/config.json" >"$ckpt/short/config.json"
expect_error "the prompt (3 tokens) and 9 generated tokens, 12 positions in all, exceed the model's context of 10" \
  generate --checkpoint "$ckpt/short" --prompt-tokens 1,2,3 --tokens 12
expect_error "the prompt (11 tokens) is longer than the model's context of 10" \
  generate --checkpoint "$ckpt/short" --prompt-tokens 1,2,3,4,5,6,7,8,9,10,11 --tokens 12
[[ "$("$tempo" generate --checkpoint "$ckpt/short" --prompt-tokens 1,2,3 --tokens 10 | head -1)" == "sequence 0: 1 2 3 "* ]] ||
  { echo "FAIL: generate within the checkpoint's context"; failures=$((failures + 1)); }
rm -rf "$ckpt"

# The batched prefill (the default) and the prompt fed token by token give the same tokens:
# greedy, top-k, an end-of-sequence token, each attention pattern, the prompt longer than the
# window, tiles.
for args in "--attention causal" "--attention window:3" "--attention sinks:2:3 --top-k 4" \
  "--attention window:4 --tile 2" "--eos 9 --top-k 1" "--tokens 5"; do
  # shellcheck disable=SC2086
  prefill="$("$tempo" generate --tokens 14 --batch 2 --prompt-tokens 5,7,9,11,3 --seed 2 $args | head -2)"
  # shellcheck disable=SC2086
  stepwise="$("$tempo" generate --tokens 14 --batch 2 --prompt-tokens 5,7,9,11,3 --seed 2 $args --token-by-token-prompt | head -2)"
  if [[ "$prefill" != "sequence 0: 5 7 9 11 3"* || "$prefill" != "$stepwise" ]]; then
    echo "FAIL: generate $args: prefill '$prefill' vs token by token '$stepwise'"
    failures=$((failures + 1))
  fi
done
# A prompt as long as --tokens: nothing is generated, in either mode.
one="$("$tempo" generate --prompt-tokens 5,7,9 --tokens 3 | head -1)"
[[ "$one" == "sequence 0: 5 7 9" ]] || { echo "FAIL: generate with nothing to generate: '$one'"; failures=$((failures + 1)); }
timing="$("$tempo" generate --prompt-tokens 5,7,9 --tokens 8 | tail -1)"
[[ "$timing" == "compile "*"prefill of 3 tokens "*" ms between tokens (2 layers, causal, f32 matmul weights, f32 K/V cache)" ]] ||
  { echo "FAIL: generate's timing line: '$timing'"; failures=$((failures + 1)); }
timing="$("$tempo" generate --prompt-tokens 5,7,9 --tokens 8 --token-by-token-prompt | tail -1)"
[[ "$timing" == "compile "*" s, "*" ms between tokens (2 layers, causal, f32 matmul weights, f32 K/V cache)" && "$timing" != *prefill* ]] ||
  { echo "FAIL: generate --token-by-token-prompt's timing line: '$timing'"; failures=$((failures + 1)); }
expect_error "--top-k expects a positive integer" generate --top-k 0
expect_error "top_k must be in [0, 96]" generate --top-k 97
expect_error "window with its sinks is longer than the sequence (10 positions against 8" generate --attention sinks:4:6 --tokens 8

# --memory-timeline: a CSV row per executed statement with the op's name (the region holding the
# K/V cache is named after it), and its plot.
timeline="$(mktemp -d)"
out="$("$tempo" generate --tokens 6 --prompt-tokens 5,7 --attention window:2 --memory-timeline "$timeline/m.csv" | tail -1)"
if [[ "$out" != "memory timeline: $timeline/m.csv (peak "*" bytes of tracked device memory)" ||
  "$(head -1 "$timeline/m.csv")" != "step,statement,op,device_bytes,host_bytes" ||
  -z "$(grep ',exec,[a-z_+]*k_cache' "$timeline/m.csv")" || ! -s "$timeline/m.svg" ]]; then
  echo "FAIL: generate --memory-timeline: '$out'"
  failures=$((failures + 1))
fi
rm -rf "$timeline"
