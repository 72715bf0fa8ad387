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

# A byte-level tokenizer with the tiny model's 96 ids: the printable ASCII bytes (0..93), the
# space's symbol U+0120 (94) and <|begin_of_text|> (95).
vocab=""
for b in $(seq 33 126); do
  ch="$(printf "\\$(printf %03o "$b")")"
  [[ "$ch" == '"' || "$ch" == '\' ]] && ch="\\$ch"
  vocab+="\"$ch\":$((b - 33)),"
done
printf '{"added_tokens":[{"id":95,"content":"<|begin_of_text|>","special":true}],"model":{"type":"BPE","vocab":{%s"\\u0120":94},"merges":[]}}' \
  "$vocab" >"$ckpt/tokenizer.json"
text="$("$tempo" generate --tokens 12 --prompt "Hi there" --checkpoint "$ckpt" | head -1)"
if [[ "$text" != "sequence 0: <|begin_of_text|>Hi there"* ]]; then
  echo "FAIL: generate --prompt with the checkpoint's tokenizer.json: '$text'"
  failures=$((failures + 1))
fi
ids="$("$tempo" generate --tokens 12 --prompt-tokens 95,39,72,94 --checkpoint "$ckpt" --tokenizer "$ckpt/tokenizer.json" | head -1)"
[[ "$ids" == "sequence 0: <|begin_of_text|>Hi "* ]] || { echo "FAIL: generate --tokenizer: '$ids'"; failures=$((failures + 1)); }

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
rm -rf "$ckpt"
